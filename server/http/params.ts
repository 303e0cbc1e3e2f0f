import { ApiError } from '../core/errors.js';

/**
 * Request parameters read without regard to case: the spec's reference tables and its sample
 * requests disagree (`Id` and `id`, `createUser` and `CreateUser`), and clients follow either.
 * When several sources are given, the first that has a name wins; a repeated name keeps its
 * first value.
 */
export class ParamBag {
  private readonly values = new Map<string, string>();

  constructor(...sources: Array<unknown>) {
    for (const source of sources) {
      if (!source || typeof source !== 'object') continue;
      for (const [key, raw] of Object.entries(source as Record<string, unknown>)) {
        const k = key.toLowerCase();
        if (this.values.has(k)) continue;
        const v = Array.isArray(raw) ? raw[0] : raw;
        if (typeof v === 'string') this.values.set(k, v);
      }
    }
  }

  /** The value, or undefined when absent. */
  get(name: string): string | undefined {
    return this.values.get(name.toLowerCase());
  }

  has(name: string): boolean {
    const v = this.values.get(name.toLowerCase());
    return v !== undefined && v.trim() !== '';
  }
}

/**
 * An admin API query parameter given at most once: undefined when absent or empty. Express
 * parses a repeated name (`?a=1&a=2`) into an array, which is refused rather than guessed at.
 */
export function stringParam(v: unknown, name: string): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw new ApiError('INVALID_PARAMETER', `${name} must be given once`);
  return v;
}

/**
 * A paging query parameter (offset, limit): `fallback` when absent, else a whole number from `min`
 * to `max`, refused as INVALID_PAGING otherwise.
 */
export function intParam(v: unknown, name: string, fallback: number, min: number, max: number): number {
  const s = stringParam(v, name);
  if (s === undefined) return fallback;
  // Nine digits at most: more cannot be in range, and Number() of a long run loses precision.
  const n = /^\d{1,9}$/.test(s) ? Number(s) : NaN;
  if (!(n >= min && n <= max)) throw new ApiError('INVALID_PAGING', `${name} must be a whole number from ${min} to ${max}`);
  return n;
}

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

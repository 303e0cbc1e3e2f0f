/**
 * The one way a test waits for a fact: poll it until it holds, and fail naming what was awaited and
 * what was last seen. A fixed sleep stands in for a fact only when time itself is the subject.
 */
import type { VopServer } from '../../server/app.js';
import { SpecClient } from './client.js';

/** How long to wait and how often to look. */
export interface WaitOptions {
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
  /** Look again after this long (default 20 ms). */
  pollMs?: number;
}

/** What a check returns when the fact does not hold yet, with what it saw (for the failure message). */
export class NotYet {
  constructor(readonly seen: unknown) {}
}

/** Says "not yet" and keeps what was seen, to be named if the wait times out. */
export function notYet(seen: unknown): NotYet {
  return new NotYet(seen);
}

/**
 * A check for waitUntil made of assertions: it holds once `assertions` pass; until then the error
 * they threw is what was seen (a change that reaches other nodes by NOTIFY, say).
 */
export function passing(assertions: () => Promise<void> | void): () => Promise<true | NotYet> {
  return async () => {
    try {
      await assertions();
      return true;
    } catch (err) {
      return notYet(err);
    }
  };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Polls `check` until it returns a value other than undefined (or a `notYet(seen)`), and resolves
 * with that value. After `timeoutMs` it rejects with an error naming `what` and the last value seen.
 * A check that throws ends the wait with its error.
 */
export async function waitUntil<T>(what: string, check: () => Promise<T | undefined | NotYet> | T | undefined | NotYet, o: WaitOptions = {}): Promise<T> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && !(v instanceof NotYet)) return v;
    if (Date.now() > until) {
      const seen = v instanceof NotYet ? `; last seen: ${describe(v.seen)}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}`);
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 20));
  }
}

/** A video's status as one read of it sees it. */
export interface StatusReading {
  status: number;
  /** The ladder's state; 'pending' while renditions beyond the first are still to come. */
  ladder?: string;
  statusReason?: string | null;
}

/**
 * Where a video's status is read: the server's store, the spec API as an application sees it, or
 * any function (a node's database in a cluster test).
 */
export type StatusSource = VopServer | SpecClient | ((videoId: string) => Promise<StatusReading | undefined>);

export interface StatusWaitOptions extends WaitOptions {
  /** Status 1 counts at once, without waiting for the rest of the ladder (default false). */
  firstRendition?: boolean;
}

function statusReader(source: StatusSource): (videoId: string) => Promise<StatusReading | undefined> {
  if (typeof source === 'function') return source;
  if (source instanceof SpecClient) {
    return async (videoId) => {
      const r = await source.get('/Api/Video/Get', { Id: videoId });
      const status: unknown = r.body?.VideoModel?.Status;
      return typeof status === 'number' ? { status } : undefined;
    };
  }
  return (videoId) => source.stores.videos.get(videoId);
}

/**
 * Resolves with the video's status once it is one of `statuses`. Status 1 counts once the rest of
 * the ladder has landed too (or gave up), unless `firstRendition`: most tests look at the finished
 * video; the ones about the first rendition ask for it. A source that does not tell the ladder
 * (the spec API) counts 1 at once. The spec API is polled every 200 ms unless told otherwise.
 */
export async function waitForStatus(source: StatusSource, videoId: string, statuses: number[], o: StatusWaitOptions = {}): Promise<number> {
  const read = statusReader(source);
  const pollMs = o.pollMs ?? (source instanceof SpecClient ? 200 : 20);
  return waitUntil(`video ${videoId} in status ${statuses.join(' or ')}`, async () => {
    const v = await read(videoId);
    if (v && statuses.includes(v.status) && (v.status !== 1 || o.firstRendition || v.ladder !== 'pending')) return v.status;
    return notYet(v ? { status: v.status, ladder: v.ladder, reason: v.statusReason } : 'no such video');
  }, { timeoutMs: o.timeoutMs, pollMs });
}

/**
 * Time is the subject: the limits count in fixed clock minutes (windowStart), so calls that must
 * fall in one window start at least `ms` before the minute turns, waiting for the next one if
 * need be. Calls that straddle the turn start counting again midway.
 */
export async function clearOfMinuteTurn(ms: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((r) => setTimeout(r, left + 50));
}

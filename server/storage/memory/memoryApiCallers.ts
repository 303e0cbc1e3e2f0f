import { API_CALLERS_PER_APP, type ApiCallerStore } from '../types.js';

/** One caller as kept. */
interface Caller {
  address: string;
  lastSeen: number;
  allowed: boolean;
}

/**
 * {@link ApiCallerStore} in this process's memory: the embedded mode's, where the one process
 * sees every API call. In memory, not in the database: the list is a suggestion the console makes
 * from the latest calls, which the next calls make again after a restart; it would cost a write
 * per call. Every call is recorded (no write to spare here), so the list is exact to the call.
 * Keys are AppIds that passed the token check, so the map is bounded by the applications there are.
 */
export class MemoryApiCallerStore implements ApiCallerStore {
  /** Per AppId, newest first, at most {@link API_CALLERS_PER_APP}. */
  private readonly byApp = new Map<string, Caller[]>();

  constructor(private readonly perApp = API_CALLERS_PER_APP) {}

  async record(appId: string, address: string, allowed: boolean, at: number): Promise<void> {
    const list = this.byApp.get(appId) ?? [];
    const i = list.findIndex((c) => c.address === address);
    // The later call wins, as PostgreSQL's upsert has it.
    if (i >= 0 && list[i]!.lastSeen > at) return;
    if (i >= 0) list.splice(i, 1);
    // Before every caller seen at the same time or earlier: of two calls in one millisecond, the
    // one recorded last shows first.
    const place = list.findIndex((c) => c.lastSeen <= at);
    list.splice(place < 0 ? list.length : place, 0, { address, lastSeen: at, allowed });
    if (list.length > this.perApp) list.length = this.perApp;
    this.byApp.set(appId, list);
  }

  async recent(appId: string): Promise<Caller[]> {
    return (this.byApp.get(appId) ?? []).map((c) => ({ ...c }));
  }
}

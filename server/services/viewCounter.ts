/**
 * Views and watch time (docs/watch.md, "Views and watch time"): players report what a viewer
 * watched (`POST /embed/<id>/views`), and this counts it per video and day.
 *
 * The rules, decided:
 * - **A viewer** is the client's address and user agent, hashed with a salt that is random, kept
 *   in memory only and new every day: neither the address nor the hash is stored, no cookie is
 *   set, and a viewer is not recognised from one day to the next.
 * - **A view** counts once a viewer has watched {@link VIEW_AFTER_SECONDS} of a video (or half of
 *   a shorter one), once per viewer, video and day: a reload, a second tab or a replay adds none.
 * - **Watch time** is what players report, never more than the time that passed since the
 *   viewer's first report of the day (plus a little): a player cannot report more than it could
 *   have played.
 * - **Bounded per caller**: {@link BEACONS_PER_MINUTE} reports a minute per address (429 past it),
 *   and {@link MAX_VIEWERS} viewers kept in memory (the oldest forgotten first).
 *
 * Counts are added up in memory and written every {@link FLUSH_MS} (one write for all of them, an
 * increment, so every node of a cluster adds into the same rows), and on close. A process killed
 * loses what it counted since its last write: a few seconds.
 */
import crypto from 'node:crypto';
import { ApiError } from '../core/errors.js';
import type { VopEventBus } from '../core/events.js';
import { VIDEO_ID_RE, VideoStatus } from '../core/videoStatus.js';
import type { MediaTokens } from '../keys/mediaTokens.js';
import type { AppStore, VideoStore, ViewCount, ViewCountStore } from '../storage/types.js';

/** Seconds a viewer watches before a view counts (PeerTube counts after a few seconds too). */
export const VIEW_AFTER_SECONDS = 5;
/** Reports a minute from one address: a player reports every 10 s, so some 50 viewers behind one address. */
export const BEACONS_PER_MINUTE = 600;
export const MAX_VIEWERS = 100_000;
export const FLUSH_MS = 2_000;
/** Watch time a report may add beyond the time that passed (a player's clock and the network's delay). */
const SLACK_SECONDS = 15;
/** Addresses whose report rates are kept. */
const MAX_ADDRESSES = 10_000;

export interface ViewReport {
  /** The player's session: one page (a reload keeps it), 8 to 64 letters, digits, `-` or `_`. */
  session: string;
  /** Seconds this session has watched so far (not since its last report). */
  watched: number;
}

export interface ViewCounterDeps {
  store: ViewCountStore;
  videos: Pick<VideoStore, 'get'>;
  apps: Pick<AppStore, 'get'>;
  tokens: MediaTokens;
  events: VopEventBus;
  log: (line: string) => void;
  now?: () => number;
  flushMs?: number;
}

interface Viewer {
  day: string;
  firstAt: number;
  watched: number;
  counted: boolean;
  /** Each session's last report. */
  sessions: Map<string, number>;
}

export class ViewCounter {
  private salt = { day: '', value: Buffer.alloc(0) };
  private readonly viewers = new Map<string, Viewer>();
  private readonly rates = new Map<string, { since: number; n: number }>();
  private pending = new Map<string, ViewCount>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  private readonly now: () => number;

  constructor(private readonly deps: ViewCounterDeps) {
    this.now = deps.now ?? Date.now;
    this.timer = setInterval(() => void this.flush(), deps.flushMs ?? FLUSH_MS);
    this.timer.unref();
  }

  /**
   * Takes one report of `videoId` from the client at `address` with `userAgent`. `token`: the
   * page's media token, which a signed application's video needs (as its page does).
   */
  async report(videoId: string, report: ViewReport, client: { address: string; userAgent: string }, token: string | undefined): Promise<void> {
    const now = this.now();
    this.limit(client.address, now);
    if (!VIDEO_ID_RE.test(videoId)) throw new ApiError('NOT_FOUND');
    if (!/^[A-Za-z0-9_-]{8,64}$/.test(report.session)) throw new ApiError('MALFORMED_REQUEST', 's must be the player session: 8 to 64 letters, digits, - or _');
    if (!(Number.isFinite(report.watched) && report.watched >= 0 && report.watched <= 86_400)) throw new ApiError('MALFORMED_REQUEST', 'w must be the seconds watched, 0 to 86400');
    const video = await this.deps.videos.get(videoId);
    if (!video || video.status !== VideoStatus.Normal) throw new ApiError('NOT_FOUND');
    const app = await this.deps.apps.get(video.appId);
    if (!app) throw new ApiError('NOT_FOUND');
    if (app.mediaAccess === 'signed') {
      const refused = token === undefined ? 'missing' : await this.deps.tokens.check(token, videoId, 'media', now);
      if (refused) throw new ApiError('MEDIA_ADDRESS_REFUSED', "this video's views are reported with its page's token (t)");
    }

    const day = dayOf(now);
    const key = this.viewerKey(day, client, videoId);
    let viewer = this.viewers.get(key);
    if (!viewer || viewer.day !== day) {
      viewer = { day, firstAt: now, watched: 0, counted: false, sessions: new Map() };
      if (this.viewers.size >= MAX_VIEWERS) this.viewers.delete(this.viewers.keys().next().value!);
    } else {
      this.viewers.delete(key); // kept in order of use: the least recently used is forgotten first
    }
    this.viewers.set(key, viewer);
    const before = viewer.sessions.get(report.session) ?? 0;
    if (viewer.sessions.size < 20 || viewer.sessions.has(report.session)) viewer.sessions.set(report.session, Math.max(before, report.watched));
    const possible = (now - viewer.firstAt) / 1000 + SLACK_SECONDS - viewer.watched;
    const added = Math.max(0, Math.min(report.watched - before, possible));
    viewer.watched += added;
    const needed = video.duration > 0 ? Math.min(VIEW_AFTER_SECONDS, video.duration / 2) : VIEW_AFTER_SECONDS;
    const newView = !viewer.counted && viewer.watched >= needed;
    if (newView) viewer.counted = true;
    if (added === 0 && !newView) return;
    const k = `${videoId}|${day}`;
    const c = this.pending.get(k) ?? { videoId, day, views: 0, watchSeconds: 0 };
    c.views += newView ? 1 : 0;
    c.watchSeconds += added;
    this.pending.set(k, c);
    if (newView) this.deps.events.emit('video.viewed', { videoId, appId: video.appId });
  }

  /** A video's views and watch time (whole seconds), per day and in all, with what is not written yet. */
  async ofVideo(videoId: string): Promise<{ views: number; watchSeconds: number; days: Array<Omit<ViewCount, 'videoId'>> }> {
    const days = new Map((await this.deps.store.ofVideo(videoId)).map((c) => [c.day, { day: c.day, views: c.views, watchSeconds: c.watchSeconds }]));
    for (const c of this.pending.values()) {
      if (c.videoId !== videoId) continue;
      const d = days.get(c.day) ?? { day: c.day, views: 0, watchSeconds: 0 };
      days.set(c.day, { day: c.day, views: d.views + c.views, watchSeconds: d.watchSeconds + Math.floor(c.watchSeconds) });
    }
    const list = [...days.values()].sort((a, b) => (a.day < b.day ? -1 : 1));
    return { views: sum(list, 'views'), watchSeconds: sum(list, 'watchSeconds'), days: list };
  }

  /** Every video's views and watch time per day over the last `days` days (today included), each day listed. */
  async lastDays(days: number): Promise<Array<Omit<ViewCount, 'videoId'>>> {
    const today = this.now();
    const list = Array.from({ length: days }, (_, i) => dayOf(today - (days - 1 - i) * 86_400_000));
    const stored = new Map((await this.deps.store.byDay(list[0]!, list.at(-1)!)).map((c) => [c.day, c]));
    for (const c of this.pending.values()) {
      const d = stored.get(c.day);
      if (d || list.includes(c.day)) stored.set(c.day, { day: c.day, views: (d?.views ?? 0) + c.views, watchSeconds: (d?.watchSeconds ?? 0) + Math.floor(c.watchSeconds) });
    }
    return list.map((day) => stored.get(day) ?? { day, views: 0, watchSeconds: 0 });
  }

  /** Writes what was counted since the last write; on failure keeps it for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      // Watch time is stored in whole seconds: the fractions stay for the next write.
      const rows: ViewCount[] = [];
      for (const c of batch.values()) {
        const whole = Math.floor(c.watchSeconds);
        if (c.watchSeconds - whole > 0) this.pending.set(`${c.videoId}|${c.day}`, { ...c, views: 0, watchSeconds: c.watchSeconds - whole });
        if (c.views > 0 || whole > 0) rows.push({ ...c, watchSeconds: whole });
      }
      try {
        await this.deps.store.add(rows);
      } catch (err) {
        for (const r of rows) {
          const k = `${r.videoId}|${r.day}`;
          const p = this.pending.get(k) ?? { videoId: r.videoId, day: r.day, views: 0, watchSeconds: 0 };
          this.pending.set(k, { ...p, views: p.views + r.views, watchSeconds: p.watchSeconds + r.watchSeconds });
        }
        this.deps.log(`Views: could not write the counts (kept for the next try): ${(err as Error).message}`);
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  // The minute starts at an address's first report, not on the clock's minute: a clock-aligned
  // window would let 1,200 reports through in two seconds across its edge.
  private limit(address: string, now: number): void {
    const r = this.rates.get(address);
    if (r && now - r.since < 60_000) {
      if (++r.n > BEACONS_PER_MINUTE) throw new ApiError('TOO_MANY_REPORTS', `at most ${BEACONS_PER_MINUTE} view reports a minute from one address`);
      return;
    }
    this.rates.delete(address);
    if (this.rates.size >= MAX_ADDRESSES) this.rates.delete(this.rates.keys().next().value!);
    this.rates.set(address, { since: now, n: 1 });
  }

  private viewerKey(day: string, client: { address: string; userAgent: string }, videoId: string): string {
    if (this.salt.day !== day) {
      this.salt = { day, value: crypto.randomBytes(32) };
      this.viewers.clear();
    }
    return crypto.createHmac('sha256', this.salt.value).update(`${client.address}\n${client.userAgent}\n${videoId}`).digest('base64url');
  }
}

/** `YYYY-MM-DD` of `ms`, in UTC. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function sum(list: Array<{ views: number; watchSeconds: number }>, k: 'views' | 'watchSeconds'): number {
  return list.reduce((n, c) => n + c[k], 0);
}

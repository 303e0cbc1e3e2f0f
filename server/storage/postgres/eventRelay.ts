/**
 * Events across nodes (issue 11, item 5): the console's live updates and the caches that follow
 * status changes must hear what happens on every node, not only on the one they run on. A worker
 * moves a video to 1 and reports its transcode's progress; the browser watching the console is
 * attached to an API node.
 *
 * Each node sends its own `video.status`, `job.state` and `job.progress` events through
 * PostgreSQL's NOTIFY on one channel and LISTENs on it; what it hears from the other nodes is
 * emitted on its bus's `everywhere` (events.ts), where its own events go too. The node's own bus
 * is left alone: the services that act on an event (callbacks, queueing a transcode) act once, on
 * the node where it happened. NOTIFY because the database is already there and it delivers in
 * commit order; what is lost while a node's listening connection is down is only live display
 * (the console reloads its lists when its stream reconnects), so no queue is needed for it.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { VopEventBus, type VopEvents } from '../../core/events.js';
import type { AppChangeFeed } from '../types.js';
import { APP_CHANGES_CHANNEL } from './postgresAppStore.js';

const CHANNEL = 'vop_events';

/** The events relayed: what the console shows live and what caches (and the signing keys) follow. */
const RELAYED = ['video.status', 'video.renditions', 'video.textTracks', 'keys.rotated', 'job.state', 'job.progress'] as const;
type Relayed = (typeof RELAYED)[number];

/** Least time between two relayed progress reports of one job: the console shows 4 a second at most. */
const PROGRESS_INTERVAL_MS = 250;

/** NOTIFY takes up to 8,000 bytes; ours are a few hundred (an error message is cut to fit). */
const MAX_PAYLOAD = 7_900;

/** Waits between attempts to listen again after the listening connection failed. */
const RELISTEN_DELAY_MS = [250, 1_000, 5_000];

interface Message {
  /** The node that sent it: a node ignores its own. */
  from: string;
  name: Relayed;
  data: VopEvents[Relayed][0];
}

/**
 * Also the {@link AppChangeFeed} of the node's copies of applications (postgresAppStore.ts): the
 * same listening connection hears the changes each application write announces in its own
 * transaction. While that connection is down nothing is heard, so `listening` is false and the
 * copies are not used; once it listens again every copy is dropped (a change may have been missed).
 */
export class PostgresEventRelay implements AppChangeFeed {
  /** This node's id on the channel (random per process). */
  readonly nodeId = crypto.randomBytes(8).toString('hex');
  private readonly everywhere = new VopEventBus();
  private readonly pool: pg.Pool;
  private listener: pg.Client | undefined;
  private closed = false;
  private relistens = 0;
  private readonly lastProgress = new Map<string, number>();
  private readonly detach: Array<() => void> = [];
  private readonly appWatchers = new Set<(appId: string | undefined) => void>();

  constructor(
    private readonly url: string,
    private readonly local: VopEventBus,
    private readonly log: (line: string) => void,
  ) {
    // One connection sends (NOTIFY is one short statement); the listener has its own.
    this.pool = new pg.Pool({ connectionString: url, max: 1 });
    this.pool.on('error', (err) => this.log(`Events across nodes: a connection failed: ${err.message}`));
  }

  /** Starts listening, then relays: the bus's `everywhere` is this node's and the others' events from now on. */
  async start(): Promise<void> {
    await this.listen();
    for (const name of RELAYED) {
      const forward = (data: VopEvents[Relayed][0]) => {
        (this.everywhere.emit as (n: Relayed, d: unknown) => boolean)(name, data);
        if (this.shouldSend(name, data)) this.send({ from: this.nodeId, name, data });
      };
      (this.local.on as (n: Relayed, f: (d: VopEvents[Relayed][0]) => void) => void)(name, forward);
      this.detach.push(() => (this.local.off as (n: Relayed, f: (d: VopEvents[Relayed][0]) => void) => void)(name, forward));
    }
    this.local.everywhere = this.everywhere;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.appChanged(undefined);
    for (const d of this.detach) d();
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }

  get listening(): boolean {
    return this.listener !== undefined && !this.closed;
  }

  onAppChange(onChange: (appId: string | undefined) => void): () => void {
    this.appWatchers.add(onChange);
    return () => this.appWatchers.delete(onChange);
  }

  private appChanged(appId: string | undefined): void {
    for (const w of this.appWatchers) w(appId);
  }

  private shouldSend(name: Relayed, data: VopEvents[Relayed][0]): boolean {
    if (name === 'job.state') {
      const s = data as VopEvents['job.state'][0];
      if (s.state !== 'running') this.lastProgress.delete(s.jobId);
      return true;
    }
    if (name !== 'job.progress') return true;
    const p = data as VopEvents['job.progress'][0];
    const now = Date.now();
    if (now - (this.lastProgress.get(p.jobId) ?? 0) < PROGRESS_INTERVAL_MS) return false;
    this.lastProgress.set(p.jobId, now);
    return true;
  }

  private send(message: Message): void {
    let payload = JSON.stringify(message);
    if (Buffer.byteLength(payload) > MAX_PAYLOAD && 'error' in message.data) {
      payload = JSON.stringify({ ...message, data: { ...message.data, error: message.data.error.slice(0, 1_000) } });
    }
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) return;
    this.pool.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]).catch((err: Error) => this.log(`Events across nodes: sending failed: ${err.message}`));
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    client.on('notification', (n) => (n.channel === APP_CHANGES_CHANNEL ? this.appChanged(n.payload ?? undefined) : this.receive(n.payload ?? '')));
    client.on('error', (err) => {
      if (this.listener !== client) return;
      this.listener = undefined;
      this.appChanged(undefined);
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.log(`Events across nodes: the listening connection failed (${err.message}); listening again.`);
      void this.relisten();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    await client.query(`LISTEN ${APP_CHANGES_CHANNEL}`);
    this.listener = client;
    // Whatever changed while nobody listened is unknown: copies kept until now go.
    this.appChanged(undefined);
  }

  private async relisten(): Promise<void> {
    while (!this.closed && !this.listener) {
      await new Promise((r) => setTimeout(r, RELISTEN_DELAY_MS[Math.min(this.relistens++, RELISTEN_DELAY_MS.length - 1)]).unref());
      if (this.closed) return;
      try {
        await this.listen();
        this.relistens = 0;
      } catch (err) {
        this.log(`Events across nodes: listening again failed: ${(err as Error).message}`);
      }
    }
  }

  private receive(payload: string): void {
    let message: Message;
    try {
      message = JSON.parse(payload) as Message;
    } catch {
      return;
    }
    if (message.from === this.nodeId || !RELAYED.includes(message.name)) return;
    (this.everywhere.emit as (n: Relayed, d: unknown) => boolean)(message.name, message.data);
  }
}

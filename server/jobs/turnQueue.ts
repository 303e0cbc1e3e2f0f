/**
 * The shared queue of cluster mode (issue 11, item 4), as the job queue sees it.
 *
 * Jobs stay data in vop's own table (storage/jobRecords.ts): their order, priority, fairness between
 * applications, moves, cancel and retry are decided there, in one SQL claim, on either engine.
 * What one process cannot give is a lease: which node runs a job, and whether that node is still
 * alive. That is the shared queue's part, a well-kept engine (BullMQ, jobs/bullmqTurns.ts) whose
 * jobs are *turns*: a turn is permission for one node to run the next job of one type. The node
 * that takes a turn holds its lock for as long as it keeps renewing it; it claims the job the
 * fair order gives and stamps it with a lease `<turn>/<nonce>`. A node that dies (SIGKILL) or
 * stops answering (SIGSTOP) stops renewing: the engine gives the turn to another node, which
 * takes the job over under a new lease (JobStore.takeOver), and every write of the old holder is
 * fenced out from then on (JobStore.update with its lease).
 */

/** One turn, as a node runs it. */
export interface Turn {
  /** The shared queue's id of the turn; a job run under it is leased as `<id>/<nonce>`. */
  id: string;
  /**
   * Aborted when this node could not renew the turn's lock (paused, cut off, or only slow past
   * the lease). A hint, not the verdict: the job is lost only once another node has taken it over
   * in the database (JobStore.takeOver), which the job queue then checks at once.
   */
  signal: AbortSignal;
}

export interface TurnQueue {
  /** Adds `count` turns of `type`, due after `delayMs` (a retry's backoff). */
  add(type: string, count: number, delayMs?: number): Promise<void>;
  /**
   * Takes turns of `type`, up to `concurrency` at once on this node: `run` for each; `lost` for a
   * turn the engine gave up on (its holders stopped answering again and again).
   */
  serve(type: string, concurrency: number, run: (turn: Turn) => Promise<void>, lost: (turnId: string) => Promise<void>): void;
  setConcurrency(type: string, concurrency: number): void;
  /** Turns of `type` not taken yet (due or delayed). */
  pending(type: string): Promise<number>;
  /** Whether turn `id` is still held by a node or waiting to be taken again after its holder stopped answering. */
  isLive(type: string, id: string): Promise<boolean>;
  /** For /healthz: the engine and the lease. */
  describe(): { engine: string; leaseMs: number };
  /** Stops taking turns and waits for the runs in progress (the job queue has aborted them). */
  close(): Promise<void>;
}

/**
 * The attempt's node no longer holds the job: another node took it over (this one was paused or
 * cut off past its lease). Nothing of the attempt may be written any more, its clean-up included:
 * the outputs under the video's names are the new holder's now.
 */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor() {
    super('this node lost its lease (paused or cut off past it); another node runs the job now');
  }
}

/** The turn of a lease `<turn>/<nonce>`. */
export function turnOfLease(lease: string): string {
  const at = lease.lastIndexOf('/');
  return at < 0 ? '' : lease.slice(0, at);
}

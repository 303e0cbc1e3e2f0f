/** The states of a job. `queued` and `running` are live; the rest are final until a retry. */
export type JobState = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** A job as stored: jobs are data (type, payload, state), handlers are looked up by type. */
export interface JobRecord {
  id: string;
  type: string;
  /** The video the job works on, or '' for jobs that concern none. */
  videoId: string;
  /**
   * The application the job works for, or '' for none: what the queue shares its slots fairly
   * between. Inserted as '', the store takes the application of the job's video (so no caller
   * has to know it); a video that does not exist leaves it ''.
   */
  appId: string;
  payload: Record<string, unknown>;
  state: JobState;
  /** Higher runs first. */
  priority: number;
  /**
   * Enqueue order; ties of priority run in this order. The store may number jobs itself (the
   * PostgreSQL store takes the next value of a database sequence, so nodes never collide): what
   * is promised is that a job inserted later has a higher seq.
   */
  seq: number;
  attempts: number;
  maxAttempts: number;
  /** Unix ms before which a queued job does not start (retry backoff). */
  runAfter: number;
  /** 0 to 100, as last saved (live progress is in JobQueue.live()). */
  progress: number;
  /** Why the last attempt failed, for people. */
  error: string;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
  /**
   * Who holds a running job in cluster mode: `<turn>/<nonce>` (jobs/turnQueue.ts), the turn being
   * the shared queue's job whose lock is the lease. '' (or absent) in the embedded mode, where
   * this process alone runs jobs. Bookkeeping of an attempt is fenced on it: a node that lost the
   * lease (killed, paused past it) can no longer write the job.
   */
  lease?: string;
}

export interface JobFilter {
  states?: JobState[];
  types?: string[];
  videoId?: string;
  appId?: string;
  limit?: number;
}

/** Storage of jobs. */
export interface JobStore {
  insert(job: JobRecord): Promise<void>;
  /** Inserts many in one transaction (one journal write). */
  insertMany(jobs: JobRecord[]): Promise<void>;
  get(id: string): Promise<JobRecord | undefined>;
  /**
   * Running jobs first, then queued ones in the order {@link claimNext} would take them if none
   * finished meanwhile (by priority, then by turn: a job's turn is the number of its
   * application's jobs of its type running or queued before it, then by seq), then the most
   * recently finished ones.
   */
  list(filter?: JobFilter): Promise<JobRecord[]>;
  /**
   * Takes the next queued job of one of `types` whose runAfter has come, marking it running and
   * counting the attempt, in one step. Which one is the queue's fair share (issue 12, items 6
   * and 8), decided in the database so that it holds across nodes:
   *
   * 1. Priority first, strictly: only due jobs of the highest priority among them are candidates
   *    (an admin's "run next" raises a job above every other, whatever its application).
   * 2. Among those, the application with the fewest jobs of these types running now; ties go to
   *    the application whose oldest candidate has the lowest seq.
   * 3. Within that application, its candidate with the lowest seq (the queue order an admin sets
   *    with moves).
   */
  claimNext(types: string[], now: number, lease?: string): Promise<JobRecord | undefined>;
  /**
   * Applies `patch` if the job's state is one of `fromStates` (any, if omitted) and, with `lease`,
   * if the job is still held under that lease; true if it did.
   */
  update(id: string, patch: Partial<Omit<JobRecord, 'id' | 'type' | 'createdAt'>>, fromStates?: JobState[], lease?: string): Promise<boolean>;
  /**
   * The running job of `type` held under turn `turn` (a lease `<turn>/…`), now held under `lease`
   * instead: the shared queue gave the turn of a node that stopped answering to this one.
   * Undefined if no running job of that type is held under that turn. The type matters: the
   * shared queue numbers the turns of each type on their own, so turn 1 of one type and turn 1 of
   * another are two turns.
   */
  takeOver(type: string, turn: string, lease: string, now: number): Promise<JobRecord | undefined>;
  /**
   * How many jobs of each type are in each of `states` (all states if omitted), counted in the
   * database: the console's overview needs the numbers, not thousands of decoded payloads.
   * Pairs with no job are absent.
   */
  countByTypeAndState(states?: JobState[]): Promise<Array<{ type: string; state: JobState; count: number }>>;
  /** At least the highest seq so far (new jobs continue after it). */
  maxSeq(): Promise<number>;
  /** Earliest runAfter of queued jobs of these types, if any. */
  nextRunAfter(types: string[]): Promise<number | undefined>;
}

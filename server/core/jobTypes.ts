/**
 * The job types and what each carries: one typed map (PeerTube's `JobType`). A job is data, a row
 * of the jobs table; its type names the handler that a feature registers for it with the queue
 * (jobs/jobQueue.ts), and its payload is what that handler reads. Declared here, on the ground
 * floor, because the queue, the features that run the jobs, the settings that bound them and the
 * console that lists them all speak of them.
 */
export interface JobPayloads {
  /** A video's source made into its first rendition, covers and HLS (processing/transcodeJob.ts). */
  transcode: { videoId: string };
  /** The rungs a playable video does not have yet, after its first rendition (processing/ladderJob.ts). */
  ladder: { videoId: string };
  /** A playable video's seek previews, once its ladder is whole (processing/storyboardJob.ts). */
  storyboard: { videoId: string };
  /** A video's source pulled from its address (ingest/downloadJob.ts). */
  download: { videoId: string };
  /** One attempt of a series of a callback delivery (callbacks/callbackService.ts). */
  callback: { deliveryId: string; series: number; attempt: number };
}

/** A job type vop runs. */
export type JobType = keyof JobPayloads;

/**
 * The payload of a job of type `T`: the map's for a type vop runs, any record for another (the
 * queue's own tests run types of their own).
 */
export type PayloadOf<T extends string> = T extends JobType ? JobPayloads[T] : Record<string, unknown>;

/**
 * The error a job the admin cancelled records, and the reason its type's onGiveUp hears
 * (jobs/jobQueue.ts): the jobs' handlers and the console tell a cancel from a failure by it.
 */
export const CANCELLED_REASON = 'cancelled';

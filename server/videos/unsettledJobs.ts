import type { JobRecord, JobStore } from '../storage/jobRecords.js';
import type { VideoStore } from '../storage/types.js';

/**
 * The job of `type` that ended for good without success (failed or cancelled) in the video's
 * current round, if any: the one whose give-up may not have reached the video.
 *
 * The queue records a job's end first and then moves the video (JobQueue.giveUp: whoever sees
 * the failed status sees a finished job). A crash between the two writes leaves a video waiting
 * (or "in progress") whose job has ended. Start-up must then finish the give-up rather than queue
 * the work again: a source that is not a video would be tried once more for every crash, and a
 * cancelled transcode would run after all.
 *
 * A round starts when the video enters one of `roundStarts` (5 for a transcode: after an upload
 * or an admin's retry; 2 for a download). A job that ended before that belongs to an earlier
 * round: the admin retried it (the video went back to 5 first, and a crash cut the retry of the
 * job itself off), so the work is due again. In cluster mode the two times come from two nodes'
 * clocks; they matter only in that second crash window, and only if the clocks differ by more
 * than the time between the failure and the retry.
 */
export async function unsettledEnd(
  stores: { jobs: JobStore; videos: VideoStore },
  videoId: string,
  type: string,
  roundStarts: number[],
): Promise<JobRecord | undefined> {
  const [last] = await stores.jobs.list({ states: ['succeeded', 'failed', 'cancelled'], types: [type], videoId, limit: 1 });
  if (!last || (last.state !== 'failed' && last.state !== 'cancelled') || last.finishedAt === null) return undefined;
  const history = await stores.videos.statusHistory(videoId);
  let roundStart = 0;
  for (const change of history) if (roundStarts.includes(change.to)) roundStart = change.at;
  return last.finishedAt >= roundStart ? last : undefined;
}

/**
 * Where the rest of a playable video's ladder stands, as the console's video page shows it
 * ("Playable, 360p; ladder 2 of 4"): from the video's record, its renditions and its jobs, with
 * no probe of the source, so a page load costs no ffprobe (and, on S3, no download of the source).
 */
import type { LadderView } from '../http/adminApiTypes.js';
import { pickRungs, type LadderOptions } from '../media/ladder.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { JobRecord } from '../storage/jobRecords.js';
import type { RenditionRecord, VideoRecord } from '../storage/types.js';

/**
 * The ladder of `video`, given its renditions and its latest ladder job (the one queued or
 * running, else the last to end; JobStore.list's order), if any.
 *
 * How many renditions the ladder comes to is what the rungs give for its top rendition's size
 * (media/ladder.ts pickRungs), which holds when the first rendition was the source copied (its
 * size is the source's, ladderPlan.ts). When the lowest rung was encoded first, the top rendition
 * says nothing of the source's size and the rungs give no more than it lists: the total is then
 * unknown (null) while the rest is to come, rather than a wrong "1 of 1".
 */
export function ladderView(video: VideoRecord, renditions: readonly RenditionRecord[], last: JobRecord | undefined, ladder: LadderOptions): LadderView {
  const bySize = [...renditions].sort((a, b) => Math.min(b.width, b.height) - Math.min(a.width, a.height));
  const labels = bySize.map((r) => r.label);
  const job = last ? { id: last.id, state: last.state, error: last.error } : null;
  const live = last?.state === 'queued' || last?.state === 'running';
  // Only a playable video is served while its ladder grows; a video moved on (deleted, sent back
  // to transcoding) has no ladder to show, whatever its record kept.
  const stored = video.status === VideoStatus.Normal ? (video.ladder ?? '') : '';
  // A failed ladder retried from the console is pending again once its job is queued; the
  // record says 'failed' until that job ends (ladderJob.ts writes '' or keeps 'failed').
  const state = stored === 'failed' && live ? 'pending' : stored;
  const done = labels.length;
  if (state === '') return { state, labels, done, total: done, job };
  const top = bySize[0];
  const target = new Set(labels);
  if (top && top.width > 0 && top.height > 0) for (const r of pickRungs(top, ladder)) target.add(r.label);
  return { state, labels, done, total: target.size > done ? target.size : null, job };
}

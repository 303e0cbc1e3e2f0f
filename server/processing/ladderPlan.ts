/**
 * What a video's transcode makes first, and what its ladder makes after (issue: playable in
 * seconds). The first rendition is what makes the video playable (status 1):
 *
 *  - a source browsers play as it is: the source's streams copied into MP4 (media/streamCopy.ts),
 *    which stays as the video's top rendition (under its top rung's label when it is that rung's
 *    size, else under its own, "540p"); the ladder then encodes the rungs below it;
 *  - any other source: the lowest rung alone; the ladder then encodes the others, in one run;
 *  - a video whose application wants every rung at once (AppRecord.wholeLadderFirst), or whose
 *    ladder has one rung: the whole ladder, as one run, and nothing after.
 *
 * Nothing is encoded twice, and nothing listed at status 1 goes away when the ladder lands: an
 * application that stored a `VideoURL` at the status callback keeps a working address.
 */
import { pickRungs, type LadderOptions, type Rendition } from '../media/ladder.js';
import type { VideoInfo } from '../media/probe.js';
import { copyVerdict, type CopiedAudio } from '../media/streamCopy.js';
import type { TranscodeOptions } from '../media/transcodeArgs.js';

export type FirstStep =
  /** The source's streams copied: `rendition` names it (its top rung's label, the source's size). */
  | { kind: 'copy'; rendition: Rendition; audio: CopiedAudio }
  /** These rungs encoded in one run. */
  | { kind: 'encode'; rungs: Rendition[] };

export interface LadderPlan {
  first: FirstStep;
  /** The rungs the ladder job makes after the first rendition, largest first; empty: none. */
  rest: Rendition[];
  /** Why the source is not copied (for the log), when it is not. */
  notCopied?: string;
}

/** `split` false: the whole ladder first (see the file comment). */
export function planLadder(info: VideoInfo, ladder: LadderOptions, o: { split: boolean } & Pick<TranscodeOptions, 'maxFrameRate'>): LadderPlan {
  const rungs = pickRungs(info, ladder);
  if (!o.split) return { first: { kind: 'encode', rungs }, rest: [] };
  const verdict = copyVerdict(info, o);
  if (verdict.copy) {
    // The copy takes the place of the top rung when it is that rung's size (a 1920x1080 source
    // and the 1080p rung; pickRungs gives a nearly matching source its own size); otherwise it is
    // a rendition of its own size above the rungs (a 960x540 source: "540p", then 480p and 360p).
    // Its bitrate is the source's, measured once written (renditionOutputs.ts).
    const top = rungs[0]!;
    const short = Math.min(info.width, info.height);
    const isTop = Math.min(top.width, top.height) === short;
    const rendition: Rendition = { ...top, label: isTop ? top.label : `${short}p`, width: info.width, height: info.height };
    return { first: { kind: 'copy', rendition, audio: verdict.audio }, rest: isTop ? rungs.slice(1) : rungs };
  }
  return { first: { kind: 'encode', rungs: rungs.slice(-1) }, rest: rungs.slice(0, -1), notCopied: verdict.why };
}

/** The rungs still to make for a video whose renditions carry `listed` labels. */
export function remainingRungs(info: VideoInfo, ladder: LadderOptions, listed: ReadonlySet<string>): Rendition[] {
  return pickRungs(info, ladder).filter((r) => !listed.has(r.label));
}

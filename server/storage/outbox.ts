import { VideoStatus } from '../core/videoStatus.js';

/**
 * The status callback's outbox (STYLE.md: a state change and the message about it commit
 * together). A move of a video to one of {@link CALLBACK_STATUSES} writes its delivery row in the
 * same transaction as the status and its history row (VideoStore.setStatus, both engines), keyed
 * by the change (video, time, new status: a unique index), so a status change is never stored
 * without its delivery, nor given two. The callback service then only sends what is there.
 */

/** Spec section 6: the statuses that are called back, the end states of section 3. */
export const CALLBACK_STATUSES: readonly number[] = [VideoStatus.Normal, VideoStatus.DownloadFailed, VideoStatus.TranscodingFailed];

/**
 * The state and `lastError` a new status delivery starts with, as SQL over the application's row
 * aliased `a` (`disabled`, `callback_url`): the same rule as the service's whyNotSent. Without an
 * address (or disabled) the row still records the change, `skipped`: setting an address later must
 * not call back every video finished before.
 */
export function outboxStateSql(disabledTrue: string): { state: string; lastError: string } {
  const disabled = `a.disabled = ${disabledTrue}`;
  return {
    state: `CASE WHEN ${disabled} OR a.callback_url = '' THEN 'skipped' ELSE 'pending' END`,
    lastError: `CASE WHEN ${disabled} THEN 'application disabled' WHEN a.callback_url = '' THEN 'no callback address' ELSE '' END`,
  };
}

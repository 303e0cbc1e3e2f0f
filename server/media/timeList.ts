/**
 * Lists of times as ffmpeg takes them in one argument (`-segment_times`, `-force_key_frames`).
 * Pure.
 */

/**
 * The longest list handed to ffmpeg as one argument: Linux refuses a single argument over
 * 128 KiB. Twelve hours in 4 s segments is some 108,000 characters.
 */
export const MAX_TIME_LIST_CHARS = 120_000;

/** A time as ffmpeg's lists take it: seconds to the millisecond (a frame lasts at least 4 ms). */
export function formatTime(seconds: number): string {
  return (Math.round(seconds * 1000) / 1000).toString();
}

/** `times` as one comma-separated argument; null when it would be longer than {@link MAX_TIME_LIST_CHARS}. */
export function timeList(times: readonly number[]): string | null {
  const text = times.map(formatTime).join(',');
  return text.length <= MAX_TIME_LIST_CHARS ? text : null;
}

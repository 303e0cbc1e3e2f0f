/**
 * When a scheduled backup runs next: a time of day (and a weekday) read in a time zone, turned
 * into an instant. Pure, so that tests give it fixed clocks.
 *
 * Daylight saving: a time that a spring-forward skips (02:30 on the night clocks go from 02:00 to
 * 03:00) runs at the same distance past the jump (03:30); a time that a fall-back repeats runs
 * once, at its first occurrence. Either way one run a day.
 */

/** A time zone's wall clock at an instant: the fields the schedule reads. */
interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function wallClock(ms: number, timeZone: string | undefined): WallClock {
  const key = timeZone ?? '';
  let fmt = formatters.get(key);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    });
    formatters.set(key, fmt);
  }
  const p: Record<string, string> = {};
  for (const part of fmt.formatToParts(ms)) p[part.type] = part.value;
  return {
    year: Number(p.year),
    month: Number(p.month),
    day: Number(p.day),
    hour: Number(p.hour),
    minute: Number(p.minute),
    second: Number(p.second),
    weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(p.weekday!),
  };
}

/** How far the zone's clock is ahead of UTC at `ms`, in ms. */
function offsetAt(ms: number, timeZone: string | undefined): number {
  const w = wallClock(ms, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant the zone's clock shows `year-month-day hour:minute` (month 1-12; a day past the
 * month's end rolls over). With two such instants (a fall-back), the first; with none (a
 * spring-forward), the instant as far past the jump as the time is.
 */
export function instantOfWallTime(year: number, month: number, day: number, hour: number, minute: number, timeZone: string | undefined): number {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute);
  // The offset an hour or so either side of the instant; the earlier one that fits is the first occurrence.
  const before = asUtc - offsetAt(asUtc - 86_400_000 / 2, timeZone);
  const after = asUtc - offsetAt(asUtc + 86_400_000 / 2, timeZone);
  for (const candidate of [Math.min(before, after), Math.max(before, after)]) {
    if (asUtc - offsetAt(candidate, timeZone) === candidate) return candidate;
  }
  // No instant shows that time (the hour skipped): the offset from before the jump carries it past.
  return before;
}

/**
 * The first instant after `after` (ms) when the zone's clock shows `at` (`HH:MM`), on `weekday`
 * (0 Sunday … 6 Saturday) if given, else any day.
 */
export function nextRunAt(after: number, at: string, timeZone: string | undefined, weekday?: number): number {
  const [hour, minute] = at.split(':').map(Number) as [number, number];
  const today = wallClock(after, timeZone);
  // Eight days cover a weekly time whose day is today but whose time has passed.
  for (let d = 0; d <= 8; d++) {
    const t = instantOfWallTime(today.year, today.month, today.day + d, hour, minute, timeZone);
    if (t <= after) continue;
    if (weekday !== undefined && new Date(Date.UTC(today.year, today.month - 1, today.day + d)).getUTCDay() !== weekday) continue;
    return t;
  }
  throw new Error(`No run of ${at} found after ${new Date(after).toISOString()}.`);
}

/**
 * Spec 2.2: CreateDate is ISO 8601 local time without a zone offset, `YYYY-MM-DDThh:mm:ss`.
 * "Local" is the server's zone unless a zone is configured (for example Asia/Shanghai, the
 * spec's reference zone for timestamps).
 */
export function makeLocalDateFormatter(timeZone?: string): (ms: number) => string {
  if (!timeZone) {
    return (ms) => {
      const d = new Date(ms);
      return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}T${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
    };
  }
  const fmt = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return (ms) => {
    const parts: Record<string, string> = {};
    for (const p of fmt.formatToParts(ms)) parts[p.type] = p.value;
    return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`;
  };
}

/** Throws a readable error if `timeZone` is not an IANA zone this Node knows. */
export function assertTimeZone(timeZone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new Error(`timeZone "${timeZone}" is not a known IANA time zone (for example "Asia/Shanghai").`);
  }
}

function p2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

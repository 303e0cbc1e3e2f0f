/**
 * The log line of a failure that is no client's fault (a bug, a disk that broke under a request):
 * one shape, made here, which the logger files at level error (logging/logger.ts) and a test reads
 * as "something went wrong that nobody asked for", so neither depends on the line's wording.
 */
const MARK = 'Error on ';

/**
 * `Error on <request>[ <when>]: <stack>`: `request` says what was being answered (`GET /Api/…`),
 * `when` the step it broke in, if not the answer itself ("after the answer began").
 */
export function unexpectedErrorLine(request: string, err: unknown, when = ''): string {
  return `${MARK}${request}${when ? ` ${when}` : ''}: ${(err as Error)?.stack ?? String(err)}`;
}

/** Whether a log line is one {@link unexpectedErrorLine} made. */
export function isUnexpectedErrorLine(line: string): boolean {
  return line.startsWith(MARK);
}

/**
 * The two kinds of log line the logger files above info, made here: a warning for the operator,
 * and a failure that is no client's fault (a bug, a disk that broke under a request). The logger
 * sets their level by the same tests (logging/logger.ts), and tests find them by these, not by
 * their wording.
 */
const UNEXPECTED = 'Error on ';
const WARNING = 'WARNING: ';

/**
 * `Error on <request>[ <when>]: <stack>`: `request` says what was being answered (`GET /Api/…`),
 * `when` the step it broke in, if not the answer itself ("after the answer began").
 */
export function unexpectedErrorLine(request: string, err: unknown, when = ''): string {
  return `${UNEXPECTED}${request}${when ? ` ${when}` : ''}: ${(err as Error)?.stack ?? String(err)}`;
}

/** Whether a log line is one {@link unexpectedErrorLine} made. */
export function isUnexpectedErrorLine(line: string): boolean {
  return line.startsWith(UNEXPECTED);
}

/** `WARNING: <text>`: something the operator should act on (a loose data folder, a weak token). */
export function warningLine(text: string): string {
  return `${WARNING}${text}`;
}

/** Whether a log line is a warning: one {@link warningLine} made, or an older `Warning:`/`WARNING` line. */
export function isWarningLine(line: string): boolean {
  return /^warning\b/i.test(line);
}

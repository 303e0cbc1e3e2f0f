/**
 * The operator's log: pino records, written as readable single lines on a terminal (the default)
 * or as JSON lines for a log shipper (`--log-format json`). Everything a server prints once it
 * runs goes through one of these, so that in JSON every line is a record.
 */
import { pino, stdTimeFunctions, type Logger } from 'pino';
import { isUnexpectedErrorLine, isWarningLine } from '../core/logLines.js';

/** The operator's log as the server uses it: pino's logger (`info(fields, msg)` and the rest). */
export type VopLogger = Logger;

/** How lines are written: readable text, or one JSON record a line. */
export type LogFormat = 'text' | 'json';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

/** The least severe level written. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** Where lines go: anything with a `write` of text (a file descriptor by default). */
export interface LogDestination {
  write(text: string): unknown;
}

export interface LoggerOptions {
  format: LogFormat;
  level: LogLevel;
  /** This node's name, carried by every line in cluster mode; absent, embedded. */
  node?: string;
  /**
   * Absent: standard output, written synchronously (a line is out before an exit that follows it)
   * by pino's own destination. Standard output is non-blocking once Node has touched it (a pipe, a
   * socket: a log shipper's, systemd's journal), and a write to a full one fails with EAGAIN: a
   * bare fs.writeSync lost the line and threw out of whatever was logging (an answer's 'finish',
   * and the server with it). pino.destination waits for room and writes the rest of a partial write.
   */
  destination?: LogDestination;
}

/** Builds the log `npm start` writes to. */
export function createLogger(opts: LoggerOptions): VopLogger {
  const out: LogDestination = opts.destination ?? pino.destination({ dest: 1, sync: true });
  const stream = opts.format === 'json' ? out : { write: (record: string) => out.write(textLine(record)) };
  return pino(
    {
      level: opts.level,
      // pid and hostname on every line say nothing a supervisor does not know; the node's name does.
      base: opts.node ? { node: opts.node } : {},
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
}

/** Fields a text line shows in its head rather than as `key=value`. */
const HEAD = new Set(['level', 'time', 'node', 'msg']);

/**
 * One of pino's JSON records as one readable line: `time LEVEL [node] message key=value …`. A
 * line break inside the message (an error's stack) is written as `\n`, so one record stays one
 * line for grep and the terminal alike.
 */
export function textLine(record: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(record) as Record<string, unknown>;
  } catch {
    return record.endsWith('\n') ? record : `${record}\n`;
  }
  const time = typeof r.time === 'string' ? localTime(new Date(r.time)) : '';
  const level = String(r.level ?? '').toUpperCase().padEnd(5);
  const node = r.node === undefined ? '' : `[${String(r.node)}] `;
  const msg = String(r.msg ?? '').replace(/\r?\n/g, '\\n');
  let fields = '';
  for (const [k, v] of Object.entries(r)) {
    if (HEAD.has(k) || v === undefined) continue;
    fields += ` ${k}=${fieldText(v)}`;
  }
  return `${time} ${level} ${node}${msg}${fields}\n`;
}

function fieldText(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (typeof v === 'string') return v !== '' && /^[^\s"=\\]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v);
}

/** `2025-05-01 14:03:07.120` in the machine's zone: what a person at its terminal reads. */
function localTime(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/**
 * The server's plain log lines (ServerOptions.log) written to `logger`: a line that says it is a
 * warning ("Warning…", "WARNING…") at warn, an unexpected error (core/logLines.ts, with its stack) at
 * error, the rest at info.
 */
export function lineLog(logger: VopLogger): (line: string) => void {
  return (line) => {
    if (isWarningLine(line)) logger.warn(line);
    else if (isUnexpectedErrorLine(line)) logger.error(line);
    else logger.info(line);
  };
}

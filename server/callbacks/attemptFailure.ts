/**
 * Why a status callback was not delivered, as the server writes it (a delivery's `lastError`, each
 * attempt's `error`, the attempt job's error) and as the console reads it back to say it in its
 * own language. One module writes and reads these words, so the console never guesses at
 * sentences: what this module cannot read (an older server's words) is shown as it was written.
 *
 * Network failures keep Node's own words (`connect ECONNREFUSED 127.0.0.1:9`): they are what an
 * admin searches for, and what the API and the logs have always said. No Node import here: the
 * console bundles this file.
 */

/** A failure, by kind, with what the words name. */
export type AttemptFailure =
  /** Nothing listens at the address (ECONNREFUSED). */
  | { kind: 'refused'; address: string }
  /** No route to the address (EHOSTUNREACH, ENETUNREACH). */
  | { kind: 'unreachable'; address: string }
  /** The host name does not resolve (ENOTFOUND, EAI_AGAIN). */
  | { kind: 'unknownHost'; host: string }
  /** The connection was cut before an answer (ECONNRESET, socket hang up). */
  | { kind: 'reset' }
  /** No answer within the attempt's time. */
  | { kind: 'timedOut'; ms: number }
  /** The HTTPS certificate was refused (expired, self-signed, another name). */
  | { kind: 'certificate'; code: string }
  /** The answer was not a 2xx. */
  | { kind: 'httpStatus'; status: number }
  /** The answer was a redirect, which is never followed. */
  | { kind: 'redirect'; status: number; location: string }
  /** The callback address is not an http(s) URL. */
  | { kind: 'badAddress'; address: string }
  /** Not sent: the application is gone, disabled, or has no callback address. */
  | { kind: 'noApplication' }
  | { kind: 'applicationDisabled' }
  | { kind: 'noCallbackAddress' }
  /** The admin cancelled the attempt's job. */
  | { kind: 'cancelled' };

/** The words of the failures vop names itself (not Node's). */
const OWN = {
  noApplication: 'no such application',
  applicationDisabled: 'application disabled',
  noCallbackAddress: 'no callback address',
  cancelled: 'cancelled',
} as const;

/** A failure vop puts in its own words (the others are Node's: networkFailureWords). */
export type OwnFailure = Extract<AttemptFailure, { kind: 'timedOut' | 'httpStatus' | 'redirect' | 'badAddress' | keyof typeof OWN }>;

/** The words stored for a failure vop names itself. */
export function failureWords(f: OwnFailure): string {
  switch (f.kind) {
    case 'timedOut':
      return `timed out after ${f.ms} ms`;
    case 'httpStatus':
      return `HTTP ${f.status}`;
    case 'redirect':
      return `HTTP ${f.status}: redirect${f.location ? ` to ${f.location}` : ''} not followed`;
    case 'badAddress':
      return `not an http(s) URL: ${f.address}`;
    default:
      return OWN[f.kind];
  }
}

/** The words stored for a network error of an attempt: Node's message, with its code when the message lacks it. */
export function networkFailureWords(err: { code?: string; message: string }): string {
  return err.code && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message;
}

const TLS_CODE = /\b(CERT_[A-Z_]+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_[A-Z_]+|ERR_TLS_[A-Z_]+|ERR_SSL_[A-Z_]+)\b/;

/** Reads stored words back; undefined for words this module does not write (shown as they are). */
export function readFailure(words: string): AttemptFailure | undefined {
  const text = words.trim();
  for (const [kind, w] of Object.entries(OWN) as Array<[keyof typeof OWN, string]>) if (text === w) return { kind };
  let m = /^timed out after (\d+) ms$/.exec(text);
  if (m) return { kind: 'timedOut', ms: Number(m[1]) };
  m = /^HTTP (\d{3})$/.exec(text);
  if (m) return { kind: 'httpStatus', status: Number(m[1]) };
  m = /^HTTP (\d{3}): redirect(?: to (.+))? not followed$/.exec(text);
  if (m) return { kind: 'redirect', status: Number(m[1]), location: m[2] ?? '' };
  m = /^not an http\(s\) URL: (.*)$/.exec(text) ?? /^not a URL: (.*)$/.exec(text);
  if (m) return { kind: 'badAddress', address: m[1] ?? '' };
  // Node: "connect ECONNREFUSED 127.0.0.1:9", "getaddrinfo ENOTFOUND example.invalid".
  m = /\bECONNREFUSED\b\s*(\S*)/.exec(text);
  if (m) return { kind: 'refused', address: m[1] ?? '' };
  m = /\b(?:EHOSTUNREACH|ENETUNREACH)\b\s*(\S*)/.exec(text);
  if (m) return { kind: 'unreachable', address: m[1] ?? '' };
  m = /\b(?:ENOTFOUND|EAI_AGAIN)\b\s*(\S*)/.exec(text);
  if (m) return { kind: 'unknownHost', host: m[1] ?? '' };
  if (/\bECONNRESET\b|^socket hang up$/.test(text)) return { kind: 'reset' };
  m = TLS_CODE.exec(text);
  if (m) return { kind: 'certificate', code: m[1]! };
  return undefined;
}

import http from 'node:http';
import https from 'node:https';
import { failureWords, networkFailureWords } from './attemptFailure.js';
import type { CallbackRequest } from './callbackRequest.js';

/** What one attempt got back. */
export interface AttemptOutcome {
  /** The answer's status; null when none came. */
  httpStatus: number | null;
  /** True for a 2xx answer: the only answer that counts as delivered. */
  ok: boolean;
  /** Why it is not delivered, in attemptFailure.ts's words (the console reads them back); empty when it is. */
  error: string;
  /** From the start of the request to the answer's status line (or to the failure). */
  latencyMs: number;
  /** The start of the answer's body. */
  responseExcerpt: string;
}

export interface SendOptions {
  /** The whole attempt: connect, send, status line and the body excerpt. */
  timeoutMs: number;
  /** How many bytes of the body to keep; the rest is not read. */
  excerptBytes: number;
  /** Aborts the attempt (shutdown, cancel): the promise then rejects, and nothing is recorded. */
  signal?: AbortSignal;
}

const USER_AGENT = 'vop-callback/1';

/**
 * POSTs one callback attempt. Never follows a redirect: a 3xx is a failed attempt like any other
 * non-2xx (an application that moved its endpoint sets the new address; following a redirect
 * would send the signed body wherever the answer points). Each attempt uses its own connection.
 * Resolves with the outcome for every network failure; rejects only when `signal` aborts.
 */
export function sendCallback(url: string, req: CallbackRequest, opts: SendOptions): Promise<AttemptOutcome> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let settled = false;
    let latencyMs = 0;
    const finish = (outcome: AttemptOutcome | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const failure = (error: string): AttemptOutcome => ({ httpStatus: null, ok: false, error, latencyMs: elapsed(), responseExcerpt: '' });

    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve(failure(failureWords({ kind: 'badAddress', address: url })));
      return;
    }
    const lib = target.protocol === 'https:' ? https : target.protocol === 'http:' ? http : undefined;
    if (!lib) {
      resolve(failure(failureWords({ kind: 'badAddress', address: url })));
      return;
    }
    const body = Buffer.from(req.body, 'utf8');
    const request = lib.request(target, {
      method: 'POST',
      agent: false,
      headers: { ...req.headers, 'content-length': String(body.length), 'user-agent': USER_AGENT, connection: 'close' },
    });
    const timer = setTimeout(() => request.destroy(new Error(failureWords({ kind: 'timedOut', ms: opts.timeoutMs }))), opts.timeoutMs);
    const onAbort = () => {
      request.destroy();
      finish(opts.signal?.reason instanceof Error ? opts.signal.reason : new Error('aborted'));
    };
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    let bodyDone: (() => void) | undefined;
    request.on('error', (err: NodeJS.ErrnoException) => {
      // After the status line, the status decides; a body cut short only shortens the excerpt.
      if (bodyDone) return bodyDone();
      finish(failure(networkFailureWords(err)));
    });
    request.on('response', (res) => {
      latencyMs = elapsed();
      const status = res.statusCode ?? 0;
      const ok = status >= 200 && status <= 299;
      const error = ok ? '' : failureWords(status >= 300 && status <= 399 ? { kind: 'redirect', status, location: res.headers.location ?? '' } : { kind: 'httpStatus', status });
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = (bodyDone = () => {
        res.destroy();
        const excerpt = Buffer.concat(chunks).subarray(0, opts.excerptBytes).toString('utf8');
        finish({ httpStatus: status, ok, error, latencyMs, responseExcerpt: excerpt });
      });
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        kept += chunk.length;
        if (kept >= opts.excerptBytes) done();
      });
      res.on('end', done);
      res.on('error', done);
      res.on('close', done);
      if (opts.excerptBytes === 0) done();
    });
    request.end(body);
  });
}

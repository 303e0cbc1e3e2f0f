/**
 * What the server wrote, said in the console's language (issue 35, item 5: no raw "410",
 * "ECONNREFUSED" or English sentence in a Chinese page where the console can say it). The server
 * answers with result codes and stores callback failures in words one shared module reads back
 * (server/callbacks/attemptFailure.ts); anything else it wrote (an ffmpeg failure, a reason from
 * an older server) is shown as written.
 */
import { readFailure } from '../../server/callbacks/attemptFailure.js';
import type { ResultCode } from '../../server/core/errors.js';
import type { Messages } from './messages/en.js';
import { CANCELLED_REASON } from '../../server/core/jobTypes.js';

/** A refusal of the admin API: its result code, the server's message and its detail apart (`error.detail`). */
export interface Refusal {
  code: string;
  message: string;
  detail: string;
}

/** A refusal in the console's language: the catalogue's words for its code, else the server's message. */
export function refusalText(r: Refusal, t: Messages): string {
  const words = t.serverWords.resultCodes[r.code as ResultCode];
  if (words === undefined) return r.message;
  return typeof words === 'string' ? words : words(r.detail);
}

/** Why a callback was not delivered (a delivery's, an attempt's or its job's error), in the console's language. */
export function callbackFailureText(words: string, t: Messages): string {
  const failure = readFailure(words);
  return failure ? t.serverWords.callbackFailure(failure) : words;
}

/**
 * A job's error in the console's language: a callback job's is its attempt's failure; any job the
 * admin cancelled says "cancelled" (server/jobs/jobQueue.ts); other jobs' errors (ffmpeg's
 * failures, put for people by the server) are shown as written.
 */
export function jobErrorText(job: { type: string; error: string }, t: Messages): string {
  return job.type === 'callback' || job.error === CANCELLED_REASON ? callbackFailureText(job.error, t) : job.error;
}

import type { ErrorRequestHandler, Response } from 'express';
import { ApiError, RESULT_CODES } from '../core/errors.js';
import { unexpectedErrorLine } from '../core/logLines.js';

/** Maps anything thrown into the catalogue: body-parser's errors by their type, the rest to 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const type = (err as { type?: unknown } | null)?.type;
  const status = (err as { status?: unknown } | null)?.status;
  if (type === 'entity.too.large') return new ApiError('PAYLOAD_TOO_LARGE');
  if (type === 'entity.parse.failed' || type === 'request.aborted' || type === 'request.size.invalid') return new ApiError('MALFORMED_REQUEST');
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'use UTF-8 without content encoding');
  // Any other client error from a parser (body-parser's 413 "too many parameters", the router's
  // 400 for a broken percent-encoding) is the client's, never a 500.
  if (status === 413) return new ApiError('PAYLOAD_TOO_LARGE');
  if (status === 415) return new ApiError('UNSUPPORTED_MEDIA_TYPE');
  if (typeof status === 'number' && status >= 400 && status < 500) return new ApiError('MALFORMED_REQUEST');
  return new ApiError('SERVER_ERROR');
}

/** The Content-Type of the spec API's answers (the one res.json sets). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The spec's envelope for a failure, `{ AuthMsg: { ResultCode, ResultMessage } }`, with its HTTP
 * status: 200 for application-level failures, the catalogue's status for transport-level ones.
 */
export function errorEnvelope(err: ApiError): { status: number; body: { AuthMsg: { ResultCode: string; ResultMessage: string } } } {
  return { status: err.def.transport ? err.def.httpStatus : 200, body: { AuthMsg: { ResultCode: err.code, ResultMessage: err.message } } };
}

export function sendEnvelopeError(res: Response, err: ApiError): void {
  const { status, body } = errorEnvelope(err);
  res.status(status).json(body);
}

function successEnvelope(body: Record<string, unknown>): Record<string, unknown> {
  return { AuthMsg: { ResultCode: RESULT_CODES.OK.code, ResultMessage: RESULT_CODES.OK.message }, ...body };
}

/** Success envelope plus the endpoint's own fields. */
export function sendEnvelope(res: Response, body: Record<string, unknown>): void {
  res.json(successEnvelope(body));
}

/** The success envelope plus the endpoint's own fields as JSON bytes, for answers made once and sent many times. */
export function envelopeJson(body: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify(successEnvelope(body)));
}

/** Sends JSON bytes from {@link envelopeJson} with the headers res.json gives its answers. */
export function sendEnvelopeJson(res: Response, json: Buffer): void {
  res.set('Content-Type', JSON_CONTENT_TYPE).send(json);
}

/** Logs, with its stack, a failure that is not the client's; the client sees only the catalogue's message. */
export function logIfUnexpected(log: (line: string) => void, apiErr: ApiError, err: unknown, method: string | undefined, url: string | undefined): void {
  if (apiErr.code === RESULT_CODES.SERVER_ERROR.code) log(unexpectedErrorLine(`${method} ${url}`, err));
}

/**
 * The error middleware of the spec API (registered after its routes). Unexpected errors are
 * logged with their stack; the client only ever sees the catalogue's message.
 */
export function envelopeErrorHandler(log: (line: string) => void): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const apiErr = toApiError(err);
    logIfUnexpected(log, apiErr, err, req.method, req.originalUrl);
    sendEnvelopeError(res, apiErr);
  };
}

/**
 * The admin API's error middleware: real HTTP statuses, `{ error: { code, message, detail? } }`.
 * `detail` is the message's part after the catalogue's words, apart: the console says the code
 * in its own language and adds the detail where it helps.
 */
export function adminErrorHandler(log: (line: string) => void): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const apiErr = toApiError(err);
    logIfUnexpected(log, apiErr, err, req.method, req.originalUrl);
    res.status(apiErr.def.httpStatus).json({ error: { code: apiErr.code, message: apiErr.message, ...(apiErr.detail ? { detail: apiErr.detail } : {}) } });
  };
}

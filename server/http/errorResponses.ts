import type { ErrorRequestHandler, Response } from 'express';
import { ApiError, RESULT_CODES } from '../errors.js';

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

/** The spec's envelope for a failure: `{ AuthMsg: { ResultCode, ResultMessage } }`. */
export function sendEnvelopeError(res: Response, err: ApiError): void {
  const status = err.def.transport ? err.def.httpStatus : 200;
  res.status(status).json({ AuthMsg: { ResultCode: err.code, ResultMessage: err.message } });
}

/** Success envelope plus the endpoint's own fields. */
export function sendEnvelope(res: Response, body: Record<string, unknown>): void {
  res.json({ AuthMsg: { ResultCode: RESULT_CODES.OK.code, ResultMessage: RESULT_CODES.OK.message }, ...body });
}

/**
 * The error middleware of the spec API (registered after its routes). Unexpected errors are
 * logged with their stack; the client only ever sees the catalogue's message.
 */
export function envelopeErrorHandler(log: (line: string) => void): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const apiErr = toApiError(err);
    if (apiErr.code === RESULT_CODES.SERVER_ERROR.code) log(`Error on ${req.method} ${req.originalUrl}: ${(err as Error)?.stack ?? String(err)}`);
    sendEnvelopeError(res, apiErr);
  };
}

/** The admin API's error middleware: real HTTP statuses, `{ error: { code, message } }`. */
export function adminErrorHandler(log: (line: string) => void): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) return next(err);
    const apiErr = toApiError(err);
    if (apiErr.code === RESULT_CODES.SERVER_ERROR.code) log(`Error on ${req.method} ${req.originalUrl}: ${(err as Error)?.stack ?? String(err)}`);
    res.status(apiErr.def.httpStatus).json({ error: { code: apiErr.code, message: apiErr.message } });
  };
}

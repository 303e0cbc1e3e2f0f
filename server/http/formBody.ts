import busboy from 'busboy';
import express, { type RequestHandler } from 'express';
import { ApiError } from '../core/errors.js';

/**
 * Reads a form body: application/x-www-form-urlencoded (what spec 4.2 names) or
 * multipart/form-data with fields only. A request without a body passes with `req.body = {}`
 * (its parameters may be in the query). Mounted only on the routes that take a form, so that
 * streaming upload handlers get their request untouched.
 */
export function formBody(maxBytes: number): RequestHandler {
  const urlencoded = express.urlencoded({ extended: false, limit: maxBytes, parameterLimit: 100 });
  return (req, res, next) => {
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    if (type.startsWith('application/x-www-form-urlencoded')) return urlencoded(req, res, next);
    if (type.startsWith('multipart/form-data')) return void readMultipartFields(req, maxBytes).then((fields) => ((req.body = fields), next()), next);
    if (!hasBody(req.headers)) {
      req.body = {};
      return next();
    }
    next(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send application/x-www-form-urlencoded or multipart/form-data'));
  };
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

function readMultipartFields(req: express.Request, maxBytes: number): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      // busboy's limits default to unlimited: set every one.
      bb = busboy({ headers: req.headers, limits: { fieldNameSize: 100, fieldSize: maxBytes, fields: 100, files: 0, parts: 100, headerPairs: 100 } });
    } catch {
      return reject(new ApiError('MALFORMED_REQUEST', 'multipart boundary missing'));
    }
    const fields: Record<string, string> = {};
    let failure: ApiError | undefined;
    let received = 0;
    const fail = (e: ApiError) => {
      failure ??= e;
    };
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated || info.nameTruncated) fail(new ApiError('PAYLOAD_TOO_LARGE'));
      if (!(name in fields)) fields[name] = value;
    });
    bb.on('file', (_name, stream) => stream.resume());
    bb.on('filesLimit', () => fail(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'this endpoint takes no file; upload files through /Api/Video/Upload or the widgets')));
    bb.on('fieldsLimit', () => fail(new ApiError('PAYLOAD_TOO_LARGE')));
    bb.on('partsLimit', () => fail(new ApiError('PAYLOAD_TOO_LARGE')));
    bb.on('error', () => {
      fail(new ApiError('MALFORMED_REQUEST', 'broken multipart body'));
      req.unpipe(bb);
      req.resume();
      reject(failure);
    });
    bb.on('close', () => (failure ? reject(failure) : resolve(fields)));
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes && !failure) {
        fail(new ApiError('PAYLOAD_TOO_LARGE'));
        req.unpipe(bb);
        req.resume();
        reject(failure);
      }
    });
    req.pipe(bb);
  });
}

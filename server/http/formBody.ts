import busboy from 'busboy';
import express, { type RequestHandler } from 'express';
import { ApiError } from '../core/errors.js';

/**
 * Reads a form body: application/x-www-form-urlencoded (what spec 4.2 names) or
 * multipart/form-data with fields only. A request without a body passes with `req.body = {}`
 * (its parameters may be in the query). Mounted only on the routes that take a form, so that
 * streaming upload handlers get their request untouched.
 */
export function formBody(maxBytes: number, o: { fileBytes?: number } = {}): RequestHandler {
  const urlencoded = express.urlencoded({ extended: false, limit: maxBytes, parameterLimit: 100 });
  return (req, res, next) => {
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    if (type.startsWith('application/x-www-form-urlencoded')) return urlencoded(req, res, next);
    if (type.startsWith('multipart/form-data')) return void readMultipartFields(req, maxBytes, o.fileBytes).then((fields) => ((req.body = fields), next()), next);
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

/** A file a form carried (`formBody` with `fileBytes`): its field name, the name it was sent under, its bytes. */
export interface FormFile {
  field: string;
  filename: string;
  bytes: Buffer;
  /** It was longer than `fileBytes`: `bytes` holds its start only. The route says what that means. */
  truncated: boolean;
}

const FILES = new WeakMap<object, FormFile>();

/** The file of a form read by `formBody` with `fileBytes`; undefined when it had none. */
export function formFile(req: object): FormFile | undefined {
  return FILES.get(req);
}

/**
 * The fields of a multipart body; with `fileBytes`, also one file of at most that many bytes,
 * kept in memory (a caption file: small by its own limit), as {@link formFile} gives it.
 */
function readMultipartFields(req: express.Request, maxBytes: number, fileBytes?: number): Promise<Record<string, string>> {
  if (fileBytes !== undefined) maxBytes += fileBytes;
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      // busboy's limits default to unlimited: set every one.
      bb = busboy({ headers: req.headers, limits: { fieldNameSize: 100, fieldSize: maxBytes, fields: 100, files: fileBytes === undefined ? 0 : 1, parts: 100, headerPairs: 100, ...(fileBytes !== undefined ? { fileSize: fileBytes } : {}) } });
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
    bb.on('file', (name, stream, info) => {
      if (fileBytes === undefined) return void stream.resume();
      const chunks: Buffer[] = [];
      let truncated = false;
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => (truncated = true));
      stream.on('end', () => FILES.set(req, { field: name, filename: info.filename ?? '', bytes: Buffer.concat(chunks), truncated }));
    });
    bb.on('filesLimit', () => fail(new ApiError(fileBytes === undefined ? 'UNSUPPORTED_MEDIA_TYPE' : 'MALFORMED_REQUEST', fileBytes === undefined ? 'this endpoint takes no file; upload files through /Api/Video/Upload or the widgets' : 'send one file')));
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

import { EXPOSED_HEADERS, type ServerOptions as TusServerOptions } from '@tus/server';
import { ApiError } from '../../core/errors.js';
import { widgetErrorText } from '../../widget/uploadPage.js';

/** Where the tus endpoint answers (spec 4.5 leaves the receiving address open). */
export const TUS_PATH = '/upload/tus';

/** The header an upload page sends on every tus request, with the credential of openUploadSession. */
export const CREDENTIAL_HEADER = 'X-Upload-Credential';

/**
 * Response header of the final PATCH: the video's status once its file was checked (5). A file
 * that is not a video gets a 422 refusal instead (the video stays in 7 and takes another file).
 */
export const VIDEO_STATUS_HEADER = 'X-Video-Status';

/** The headers of ours a page on another origin may read, beyond @tus/server's own (its `exposedHeaders` option). */
export const TUS_EXPOSED_HEADERS = [VIDEO_STATUS_HEADER];

/**
 * The CORS headers @tus/server puts on its own answers, given no allowedOrigins (any origin), no
 * allowedCredentials and {@link TUS_EXPOSED_HEADERS}, for the answers the endpoint makes itself.
 * They must follow those options of the Server (tusUpload.ts).
 */
export const TUS_CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': [EXPOSED_HEADERS, ...TUS_EXPOSED_HEADERS].join(', '),
};

/** A request as @tus/server's hooks receive it (a web Request, the Node one riding along). */
export type TusRequest = Parameters<NonNullable<TusServerOptions['onUploadCreate']>>[0];

/**
 * An ApiError as a tus answer: the catalogue's HTTP status, except 409 (tus clients take 409
 * as an offset conflict and retry) which becomes 403; the body is the spec's widget error text.
 * NOT_A_VIDEO's 422 is a 4xx that tus-js-client does not retry. Anything else is rethrown:
 * @tus/server answers it with 500.
 */
export function tusRefusal(err: unknown): { status_code: number; body: string } {
  if (!(err instanceof ApiError)) throw err;
  const status = err.def.httpStatus === 409 ? 403 : err.def.httpStatus;
  return { status_code: status, body: `${widgetErrorText(err)}\n` };
}

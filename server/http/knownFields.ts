/**
 * The admin API's JSON bodies, held to the fields each request knows. A field it does not know is
 * refused with a 400 that names it, never ignored: `{"mediaAccess": "signed"}` sent to a version
 * without that setting, or a misspelt `callbackURL`, would otherwise answer 200 and change
 * nothing, and the admin would believe it had.
 */
import { ApiError } from '../core/errors.js';

/** `body` as an object whose every field is one of `known`; throws INVALID_PARAMETER naming the first that is not. */
export function knownFields(body: unknown, known: readonly string[]): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID_PARAMETER', 'the body must be a JSON object');
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) throw new ApiError('INVALID_PARAMETER', `"${key}" is not a field of this request (its fields: ${known.join(', ')})`);
  }
  return body as Record<string, unknown>;
}

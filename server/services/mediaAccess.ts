/**
 * Who may fetch an application's media (AppRecord.mediaAccess): the addresses its answers carry.
 * A 'public' application's are the plain `<base>/media/...`; a 'signed' one's carry a token of the
 * video and an expiry in their path (keys/mediaTokens.ts), which delivery checks
 * (services/mediaDelivery.ts), and its plain addresses are refused.
 */
import { DEFAULT_MEDIA_TTL_SECONDS, type AppRecord, type AppStore } from '../storage/types.js';
import { SIGNED_SEGMENT, type MediaTokens } from '../keys/mediaTokens.js';
import type { ViewContext } from '../videos/videoView.js';
import { ApiError } from '../core/errors.js';
import { MEDIA_TTL_RANGE } from '../core/mediaTtl.js';


export class MediaAccess {
  constructor(
    private readonly deps: { apps: Pick<AppStore, 'get'>; tokens: MediaTokens },
    private readonly now: () => number = Date.now,
  ) {}

  /** What signs and checks the tokens (delivery checks with the same). */
  get tokens(): MediaTokens {
    return this.deps.tokens;
  }

  /**
   * `ctx` for answers to (or about) `app`: a signed application's media addresses carry tokens
   * good for `ttlSeconds` (its own lifetime when not given). A public application's: `ctx` itself.
   */
  view(app: Pick<AppRecord, 'mediaAccess' | 'mediaTtlSeconds'>, ctx: ViewContext, ttlSeconds?: number): ViewContext {
    if (app.mediaAccess !== 'signed') return ctx;
    const ttl = ttlSeconds ?? app.mediaTtlSeconds ?? DEFAULT_MEDIA_TTL_SECONDS;
    const now = this.now();
    const { tokens } = this.deps;
    const mediaToken = (videoId: string) => tokens.sign(videoId, ttl, 'media', now);
    return {
      ...ctx,
      mediaToken,
      mediaPrefix: (videoId) => `${ctx.baseUrl}/media/${SIGNED_SEGMENT}/${mediaToken(videoId)}`,
      // A cover's token opens the cover only: cover addresses travel furthest (lists, previews).
      coverPrefix: (videoId) => `${ctx.baseUrl}/media/${SIGNED_SEGMENT}/${tokens.sign(videoId, ttl, 'cover', now)}`,
      mediaEpoch: tokens.epoch(ttl, now),
      mediaExpiresAt: tokens.expiryFor(ttl, now) * 1000,
    };
  }

  /** {@link view} for the application `appId` (the console's answers); `ctx` if there is none. */
  async viewFor(appId: string, ctx: ViewContext, ttlSeconds?: number): Promise<ViewContext> {
    const app = await this.deps.apps.get(appId);
    return app ? this.view(app, ctx, ttlSeconds) : ctx;
  }
}

/** A lifetime of signed addresses as given (admin API, console): whole seconds in {@link MEDIA_TTL_RANGE}. */
export function validMediaTtl(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < MEDIA_TTL_RANGE.min || v > MEDIA_TTL_RANGE.max) {
    throw new ApiError('INVALID_PARAMETER', `${field} must be a whole number of seconds from ${MEDIA_TTL_RANGE.min} to ${MEDIA_TTL_RANGE.max}`);
  }
  return v;
}

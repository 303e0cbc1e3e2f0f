import { ApiError } from '../core/errors.js';
import type { AppView } from '../http/adminApiTypes.js';
import { DEFAULT_MEDIA_TTL_SECONDS, type AppPatchFields, type AppRecord, type AppStore, type MediaAccess as MediaAccessName } from '../storage/types.js';
import { validMediaTtl } from './mediaAccess.js';
import { type ApiCaller, validApiNetworks } from '../auth/apiNetworks.js';
import { generateAppId, generateSecret } from '../core/tokens.js';

export interface AppPatch {
  name?: unknown;
  callbackUrl?: unknown;
  disabled?: unknown;
  grants?: unknown;
  apiNetworks?: unknown;
  wholeLadderFirst?: unknown;
  mediaAccess?: unknown;
  mediaTtlSeconds?: unknown;
}

const MAX_NAME = 100;
const MAX_URL = 2000;

/** Applications: issue, list, change, rotate secrets. Used by the admin API and the CLI alike. */
export class AppService {
  constructor(
    private readonly apps: AppStore,
    private readonly now: () => number = Date.now,
    /** Where the addresses of recent API calls are kept (AuthService); none: the view shows none. */
    private readonly callers?: { recentCallers(appId: string): Promise<ApiCaller[]> },
  ) {}

  async create(input: { name?: unknown; callbackUrl?: unknown; apiNetworks?: unknown; wholeLadderFirst?: unknown; mediaAccess?: unknown; mediaTtlSeconds?: unknown }): Promise<AppView & { appSecret: string }> {
    const name = validName(input.name);
    const callbackUrl = input.callbackUrl === undefined || input.callbackUrl === null ? '' : validCallbackUrl(input.callbackUrl);
    const apiNetworks = input.apiNetworks === undefined ? [] : validApiNetworks(input.apiNetworks);
    const wholeLadderFirst = input.wholeLadderFirst === undefined ? false : validFlag('wholeLadderFirst', input.wholeLadderFirst);
    const now = this.now();
    const mediaAccess = input.mediaAccess === undefined ? 'public' : validMediaAccess(input.mediaAccess);
    const mediaTtlSeconds = input.mediaTtlSeconds === undefined ? DEFAULT_MEDIA_TTL_SECONDS : validMediaTtl('mediaTtlSeconds', input.mediaTtlSeconds);
    const app: AppRecord = {
      appId: generateAppId(), name, secret: generateSecret(), callbackUrl, disabled: false, apiNetworks, wholeLadderFirst, mediaAccess, mediaTtlSeconds, createdAt: now, updatedAt: now,
    };
    await this.apps.insert(app);
    return { ...(await this.view(app)), appSecret: app.secret };
  }

  async list(): Promise<AppView[]> {
    return Promise.all((await this.apps.list()).map((a) => this.view(a)));
  }

  /** Every application's name by AppId (the console's lists of videos name each one's application). */
  async names(): Promise<Map<string, string>> {
    return new Map((await this.apps.list()).map((a) => [a.appId, a.name]));
  }

  /** How many applications there are, and how many of them are disabled (the console's overview). */
  async counts(): Promise<{ total: number; disabled: number }> {
    const apps = await this.apps.list();
    return { total: apps.length, disabled: apps.filter((a) => a.disabled).length };
  }

  async get(appId: string): Promise<AppView> {
    return this.view(await this.require(appId));
  }

  async update(appId: string, patch: AppPatch): Promise<AppView> {
    await this.require(appId);
    const fields: AppPatchFields = {};
    if (patch.name !== undefined) fields.name = validName(patch.name);
    if (patch.callbackUrl !== undefined) fields.callbackUrl = patch.callbackUrl === null ? '' : validCallbackUrl(patch.callbackUrl);
    if (patch.disabled !== undefined) fields.disabled = validFlag('disabled', patch.disabled);
    if (patch.wholeLadderFirst !== undefined) fields.wholeLadderFirst = validFlag('wholeLadderFirst', patch.wholeLadderFirst);
    if (patch.apiNetworks !== undefined) fields.apiNetworks = validApiNetworks(patch.apiNetworks);
    if (patch.mediaAccess !== undefined) fields.mediaAccess = validMediaAccess(patch.mediaAccess);
    if (patch.mediaTtlSeconds !== undefined) fields.mediaTtlSeconds = validMediaTtl('mediaTtlSeconds', patch.mediaTtlSeconds);
    let grants: string[] | undefined;
    if (patch.grants !== undefined) {
      if (!Array.isArray(patch.grants) || !patch.grants.every((g) => typeof g === 'string')) {
        throw new ApiError('INVALID_PARAMETER', 'grants must be an array of AppIds');
      }
      grants = [...new Set(patch.grants as string[])].filter((g) => g !== appId);
      for (const g of grants) if (!(await this.apps.get(g))) throw new ApiError('INVALID_PARAMETER', `grants: no application ${g}`);
    }
    const updated = await this.apps.update(appId, fields, this.now());
    if (!updated) throw new ApiError('APP_NOT_FOUND');
    if (grants) await this.apps.setGrants(appId, grants);
    return this.view(updated);
  }

  /** Issues a new secret; the old one stops working at once. */
  async rotateSecret(appId: string): Promise<{ appId: string; appSecret: string }> {
    await this.require(appId);
    const secret = generateSecret();
    await this.apps.update(appId, { secret }, this.now());
    return { appId, appSecret: secret };
  }

  private async require(appId: string): Promise<AppRecord> {
    const app = await this.apps.get(appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    return app;
  }

  private async view(app: AppRecord): Promise<AppView> {
    return {
      appId: app.appId,
      name: app.name,
      callbackUrl: app.callbackUrl,
      disabled: app.disabled,
      grants: await this.apps.grants(app.appId),
      apiNetworks: app.apiNetworks,
      wholeLadderFirst: app.wholeLadderFirst ?? false,
      mediaAccess: app.mediaAccess ?? 'public',
      mediaTtlSeconds: app.mediaTtlSeconds ?? DEFAULT_MEDIA_TTL_SECONDS,
      recentCallers: ((await this.callers?.recentCallers(app.appId)) ?? []).map((c) => ({ address: c.address, lastSeen: new Date(c.lastSeen).toISOString(), allowed: c.allowed })),
      createdAt: new Date(app.createdAt).toISOString(),
      updatedAt: new Date(app.updatedAt).toISOString(),
    };
  }
}

function validMediaAccess(v: unknown): MediaAccessName {
  if (v !== 'public' && v !== 'signed') throw new ApiError('INVALID_PARAMETER', 'mediaAccess must be "public" or "signed"');
  return v;
}

function validFlag(name: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new ApiError('INVALID_PARAMETER', `${name} must be true or false`);
  return v;
}

function validName(v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '') throw new ApiError('INVALID_PARAMETER', 'name is required');
  if ([...v.trim()].length > MAX_NAME) throw new ApiError('INVALID_PARAMETER', `name is longer than ${MAX_NAME} characters`);
  return v.trim();
}

/** A callback address: absolute http(s), or empty for none. */
export function validCallbackUrl(v: unknown): string {
  if (typeof v !== 'string') throw new ApiError('INVALID_PARAMETER', 'callbackUrl must be a string');
  const s = v.trim();
  if (s === '') return '';
  if (s.length > MAX_URL) throw new ApiError('INVALID_PARAMETER', 'callbackUrl is too long');
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new ApiError('INVALID_PARAMETER', 'callbackUrl is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ApiError('INVALID_PARAMETER', 'callbackUrl must be http or https');
  return url.toString();
}

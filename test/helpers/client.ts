import crypto from 'node:crypto';

/** Spec section 5, computed the way an application server would: MD5 of Timestamp + secret. */
export function specToken(timestamp: string, secret: string): string {
  return crypto.createHash('md5').update(timestamp + secret, 'utf8').digest('hex');
}

export function nowSeconds(): string {
  return String(Math.floor(Date.now() / 1000));
}

export interface SpecResponse {
  status: number;
  contentType: string;
  body: any;
}

/** A small client of the spec API for one application, as an application server would write it. */
export class SpecClient {
  constructor(
    readonly baseUrl: string,
    readonly appId: string,
    readonly secret: string,
  ) {}

  /** The three auth values of spec section 5, freshly computed (overridable for bad-input tests). */
  auth(overrides: Partial<Record<'AppId' | 'Timestamp' | 'Token', string>> = {}): Record<string, string> {
    const Timestamp = overrides.Timestamp ?? nowSeconds();
    return { AppId: this.appId, Timestamp, Token: specToken(Timestamp, this.secret), ...overrides };
  }

  async get(path: string, params: Record<string, string | number> = {}, auth = this.auth()): Promise<SpecResponse> {
    const qs = new URLSearchParams({ ...auth, ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])) });
    const res = await fetch(`${this.baseUrl}${path}?${qs}`);
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.json() };
  }

  async post(path: string, fields: Record<string, string | number> = {}, auth = this.auth()): Promise<SpecResponse> {
    const body = new URLSearchParams({ ...auth, ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])) });
    const res = await fetch(`${this.baseUrl}${path}`, { method: 'POST', body });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.json() };
  }

  /** Registers a video (spec 4.2) and returns its id; throws if the call did not succeed. */
  async register(fields: Record<string, string | number> = {}): Promise<string> {
    const r = await this.post('/Api/Video/Post', { VideoTitle: 'A video', SourceFileGetType: 1, ...fields });
    if (r.body?.AuthMsg?.ResultCode !== '1') throw new Error(`register failed: ${JSON.stringify(r.body)}`);
    return r.body.VideoId as string;
  }
}

/** The admin API, with the admin token. */
export class AdminClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string,
  ) {}

  async request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${this.baseUrl}/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  async createApp(name = 'test app', callbackUrl?: string): Promise<{ appId: string; appSecret: string }> {
    const r = await this.request('POST', '/apps', { name, callbackUrl });
    if (r.status !== 201) throw new Error(`createApp failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
}

import crypto from 'node:crypto';
import http from 'node:http';

/** Spec section 5, computed the way an application server would: MD5 of Timestamp + secret. */
export function specToken(timestamp: string, secret: string): string {
  return crypto.createHash('md5').update(timestamp + secret, 'utf8').digest('hex');
}

export function nowSeconds(offsetSeconds = 0): string {
  return String(Math.floor(Date.now() / 1000) + offsetSeconds);
}

export interface SpecResponse {
  status: number;
  contentType: string;
  /** The parsed JSON body (undefined if the body was not JSON). */
  body: any;
  /** The body as sent, for checks that no stack trace or internal detail leaked. */
  text: string;
  headers: Headers;
}

async function toSpecResponse(res: Response): Promise<SpecResponse> {
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body, text, headers: res.headers };
}

type Fields = Record<string, string | number>;

function stringify(fields: Fields): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)]));
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

  /** The query string of a GET call: the auth values, then the endpoint's parameters. */
  query(params: Fields = {}, auth: Record<string, string> = this.auth()): string {
    return new URLSearchParams({ ...auth, ...stringify(params) }).toString();
  }

  async get(path: string, params: Fields = {}, auth = this.auth()): Promise<SpecResponse> {
    return toSpecResponse(await fetch(`${this.baseUrl}${path}?${this.query(params, auth)}`));
  }

  /** POST as spec 4.2 says: application/x-www-form-urlencoded. */
  async post(path: string, fields: Fields = {}, auth = this.auth()): Promise<SpecResponse> {
    const body = new URLSearchParams({ ...auth, ...stringify(fields) });
    return toSpecResponse(await fetch(`${this.baseUrl}${path}`, { method: 'POST', body }));
  }

  /** POST as multipart/form-data (accepted too). */
  async postMultipart(path: string, fields: Fields = {}, auth = this.auth()): Promise<SpecResponse> {
    const body = new FormData();
    for (const [k, v] of Object.entries({ ...auth, ...stringify(fields) })) body.append(k, v);
    return toSpecResponse(await fetch(`${this.baseUrl}${path}`, { method: 'POST', body }));
  }

  /** Any request, for transport-level tests (methods, content types, raw bodies). */
  async raw(method: string, path: string, init: { headers?: Record<string, string>; body?: BodyInit } = {}): Promise<SpecResponse> {
    return toSpecResponse(await fetch(`${this.baseUrl}${path}`, { method, headers: init.headers, body: init.body }));
  }

  /** Registers a video (spec 4.2) and returns its id; throws if the call did not succeed. */
  async register(fields: Fields = {}): Promise<string> {
    const r = await this.post('/Api/Video/Post', { VideoTitle: 'A video', SourceFileGetType: 1, ...fields });
    if (r.body?.AuthMsg?.ResultCode !== '1') throw new Error(`register failed: ${r.text}`);
    return r.body.VideoId as string;
  }
}

/**
 * A GET from a chosen local address (any of 127.0.0.0/8 reaches a loopback listener on Linux), so
 * that per-address limits can be seen from two distinct clients.
 */
export function getFrom(localAddress: string, url: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { localAddress, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
  });
}

/** The admin API, with the admin token. */
export class AdminClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string,
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
    const res = await fetch(`${this.baseUrl}/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  async createApp(name = 'test app', callbackUrl?: string, more: { wholeLadderFirst?: boolean } = {}): Promise<{ appId: string; appSecret: string }> {
    const r = await this.request('POST', '/apps', { name, callbackUrl, ...more });
    if (r.status !== 201) throw new Error(`createApp failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
}

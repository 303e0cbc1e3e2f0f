/**
 * The console's one way to the server: the admin API under /admin/api, with the session cookie
 * and the session's secret in `X-Vop-Console`, which the server requires of every request made
 * with the cookie (the cookie reaches every port of the host; the secret only this page).
 * Failures become {@link ApiError}s whose message a person can read.
 */
import type { VopDesktopApi } from '../../main/preloadApi.js';
import { messages } from './i18n.js';
import { refusalText } from './serverWords.js';

declare global {
  interface Window {
    /** Present in the desktop app (main/preload.ts): the shell hands over the admin token. */
    vopDesktop?: VopDesktopApi;
  }
}

export const API_BASE = '/admin/api';

/** A failed call: the server's `{error: {code, message}}`, or what went wrong on the way. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The server's whole `error` object: some answers say more than code and message (a refused setting's `field`). */
    readonly detail: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The admin token is missing, wrong, or the session ended. */
  get unauthorized(): boolean {
    return this.status === 401;
  }

  /** The session lives but this page does not hold its secret (server code 412): log in again. */
  get secretRefused(): boolean {
    return this.code === SECRET_REFUSED_CODE;
  }
}

/** The server's result code for a cookie request without the session's secret (server/core/errors.ts). */
const SECRET_REFUSED_CODE = '412';

/**
 * Where the session's secret is kept: this origin's localStorage. The server hands it out only
 * at login, in exchange for the admin token, and no request with the cookie alone gives it back
 * (another server on this host receives the cookie, and could ask for it too). Storage is per
 * origin, port included, unlike the cookie: a page on another port cannot read it, and every tab
 * of this origin shares it as they share the cookie, so a reload or a new tab keeps working and a
 * login in one tab (a new cookie) reaches the others. Without storage (disabled by the browser),
 * memory: a reload then asks for the token again.
 */
const SECRET_KEY = 'vop.consoleSecret';
let secretInMemory: string | undefined;

function sessionSecret(): string | undefined {
  try {
    return window.localStorage.getItem(SECRET_KEY) ?? secretInMemory;
  } catch {
    return secretInMemory;
  }
}

function keepSessionSecret(secret: string | undefined): void {
  secretInMemory = secret;
  try {
    if (secret === undefined) window.localStorage.removeItem(SECRET_KEY);
    else window.localStorage.setItem(SECRET_KEY, secret);
  } catch {
    // storage refused: memory it is
  }
}

/** Logs in with the admin token and keeps the session's secret the server answers with. */
export async function logIn(token: string): Promise<void> {
  const s = await api<{ consoleSecret: string }>('POST', '/session', { token }, { quiet401: true });
  keepSessionSecret(s.consoleSecret);
}

/** Logs out (the server ends the session) and forgets the secret, whatever the server said. */
export async function logOut(): Promise<void> {
  try {
    await api('DELETE', '/session', undefined, { quiet401: true });
  } finally {
    keepSessionSecret(undefined);
  }
}

type Listener = (err: ApiError) => void;
const unauthorizedListeners = new Set<Listener>();

/** Called when any call answers 401 (the session ended): the app goes back to the login. */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

/** Tells the app the session is over (a 401, or the event stream refused after a restart). */
export function notifyUnauthorized(err: ApiError): void {
  for (const l of unauthorizedListeners) l(err);
}

/** Calls the admin API; resolves with the parsed JSON (undefined for 204). */
export async function api<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, opts: { quiet401?: boolean } = {}): Promise<T> {
  return send<T>(method, path, body === undefined ? undefined : { type: 'application/json', body: JSON.stringify(body) }, opts);
}

/**
 * POSTs a form to the admin API as multipart/form-data (a file with its fields); resolves with the
 * parsed JSON. The browser writes the Content-Type itself, with the parts' boundary.
 */
export async function apiForm<T>(path: string, form: FormData): Promise<T> {
  return send<T>('POST', path, { body: form });
}

/** One request to the admin API, the answer read as {@link api} describes; `type` is the body's Content-Type, if it is ours to set. */
async function send<T>(method: string, path: string, payload: { type?: string; body: BodyInit } | undefined, opts: { quiet401?: boolean } = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${API_BASE}${path}`, {
      method,
      credentials: 'same-origin',
      // Without a secret yet (the login), any value: the login asks only that the header be there.
      headers: { 'X-Vop-Console': sessionSecret() ?? 'login', Accept: 'application/json', ...(payload?.type ? { 'Content-Type': payload.type } : {}) },
      body: payload?.body,
    });
  } catch {
    throw new ApiError(0, 'NETWORK', messages().common.noAnswer);
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const e = (data as { error?: { code?: string; message?: string } & Record<string, unknown> } | undefined)?.error;
    const err = new ApiError(res.status, e?.code ?? '', e?.message ?? (text.trim() || messages().common.serverAnswered(res.status, res.statusText)), e);
    if (err.unauthorized && !opts.quiet401) notifyUnauthorized(err);
    throw err;
  }
  return data as T;
}

/** A readable message for anything thrown: a refusal of the server's in the console's language. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError && err.code) {
    const detail = typeof err.detail.detail === 'string' ? err.detail.detail : '';
    return refusalText({ code: err.code, message: err.message, detail }, messages());
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

/** `a=1&b=2` from the defined values of `params`. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Copies text: through the desktop shell, else the clipboard API, else a selection. */
export async function copyText(text: string): Promise<void> {
  if (window.vopDesktop) return window.vopDesktop.copyText(text);
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // Plain http on a LAN address is not a secure context: fall back to a selection copy.
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error(messages().common.copyRefused);
}

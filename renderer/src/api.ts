/**
 * The console's one way to the server: the admin API under /admin/api, with the session cookie
 * and the `X-Vop-Console: 1` header the server requires of cookie requests that change anything.
 * Failures become {@link ApiError}s whose message a person can read.
 */
import type { VopDesktopApi } from '../../main/preloadApi.js';
import { messages } from './i18n.js';

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
  let res: Response;
  try {
    res = await fetch(`${API_BASE}${path}`, {
      method,
      credentials: 'same-origin',
      headers: { 'X-Vop-Console': '1', Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
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

/** A readable message for anything thrown. */
export function errorMessage(err: unknown): string {
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

/**
 * The server's pushed events (GET /admin/api/events, Server-Sent Events): one EventSource for
 * the whole console, handed out to the pages that listen. EventSource cannot send the session's
 * secret as a header, so each connection first asks for a ticket (POST /events/ticket, with the
 * secret) and puts it in the stream's URL; the server takes it for a minute, for that stream
 * only. EventSource reconnects by itself with the same URL: within the minute that works, after
 * it the server refuses the stale ticket, the stream closes, and {@link connectEvents} starts
 * again with a new one.
 */
import { useEffect, useRef, useState } from 'react';
import { API_BASE, ApiError, api, notifyUnauthorized } from './api.js';
import { messages } from './i18n.js';
import type { ServerEvents } from './types.js';

type Name = keyof ServerEvents;
type Handler<N extends Name> = (data: ServerEvents[N]) => void;

const handlers = new Map<Name, Set<Handler<Name>>>();
const connectionListeners = new Set<(live: boolean) => void>();
let source: EventSource | undefined;
/** Counts connection attempts: a ticket that arrives after a disconnect (or a newer attempt) opens nothing. */
let attempt = 0;
/** A ticket is being asked for: the stream is on its way. */
let connecting = false;
let live = false;
/** The last `uploads` message, for pages opened after it came. */
let lastUploads: ServerEvents['uploads'] | undefined;

const NAMES: Name[] = ['job.state', 'job.progress', 'video.status', 'video.renditions', 'uploads'];
/** Wait before opening a stream again after the server refused one. */
const RECONNECT_MS = 3000;

function setLive(v: boolean) {
  live = v;
  connectionListeners.forEach((l) => l(v));
}

/** Opens the stream (once logged in). */
export function connectEvents(): void {
  if (source || connecting) return;
  connecting = true;
  const mine = ++attempt;
  api<{ ticket: string }>('POST', '/events/ticket').then(
    ({ ticket }) => {
      if (mine !== attempt) return;
      connecting = false;
      open(ticket);
    },
    (err: unknown) => {
      if (mine !== attempt) return;
      connecting = false;
      // A 401 has sent the app to the login already (api.ts); anything else: try again shortly.
      if (!(err instanceof ApiError && err.unauthorized)) window.setTimeout(connectEvents, RECONNECT_MS);
    },
  );
}

function open(ticket: string): void {
  const es = (source = new EventSource(`${API_BASE}/events?ticket=${encodeURIComponent(ticket)}`, { withCredentials: true }));
  es.onopen = () => setLive(true);
  es.onerror = () => {
    setLive(false);
    // EventSource retries a dropped connection by itself, but gives up on an answer that is not
    // a stream (a 401 once the ticket is stale, or once a restart ended the session): find out
    // which, and act on it.
    if (source !== es || es.readyState !== EventSource.CLOSED) return;
    source = undefined;
    api<{ loggedIn: boolean }>('GET', '/session', undefined, { quiet401: true }).then(
      (s) => (s.loggedIn ? window.setTimeout(connectEvents, RECONNECT_MS) : notifyUnauthorized(new ApiError(401, '', messages().common.sessionEnded))),
      () => window.setTimeout(connectEvents, RECONNECT_MS),
    );
  };
  for (const name of NAMES) {
    es.addEventListener(name, (e) => {
      let data: unknown;
      try {
        data = JSON.parse((e as MessageEvent<string>).data);
      } catch {
        return;
      }
      if (name === 'uploads') lastUploads = data as ServerEvents['uploads'];
      handlers.get(name)?.forEach((h) => h(data as never));
    });
  }
}

/** Closes the stream (on logout). */
export function disconnectEvents(): void {
  attempt++;
  connecting = false;
  source?.close();
  source = undefined;
  lastUploads = undefined;
  setLive(false);
}

/** Calls `handler` with every `name` event while the component is mounted. */
export function useServerEvent<N extends Name>(name: N, handler: Handler<N>): void {
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(() => {
    const h: Handler<N> = (d) => ref.current(d);
    let set = handlers.get(name);
    if (!set) handlers.set(name, (set = new Set()));
    set.add(h as Handler<Name>);
    if (name === 'uploads' && lastUploads) h(lastUploads as ServerEvents[N]);
    return () => {
      set.delete(h as Handler<Name>);
    };
  }, [name]);
}

/** Whether the event stream is connected. */
export function useEventsLive(): boolean {
  const [v, setV] = useState(live);
  useEffect(() => {
    connectionListeners.add(setV);
    return () => {
      connectionListeners.delete(setV);
    };
  }, []);
  return v;
}

/**
 * The server's pushed events (GET /admin/api/events, Server-Sent Events): one EventSource for
 * the whole console, handed out to the pages that listen. EventSource reconnects by itself.
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
  if (source) return;
  source = new EventSource(`${API_BASE}/events`, { withCredentials: true });
  source.onopen = () => setLive(true);
  source.onerror = () => {
    setLive(false);
    // EventSource retries a dropped connection by itself, but gives up on an answer that is not
    // a stream (a 401 once a restart ended the session): find out which, and act on it.
    if (source?.readyState !== EventSource.CLOSED) return;
    source = undefined;
    api<{ loggedIn: boolean }>('GET', '/session', undefined, { quiet401: true }).then(
      (s) => (s.loggedIn ? window.setTimeout(connectEvents, RECONNECT_MS) : notifyUnauthorized(new ApiError(401, '', messages().common.sessionEnded))),
      () => window.setTimeout(connectEvents, RECONNECT_MS),
    );
  };
  for (const name of NAMES) {
    source.addEventListener(name, (e) => {
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

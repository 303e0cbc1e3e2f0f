/**
 * A small router over the History API: the console's pages live under /console/ (the server
 * answers index.html for every path there), links are real <a href> so they work with the
 * keyboard, middle-click and "open in new tab".
 */
import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react';

export const BASE = '/console';

/** The path inside the console ('/', '/videos/<id>', …) and its query. */
export interface Location {
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  const p = window.location.pathname;
  const path = p.startsWith(BASE) ? p.slice(BASE.length) || '/' : '/';
  return { path, search: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

/** Goes to `to` (a console path like '/videos?status=7'). */
export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = `${BASE}${to}`;
  if (opts.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  if (!opts.replace) window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return loc;
}

/** Matches `/videos/:id`-style patterns; resolves with the named parts. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const p = pattern.split('/').filter(Boolean);
  const s = path.split('/').filter(Boolean);
  if (p.length !== s.length) return undefined;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const want = p[i]!;
    const got = decodeURIComponent(s[i]!);
    if (want.startsWith(':')) out[want.slice(1)] = got;
    else if (want !== got) return undefined;
  }
  return out;
}

/** An <a> to a console path that navigates without a reload. */
export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const handle = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={`${BASE}${to}`} onClick={handle} {...rest} />;
}

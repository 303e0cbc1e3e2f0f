import fs from 'node:fs';
import path from 'node:path';
import express, { type Response, type Router } from 'express';

/** The built console (`npm run build:console` writes it; renderer/vite.config.ts). */
export const CONSOLE_DIST = path.resolve(import.meta.dirname, '../../renderer/dist');

/**
 * The console's pages may load only their own scripts and styles and talk only to this server;
 * media (renditions, covers) may come from the public URL, which can be another host.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob: http: https:",
  "media-src 'self' blob: http: https:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Serves the console at `/console`: its hashed assets (cached for a year), and `index.html` for
 * every other path under it (the console routes in the browser). Answers 503 with what to run
 * when the console has not been built. The API it calls is the admin API; nothing here needs auth.
 * `/` itself redirects to the console.
 */
export function consoleRouter(opts: { distDir?: string } = {}): Router {
  const dist = opts.distDir ?? CONSOLE_DIST;
  const r = express.Router();
  r.use(
    '/console/assets',
    express.static(path.join(dist, 'assets'), { immutable: true, maxAge: 365 * 24 * 3600_000, index: false, dotfiles: 'deny' }),
    // An asset of another build is missing, not a page: no index.html in its place.
    (_req: unknown, res: Response) => void res.status(404).type('text/plain; charset=utf-8').send('not found\n'),
  );
  const sendIndex = (res: Response) => {
    const index = path.join(dist, 'index.html');
    // Read on each request (it is small): a build made while the server runs is served at once.
    fs.readFile(index, (err, html) => {
      res.set({ 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-cache' });
      if (err) {
        res.status(503).type('text/plain; charset=utf-8').send('console not built: run npm run build:console\n');
        return;
      }
      res.set({ 'Content-Security-Policy': CSP, 'X-Frame-Options': 'DENY' }).type('html').send(html);
    });
  };
  r.get(['/console', '/console/{*rest}'], (_req, res) => sendIndex(res));
  // The server's root is what a person types after reading the addresses vop prints: it leads to
  // the console, for every client alike (a JSON 404 there told a new user nothing). The address
  // is relative, so that a proxy serving vop under a path prefix keeps it. GET and HEAD only.
  r.get('/', (_req, res) => {
    res.set({ 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' });
    res.redirect(302, 'console/');
  });
  return r;
}

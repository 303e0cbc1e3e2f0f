import express, { type Response, type Router } from 'express';
import { ApiError } from '../core/errors.js';
import type { VopEventBus, VopEvents } from '../core/events.js';
import type { ConsoleSessions } from '../console/consoleSessions.js';
import type { UploadMonitor } from '../console/uploadMonitor.js';
import { createProgressThrottle } from './progressThrottle.js';

/** Where the stream is, under /admin/api; requireAdmin lets a ticket open it (and nothing else). */
export const EVENTS_PATH = '/events';

/** Options of {@link adminEventsRouter}. */
export interface AdminEventsOptions {
  /** Least time between two `job.progress` messages of one job (250 ms: at most 4 a second). */
  progressIntervalMs: number;
  /** A comment line this often keeps proxies and the browser from closing an idle stream. */
  heartbeatMs: number;
  /** How often the tus uploads in progress are read while a console is watching. */
  uploadPollMs: number;
}

export const DEFAULT_ADMIN_EVENTS_OPTIONS = {
  progressIntervalMs: 250,
  heartbeatMs: 15_000,
  uploadPollMs: 1_000,
} satisfies AdminEventsOptions;

export interface AdminEventsDeps {
  events: VopEventBus;
  uploads: UploadMonitor;
  /** The console's sessions, whose tickets open the stream. */
  sessions: ConsoleSessions;
  options?: Partial<AdminEventsOptions>;
  log: (line: string) => void;
}

/** The events stream and a way to end every open stream (the server's close calls it). */
export interface AdminEvents {
  router: Router;
  /** Ends every open stream and stops listening, so a shutdown does not wait on idle consoles. */
  closeAll(): void;
}

type JobProgress = VopEvents['job.progress'][0];

/**
 * `GET /admin/api/events`: Server-Sent Events for the console, so it is told rather than
 * polling. Messages (`event:` name, JSON `data:`):
 *
 *   job.state     {jobId, type, videoId, state, error}           every change
 *   job.progress  {jobId, type, videoId, percent, etaSeconds?, speed?}   at most 4 a second per job
 *   video.status  {videoId, appId, from, to, reason, at}           every change
 *   video.renditions {videoId, appId, ladder, labels}              a playable video's ladder landed
 *                                                                  (ladder '') or gave up ('failed')
 *   uploads       {uploads: UploadInProgress[]}                    on connect, then when it changes
 *
 * plus a `: ping` comment every 15 s. Mounted behind requireAdmin. EventSource can send neither
 * an Authorization header nor the session's secret (X-Vop-Console), so the console first asks
 * `POST /events/ticket` (with its secret) for a ticket good for a minute, and opens
 * `/events?ticket=…` with its cookie; requireAdmin takes the ticket on this one GET.
 */
export function adminEventsRouter(deps: AdminEventsDeps): AdminEvents {
  const opts: AdminEventsOptions = { ...DEFAULT_ADMIN_EVENTS_OPTIONS, ...deps.options };
  const clients = new Set<Response>();
  let heartbeat: NodeJS.Timeout | undefined;
  let uploadPoll: NodeJS.Timeout | undefined;
  let lastUploads = '';
  let polling = false;

  const broadcast = (event: string, data: unknown) => {
    const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const res of clients) res.write(frame);
  };
  const progress = createProgressThrottle(opts.progressIntervalMs, (p) => broadcast('job.progress', p));

  const onProgress = (p: JobProgress) => progress.report(p);
  const onState = (s: VopEvents['job.state'][0]) => {
    if (s.state !== 'running') {
      // A progress report held back must not arrive after the job ended.
      progress.jobEnded(s.jobId);
    }
    broadcast('job.state', s);
  };
  const onStatus = (s: VopEvents['video.status'][0]) => broadcast('video.status', s);
  const onRenditions = (r: VopEvents['video.renditions'][0]) => broadcast('video.renditions', r);

  const pollUploads = async () => {
    if (polling) return;
    polling = true;
    try {
      const json = JSON.stringify({ uploads: await deps.uploads.list() });
      if (json !== lastUploads) {
        lastUploads = json;
        const frame = `event: uploads\ndata: ${json}\n\n`;
        for (const res of clients) res.write(frame);
      }
    } catch (err) {
      deps.log(`Console events: reading the uploads in progress failed: ${String(err)}`);
    } finally {
      polling = false;
    }
  };

  // Every node's events (a worker's progress reaches a console attached to an API node).
  const events = () => deps.events.everywhere;
  const start = () => {
    events().on('job.progress', onProgress);
    events().on('job.state', onState);
    events().on('video.status', onStatus);
    events().on('video.renditions', onRenditions);
    heartbeat = setInterval(() => {
      for (const res of clients) res.write(': ping\n\n');
    }, opts.heartbeatMs);
    uploadPoll = setInterval(() => void pollUploads(), opts.uploadPollMs);
    heartbeat.unref();
    uploadPoll.unref();
  };
  const stop = () => {
    events().off('job.progress', onProgress);
    events().off('job.state', onState);
    events().off('video.status', onStatus);
    events().off('video.renditions', onRenditions);
    clearInterval(heartbeat);
    clearInterval(uploadPoll);
    progress.clear();
    lastUploads = '';
  };

  const router = express.Router();
  router.post(`${EVENTS_PATH}/ticket`, async (req, res) => {
    const session = await deps.sessions.sessionOf(req);
    // A bearer token opens the stream with its header: tickets are the console session's.
    if (!session) throw new ApiError('INVALID_PARAMETER', "tickets are for the console's session; send the bearer token to /events instead");
    const { ticket, expiresAt } = deps.sessions.ticketOf(session);
    res.set('Cache-Control', 'no-store').json({ ticket, expiresAt: new Date(expiresAt).toISOString() });
  });
  router.get(EVENTS_PATH, async (req, res) => {
    res.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // Tells nginx-style proxies not to buffer the stream.
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    req.socket.setNoDelay(true);
    // A lost connection is retried by EventSource after this many ms.
    res.write('retry: 3000\n\n');
    if (clients.size === 0) start();
    clients.add(res);
    res.on('close', () => {
      clients.delete(res);
      if (clients.size === 0) stop();
    });
    // The newcomer gets the current uploads at once; the others only when they change.
    try {
      res.write(`event: uploads\ndata: ${JSON.stringify({ uploads: await deps.uploads.list() })}\n\n`);
    } catch (err) {
      deps.log(`Console events: reading the uploads in progress failed: ${String(err)}`);
    }
  });

  return {
    router,
    closeAll() {
      for (const res of clients) res.end();
      clients.clear();
      stop();
    },
  };
}

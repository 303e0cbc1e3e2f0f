/**
 * Views and watch time for the console (docs/watch.md, "Views and watch time"): a video's, per
 * day, and every video's per day for the overview's chart. Counted by services/viewCounter.ts.
 */
import express, { type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { VIDEO_ID_RE } from '../core/videoStatus.js';
import type { ViewCounter } from '../services/viewCounter.js';

/** The most days the overview's chart asks for. */
const MAX_DAYS = 366;

export function adminViewsRouter(views: Pick<ViewCounter, 'ofVideo' | 'lastDays'>): Router {
  const r = express.Router();
  r.get('/videos/:id/views', async (req, res) => {
    if (!VIDEO_ID_RE.test(req.params.id)) throw new ApiError('VIDEO_NOT_FOUND');
    res.set('Cache-Control', 'no-store').json(await views.ofVideo(req.params.id));
  });
  r.get('/views', async (req, res) => {
    const text = typeof req.query.days === 'string' ? req.query.days : '30';
    const days = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
    if (!(days >= 1 && days <= MAX_DAYS)) throw new ApiError('INVALID_PARAMETER', `days must be a whole number from 1 to ${MAX_DAYS}`);
    res.set('Cache-Control', 'no-store').json({ days: await views.lastDays(days) });
  });
  return r;
}

import { EventEmitter } from 'node:events';

/**
 * The server's typed events: how the ingest, transcoding and callback services hear about each
 * other without importing each other (hls.js-style event map, not subclassing).
 */
export interface VopEvents {
  /** A video was registered (spec 4.2). */
  'video.registered': [{ videoId: string; appId: string; sourceType: number }];
  /**
   * A video's Status changed (spec section 3); fired after the change is durable. `at` is the
   * change's time in Unix ms, as stored in its status history row.
   */
  'video.status': [{ videoId: string; appId: string; from: number; to: number; reason: string; at: number }];
  /**
   * A playable video's renditions changed, or where the rest of its ladder stands did: its ladder
   * landed (`ladder` ''), or gave up ('failed'). `labels`: what it lists now. Delivery's caches
   * drop the video on it; the console shows it.
   */
  'video.renditions': [{ videoId: string; appId: string; ladder: '' | 'pending' | 'failed'; labels: string[] }];
  /**
   * A video's text tracks (captions, chapters) changed: its application added or removed one
   * (services/captionService.ts). `ids`: the tracks it has now. Delivery's caches drop the video.
   */
  'video.textTracks': [{ videoId: string; appId: string; ids: string[] }];
  /** A view of a video counted on this node (services/viewCounter.ts): the metrics count it. */
  'video.viewed': [{ videoId: string; appId: string }];
  /** A video's file arrived (the upload page, tus, multipart, or a pull) and was stored: `bytes` its size, `durationMs` from its first byte. */
  'upload.received': [{ videoId: string; appId: string; via: 'tus' | 'multipart' | 'pull'; bytes: number; durationMs: number }];
  /** A video's file was refused or its pull failed: `code` the result code, `reason` for people (never a credential). */
  'upload.refused': [{ videoId: string; appId: string; via: 'tus' | 'multipart' | 'pull'; code: string; reason: string }];
  /** A video's file was cut off by its client going away (a closed tab, a lost connection): nothing was refused. */
  'upload.cut': [{ videoId: string; appId: string; via: 'tus' | 'multipart' | 'pull'; durationMs: number }];
  /** A status callback's attempt ended: delivered, failed (it will be tried again) or given up. */
  'callback.attempt': [{ videoId: string; appId: string; deliveryId: string; status: number; outcome: 'delivered' | 'failed' | 'given-up'; httpStatus: number | null; error: string; durationMs: number }];
  /**
   * The signing keys of `purpose` changed (keys/keyRing.ts): every node reads them again, so a new
   * key signs and an ended one checks nothing on all of them at once.
   */
  'keys.rotated': [{ purpose: string }];
  /** A job changed state (queued, running, succeeded, failed, cancelled). */
  'job.state': [{ jobId: string; type: string; videoId: string; state: string; error: string }];
  /**
   * A job cut off (a stop, a crash, its node gone) had its type's `recover` run before it runs
   * again, on this node: what the cut-off attempt left is removed (`recovered`), or the recover
   * threw (`failed`, `error` why) and leftovers of that attempt may remain. Jobs of a type with no
   * `recover` have none. The metrics count it (vop_job_recoveries_total).
   */
  'job.recovered': [{ jobId: string; type: string; videoId: string; outcome: 'recovered' | 'failed'; error: string }];
  /** A running job reported progress (not persisted on every report). */
  'job.progress': [{ jobId: string; type: string; videoId: string; percent: number; etaSeconds?: number; speed?: string }];
}

export class VopEventBus extends EventEmitter<VopEvents> {
  /**
   * The events of every node of a cluster, this one's included (storage/postgres/eventRelay.ts):
   * for what shows or caches state (the console's live stream, the HLS presence cache). What acts
   * on an event (sending a callback, queueing a transcode) listens on this bus itself, so that it
   * acts once, on the node where the event happened. Embedded, this bus itself.
   */
  everywhere: VopEventBus = this;
}

import type { Upload } from '@tus/server';
import type { UploadReservation } from '../../storage/types.js';
import { expiresAt, UPLOAD_ID_RE } from './tusStorage.js';
import type { TusContext } from './context.js';

/**
 * How old a ledger entry of a tus upload must be before a sweep that finds no upload of that id
 * in the store drops it: between onUploadCreate (the reservation) and the store's create (the
 * file), the upload is in the ledger and not yet on disk.
 */
const LEDGER_GRACE_MS = 60_000;

/**
 * Brings the ledger of uploads under way (UploadRoom.uploads) in line with the store: at
 * start (the uploads a restart found), and after each sweep (expired and removed uploads go;
 * offsets are read again). Entries being written are left alone. With object storage, or a
 * media folder every node mounts, the store holds every node's uploads, so each node learns of
 * the others' at its sweep; and the reservations (every node's in cluster mode) follow the
 * store too ({@link reconcileShared}). `listedBefore`: the uploads the store held before this
 * sweep removed the stale ones.
 */
export async function reconcileLedger(ctx: TusContext, listedBefore: string[] = []): Promise<void> {
  const ledger = ctx.ingest.room.uploads;
  const ids = new Set(await ctx.storage.listUploadIds());
  const now = Date.now();
  for (const key of ledger.keys()) {
    const entry = ledger.get(key);
    if (!UPLOAD_ID_RE.test(key) || !entry) continue; // not a tus upload (multipart)
    if (!ids.has(key) && entry.receiving === 0 && now - entry.since > LEDGER_GRACE_MS) ledger.release(key);
  }
  const found: UploadReservation[] = [];
  for (const id of ids) {
    const entry = ledger.get(id);
    if (entry?.receiving) continue;
    let upload: Upload;
    try {
      upload = await ctx.store.getUpload(id);
    } catch {
      continue; // no data file: removeOrphans deals with it
    }
    if (entry) {
      ctx.ingest.room.progress(id, upload.offset, false); // read again, not received: no sign of life
      continue;
    }
    const r: UploadReservation = {
      key: id,
      kind: 'tus',
      videoId: upload.metadata?.videoId ?? '',
      disk: ctx.ingest.room.diskFor(ctx.landing),
      size: upload.size ?? 0,
      written: upload.offset,
      expiresAt: expiresAt(upload, ctx.ingest.options.uploadExpiryMs),
      owner: upload.metadata?.owner || undefined,
      appId: upload.metadata?.appId || undefined,
      // Found without its creator's address (not kept), it counts under no address; its idle
      // time runs from now, as nothing says when its bytes last came.
      idleUntil: now + ctx.ingest.options.reservationIdleMs,
    };
    const { key: _key, ...entryOf } = r;
    ledger.add(id, entryOf);
    found.push(r);
  }
  await reconcileShared(ctx, listedBefore.filter((id) => !ids.has(id)), ids, found, now);
}

/**
 * The reservations (every node sees, in cluster mode) of uploads gone from the store since this sweep listed it
 * (removed as stale: a node may take an upload for expired before its reservation is, when nodes
 * are given other expiries) go at once; those of other uploads the store does not hold (an
 * admin's cancel, a creation cut off before its upload was made, a release that failed) go once
 * older than the grace a creation needs; uploads this node had not seen are reserved if they
 * were not (uploads begun before reservations were shared). One taken back just as another
 * node forgets it is released again: that node removes the upload before its reservation, so
 * either its release comes after ours, or the upload is already gone when we look again.
 */
async function reconcileShared(ctx: TusContext, gone: string[], ids: Set<string>, found: UploadReservation[], now: number): Promise<void> {
  const shared = ctx.ingest.room.shared;
  for (const id of gone) await shared.release(id);
  await shared.store.releaseAbsent('tus', [...ids], now - LEDGER_GRACE_MS);
  for (const r of found) {
    await shared.store.reserve(r, now);
    if (!(await ctx.storage.info(r.key))) await ctx.ingest.room.release(r.key);
  }
}

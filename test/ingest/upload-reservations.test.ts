import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpecClient } from '../helpers/client.js';
import { bytesUnder, tokenMetadata, tusCreate, tusHead, tusMetadata, tusUploadId } from '../helpers/ingest.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 12, item 7: uploads reserve their declared bytes, one upload is under way per video, and
 * the free space is checked again while bytes arrive. The disk is the real one, but its free
 * space is a model (a "disk" of DISK bytes less what the uploads wrote under incoming/), so that
 * the numbers do not depend on what else runs on this machine.
 */
const MiB = 1024 * 1024;
const MARGIN = 1 * MiB;
const DISK = MARGIN + 10 * MiB;
/** The shares of one application and one address left whole: those are upload-reservation-caps.test.ts's. */
const INGEST = {
  freeSpaceMarginBytes: MARGIN,
  spaceCheckIntervalBytes: 128 * 1024,
  maxUploadBytes: { flash: 20 * MiB, silverlight: 20 * MiB },
  multipartMaxBytes: 20 * MiB,
  appReservationShare: 1,
  addressReservationShare: 1,
};

let servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
});


/**
 * A server whose media store reports `disk.size` less what is under incoming/ as free, and
 * `disk.fullAfter`, if set: nothing left once that many bytes are there (the disk filled up with
 * something else meanwhile).
 */
async function start(options: Record<string, unknown> = {}) {
  const disk: { size: number; fullAfter?: number } = { size: DISK };
  const s = await startServer({ ingest: INGEST, ...options });
  servers.push(s);
  const incoming = s.vop.media.path('incoming');
  s.vop.media.freeBytes = async () => {
    const used = bytesUnder(incoming);
    return disk.fullAfter !== undefined && used >= disk.fullAfter ? 0 : disk.size - used;
  };
  return { s, disk, c: await s.newApp() };
}

async function create(s: TestServer, c: SpecClient, videoId: string, length: number, headers: Record<string, string> = {}) {
  const r = await tusCreate(s.baseUrl, length, { 'Upload-Metadata': tusMetadata(tokenMetadata(c, videoId)), ...headers });
  return { status: r.res.status, url: r.url, body: r.body };
}

/** A raw PATCH (http.request: the server may answer before it has read the whole body). */
function patch(url: string, offset: number, data: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; body: string; offset: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'PATCH',
      timeout: 20_000,
      headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream', 'Content-Length': String(data.length), ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, offset: res.headers['upload-offset'] as string | undefined }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    // The answer may come while the body is still being sent: a write error after it is expected.
    req.on('error', (err) => setTimeout(() => reject(err), 2000));
    req.end(data);
  });
}

const offsetOf = async (url: string, headers: Record<string, string> = {}) => Number((await tusHead(url, headers)).headers.get('upload-offset'));

describe('reservations of declared bytes', () => {
  it('counts the bytes promised to uploads under way: a third 4 MiB upload does not fit in 10 MiB until one ends', async () => {
    const { s, c } = await start();
    const a = await create(s, c, await c.register(), 4 * MiB);
    const b = await create(s, c, await c.register(), 4 * MiB);
    expect([a.status, b.status]).toEqual([201, 201]);
    const third = await c.register();
    const refused = await create(s, c, third, 4 * MiB);
    expect(refused.status).toBe(507);
    expect(refused.body).toMatch(/^ErrorCode : 507, ErrorMessage : Insufficient Storage: 4.0 MB does not fit: 11.0 MB free, 1.0 MB kept free, 8.0 MB promised to uploads under way/);
    // Termination releases A's reservation.
    expect((await fetch(a.url!, { method: 'DELETE', headers: { 'Tus-Resumable': '1.0.0' } })).status).toBe(204);
    const c3 = await create(s, c, third, 4 * MiB);
    expect(c3.status).toBe(201);

    // Bytes that land shrink the reservation by as much as they take on the disk: 2 MiB of B
    // written leaves 10 - 2 on the disk, 2 + 4 promised: 2 MiB fit, 2 MiB and a byte do not.
    expect((await patch(b.url!, 0, Buffer.alloc(2 * MiB, 1))).status).toBe(204);
    expect((await create(s, c, await c.register(), 2 * MiB + 1)).status).toBe(507);
    const fits = await create(s, c, await c.register(), 2 * MiB);
    expect(fits.status, fits.body).toBe(201);
  });

  it('the issue: 40 creations of one video against the free space: one is accepted, the others refused (303) without reserving', async () => {
    const { s, c } = await start();
    const videoId = await c.register();
    const answers = await Promise.all(Array.from({ length: 40 }, () => create(s, c, videoId, 4 * MiB)));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    const refused = answers.filter((a) => a.status !== 201);
    expect(new Set(refused.map((a) => a.status))).toEqual(new Set([403]));
    expect(refused[0]!.body).toMatch(/^ErrorCode : 303, ErrorMessage : Video State Conflict: another upload of this video is under way \(0 bytes of 4.0 MB received\): resume it, end it \(tus DELETE\), or wait until it expires at /);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(4 * MiB);
    // One upload's file on disk, not 40.
    expect(fs.readdirSync(s.vop.media.path('incoming', 'tus')).filter((n) => !n.endsWith('.json'))).toHaveLength(1);
  });

  it('an expired upload no longer holds its video nor its bytes', async () => {
    const { s, c } = await start({ ingest: { ...INGEST, uploadExpiryMs: 1500 } });
    const videoId = await c.register();
    expect((await create(s, c, videoId, 8 * MiB)).status).toBe(201);
    expect((await create(s, c, videoId, 8 * MiB)).status).toBe(403);
    // Past the 1.5 s expiry: time itself is what is tested.
    await new Promise((r) => setTimeout(r, 1700));
    expect((await create(s, c, videoId, 8 * MiB)).status).toBe(201);
  });

  it('are rebuilt from the uploads on disk after a restart: the video stays taken and the rest of its bytes promised', async () => {
    const first = await start();
    const videoId = await first.c.register();
    const up = await create(first.s, first.c, videoId, 6 * MiB);
    expect((await patch(up.url!, 0, Buffer.alloc(1 * MiB, 2))).status).toBe(204);
    const dataDir = first.s.dataDir;
    await first.s.close();
    servers = [];

    const s = await startServer({ dataDir, ingest: INGEST });
    servers.push(s);
    const incoming = s.vop.media.path('incoming');
    s.vop.media.freeBytes = async () => DISK - bytesUnder(incoming);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(5 * MiB);
    const c = new SpecClient(s.baseUrl, first.c.appId, first.c.secret);
    const again = await create(s, c, videoId, 6 * MiB);
    expect(again.status).toBe(403);
    expect(again.body).toMatch(/ErrorCode : 303, .*\(1.0 MB of 6.0 MB received\)/);
    // 10 MiB - 1 on the disk - 5 promised: 4 MiB fit, not a byte more.
    expect((await create(s, c, await c.register(), 4 * MiB + 1)).status).toBe(507);
    expect((await create(s, c, await c.register(), 4 * MiB)).status).toBe(201);
    // And the upload resumes where it was.
    expect(await offsetOf(up.url!.replace(first.s.baseUrl, s.baseUrl))).toBe(1 * MiB);
  });
});

describe('one upload under way per video, and the upload page', () => {
  const openSession = (s: TestServer, c: SpecClient, videoId: string) => {
    const a = c.auth();
    return s.vop.services.ingest.openUploadSession({ appId: a.AppId, timestamp: a.Timestamp, token: a.Token }, videoId, {}, '127.0.0.1');
  };
  const createWithCredential = (s: TestServer, videoId: string, credential: string, length: number) =>
    tusCreate(s.baseUrl, length, { 'X-Upload-Credential': credential, 'Upload-Metadata': tusMetadata({ videoId, filename: 'other.mp4' }) });

  it('the same page (its credential) replaces its own upload, when the user picks another file; anyone else gets 303', async () => {
    const { s, c } = await start();
    const videoId = await c.register();
    const session = await openSession(s, c, videoId);
    const first = await createWithCredential(s, videoId, session.credential, 4 * MiB);
    expect(first.res.status).toBe(201);
    expect((await patch(first.url!, 0, Buffer.alloc(MiB, 3), { 'X-Upload-Credential': session.credential })).status).toBe(204);

    // Another page for the same video (a new credential) and the spec's values: refused.
    const other = await openSession(s, c, videoId);
    expect((await createWithCredential(s, videoId, other.credential, 2 * MiB)).res.status).toBe(403);
    expect((await create(s, c, videoId, 2 * MiB)).status).toBe(403);

    // The same page, another file: the first upload is gone, the second takes its place.
    const second = await createWithCredential(s, videoId, session.credential, 3 * MiB);
    expect(second.res.status).toBe(201);
    expect((await tusHead(first.url!, { 'X-Upload-Credential': session.credential })).status).toBe(404);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(3 * MiB);
    // Resuming the live upload from its URL is untouched by all this.
    expect((await patch(second.url!, 0, Buffer.alloc(MiB, 4), { 'X-Upload-Credential': session.credential })).status).toBe(204);
    expect(await offsetOf(second.url!, { 'X-Upload-Credential': session.credential })).toBe(MiB);
  });

  it("releases the room of a replaced upload whose files were already gone (the store's remove failed)", async () => {
    const { s, c } = await start();
    const videoId = await c.register();
    const session = await openSession(s, c, videoId);
    const first = await createWithCredential(s, videoId, session.credential, 4 * MiB);
    expect(first.res.status).toBe(201);
    const firstId = tusUploadId(first.url!);
    // Its bytes and its metadata removed behind the server's back: the store cannot remove it.
    for (const f of [firstId, `${firstId}.json`]) fs.rmSync(s.vop.media.path('incoming', 'tus', f), { force: true });
    const second = await createWithCredential(s, videoId, session.credential, 3 * MiB);
    expect(second.res.status).toBe(201);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(3 * MiB);
  });

  it('a multipart upload for a video with a tus upload under way is refused (303) before a byte is stored', async () => {
    const { s, c } = await start();
    const videoId = await c.register();
    expect((await create(s, c, videoId, 2 * MiB)).status).toBe(201);
    const body = multipartForm(c, videoId, Buffer.alloc(MiB, 5));
    const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body });
    expect((await res.json()).AuthMsg.ResultCode).toBe('303');
    expect(fs.existsSync(s.vop.media.path('incoming', videoId))).toBe(false);
  });
});

function multipartForm(c: SpecClient, videoId: string, file: Buffer): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...c.auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(file)]), 'clip.mp4');
  return form;
}

describe('the free space, checked again while bytes arrive', () => {
  it('tus: a disk that fills up mid-PATCH stops it with 507; the bytes before are kept and the upload resumes from them', async () => {
    const { s, c, disk } = await start();
    const videoId = await c.register();
    const up = await create(s, c, videoId, 6 * MiB);
    expect(up.status).toBe(201);
    disk.fullAfter = 1 * MiB;
    const cut = await patch(up.url!, 0, Buffer.alloc(4 * MiB, 6));
    expect(cut.status, cut.body).toBe(507);
    expect(cut.body).toMatch(/^ErrorCode : 507, ErrorMessage : Insufficient Storage: the disk is nearly full/);
    const kept = await offsetOf(up.url!);
    expect(kept).toBeGreaterThanOrEqual(1 * MiB);
    expect(kept).toBeLessThan(4 * MiB);
    expect(fs.statSync(s.vop.media.path('incoming', 'tus', tusUploadId(up.url!))).size).toBe(kept);

    // Room again: the upload carries on from its offset.
    disk.fullAfter = undefined;
    const resumed = await patch(up.url!, kept, Buffer.alloc(6 * MiB - 1 - kept, 6));
    expect(resumed.status).toBe(204);
    expect(resumed.offset).toBe(String(6 * MiB - 1));
  });

  it('multipart: a disk that fills up mid-body stops it with 507; the partial file is removed and the video still takes a file', async () => {
    const { s, c, disk } = await start();
    const videoId = await c.register();
    disk.fullAfter = 1 * MiB;
    const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: multipartForm(c, videoId, Buffer.alloc(4 * MiB, 7)) });
    expect(res.status).toBe(507);
    expect((await res.json()).AuthMsg).toEqual({ ResultCode: '507', ResultMessage: expect.stringMatching(/^Insufficient Storage: the disk is nearly full/) });
    expect(bytesUnder(s.vop.media.path('incoming', videoId))).toBe(0);
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(0);
  });

  it('multipart: a body larger than the free space less what is promised is refused before a byte is stored', async () => {
    const { s, c } = await start();
    expect((await create(s, c, await c.register(), 6 * MiB)).status).toBe(201);
    const videoId = await c.register();
    const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: multipartForm(c, videoId, Buffer.alloc(5 * MiB, 8)) });
    expect(res.status).toBe(507);
    expect((await res.json()).AuthMsg.ResultMessage).toMatch(/does not fit: .*6.0 MB promised to uploads under way/);
    expect(fs.existsSync(s.vop.media.path('incoming', videoId))).toBe(false);
  });
});

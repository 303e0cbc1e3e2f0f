import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch, bytesUnder } from '../helpers/ingest.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

/**
 * Declared bytes that nobody sends must not take the disk from everyone else: the bytes promised
 * to one application's uploads under way, and to one client address's, are capped at a share of
 * the disk's room, and an upload that sends nothing for `ingest.reservationIdleMs` stops counting
 * until it sends again (and must then fit again). As in upload-reservations.test.ts, the free
 * space is a model (a disk of DISK bytes less what the uploads wrote under incoming/), so that
 * the numbers do not depend on this machine; the client addresses are named by X-Forwarded-For
 * from a trusted proxy (the loopback the tests connect from).
 */
const MiB = 1024 * 1024;
const MARGIN = 1 * MiB;
/** 10 MiB of room beyond the margin: an application may hold 5 (a half), an address 2.5 (a quarter). */
const DISK = MARGIN + 10 * MiB;
const INGEST = { freeSpaceMarginBytes: MARGIN, spaceCheckIntervalBytes: 128 * 1024, maxUploadBytes: { flash: 20 * MiB, silverlight: 20 * MiB }, multipartMaxBytes: 20 * MiB };

let servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
});


async function start(ingest: Record<string, unknown> = {}) {
  const s = await startServer({ ingest: { ...INGEST, ...ingest }, trustedProxies: ['127.0.0.1/32'] });
  servers.push(s);
  const incoming = s.vop.media.path('incoming');
  s.vop.media.freeBytes = async () => DISK - bytesUnder(incoming);
  return { s, a: await s.newApp('a'), b: await s.newApp('b') };
}

/** A tus creation for a new video of `c`, from the client `address`. */
async function create(s: TestServer, c: SpecClient, length: number, address: string) {
  const r = await tusCreate(s.baseUrl, length, { 'Upload-Metadata': tusMetadata(tokenMetadata(c, await c.register())), 'X-Forwarded-For': address });
  return { status: r.res.status, url: r.url, body: r.body };
}

const patch = async (url: string, offset: number, data: Buffer, address: string) => {
  const res = await tusPatch(url, offset, data, { 'X-Forwarded-For': address });
  return { status: res.status, body: await res.text(), offset: res.headers.get('upload-offset') };
};

/** Time is the subject where this is used: an upload's pace against the idle time. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the bytes one application or one address may hold in declared uploads', () => {
  it("one application's uploads hold at most half the room: its next is refused, another application's still fits", async () => {
    const { s, a, b } = await start();
    // From three addresses, so that only the application's cap is met.
    expect((await create(s, a, 2 * MiB, '10.0.0.1')).status).toBe(201);
    expect((await create(s, a, 2 * MiB, '10.0.0.2')).status).toBe(201);
    const refused = await create(s, a, 2 * MiB, '10.0.0.3');
    expect(refused.status).toBe(507);
    expect(refused.body).toMatch(
      /^ErrorCode : 507, ErrorMessage : Insufficient Storage: 2.0 MB does not fit in what one application's uploads under way may hold: it holds 4.0 MB of 5.0 MB \(0.5 of the 10.0 MB free beyond the margin, ingest.appReservationShare\)/,
    );
    // The disk itself has room: another application's upload gets it.
    const other = await create(s, b, 4 * MiB, '10.0.0.4');
    expect(other.status, other.body).toBe(201);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(8 * MiB);
  });

  it("one address's uploads hold at most a quarter of the room, whatever the application; an IPv6 client counts by its /64", async () => {
    const { s, a, b } = await start();
    expect((await create(s, a, 2 * MiB, '10.0.0.9')).status).toBe(201);
    const refused = await create(s, b, 1 * MiB, '10.0.0.9');
    expect(refused.status).toBe(507);
    expect(refused.body).toMatch(/Insufficient Storage: 1.0 MB does not fit in what one client address's uploads under way may hold: it holds 2.0 MB of 2.5 MB \(0.25 of .*ingest.addressReservationShare\)/);
    expect((await create(s, b, 1 * MiB, '10.0.0.10')).status).toBe(201);

    expect((await create(s, a, 2 * MiB, '2001:db8:1:2::1')).status).toBe(201);
    expect((await create(s, a, 1 * MiB, '2001:db8:1:2::ffff')).status).toBe(507);
    expect((await create(s, a, 1 * MiB, '2001:db8:1:3::1')).status).toBe(201);
  });

  it("an application's or an address's first upload is never refused for its share, only for the disk's room", async () => {
    const { s, a } = await start();
    const big = await create(s, a, 8 * MiB, '10.0.0.1');
    expect(big.status, big.body).toBe(201);
    expect((await create(s, a, 1 * MiB, '10.0.0.2')).status).toBe(507);
  });

  it('a multipart body counts towards the same caps', async () => {
    const { s, a } = await start();
    expect((await create(s, a, 2 * MiB, '10.0.0.5')).status).toBe(201);
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...a.auth(), VideoId: await a.register() })) form.append(k, v);
    form.append('file', new Blob([new Uint8Array(1 * MiB)]), 'clip.mp4');
    const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form, headers: { 'X-Forwarded-For': '10.0.0.5' } });
    expect(res.status).toBe(507);
    expect((await res.json()).AuthMsg.ResultMessage).toMatch(/one client address's uploads under way may hold/);
  });
});

describe('an upload that sends nothing for a while', () => {
  const IDLE_MS = 800;

  it('loses its reservation: another upload gets the space; on resume it must fit again, and is refused clearly when it does not', async () => {
    const { s, a, b } = await start({ reservationIdleMs: IDLE_MS });
    const idle = await create(s, a, 5 * MiB, '10.0.0.1');
    expect(idle.status).toBe(201);
    expect((await create(s, b, 6 * MiB, '10.0.0.2')).status).toBe(507);

    // Nothing arrives on it: past the idle time its bytes are promised no longer.
    const taken = await waitUntil('the space given back: a 6 MiB upload created', async () => {
      const c = await create(s, b, 6 * MiB, '10.0.0.2');
      return c.status === 201 ? c : notYet({ status: c.status, body: c.body });
    }, { timeoutMs: 6_000, pollMs: 200 });
    expect(taken.status, taken.body).toBe(201);
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(6 * MiB);

    // The idle upload still exists and still holds its video, but its bytes no longer fit.
    expect(Number((await tusHead(idle.url!)).headers.get('upload-offset'))).toBe(0);
    const resumed = await patch(idle.url!, 0, Buffer.alloc(MiB, 1), '10.0.0.1');
    expect(resumed.status).toBe(507);
    expect(resumed.body).toMatch(
      /^ErrorCode : 507, ErrorMessage : Insufficient Storage: the upload sent nothing for 1 s, so its space was given back; its remaining 5.0 MB must be reserved again: 5.0 MB does not fit: 11.0 MB free, 1.0 MB kept free, 6.0 MB promised to uploads under way/,
    );
    expect(Number((await tusHead(idle.url!)).headers.get('upload-offset'))).toBe(0);

    // Room again (the other upload ends): the resume reserves its remaining bytes and carries on.
    expect((await fetch(taken.url!, { method: 'DELETE', headers: { 'Tus-Resumable': '1.0.0' } })).status).toBe(204);
    const again = await patch(idle.url!, 0, Buffer.alloc(MiB, 1), '10.0.0.1');
    expect(again.status, again.body).toBe(204);
    expect(again.offset).toBe(String(MiB));
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(4 * MiB);
  });

  it('keeps its reservation while bytes keep arriving', async () => {
    const { s, a, b } = await start({ reservationIdleMs: IDLE_MS });
    const busy = await create(s, a, 5 * MiB, '10.0.0.1');
    let offset = 0;
    // Five chunks a quarter of the idle time apart: the last comes well past the idle time.
    for (let i = 0; i < 5; i++) {
      await sleep(IDLE_MS / 4);
      const r = await patch(busy.url!, offset, Buffer.alloc(64 * 1024, 2), '10.0.0.1');
      expect(r.status, r.body).toBe(204);
      offset = Number(r.offset);
    }
    // Past the idle time since its creation, every chunk within it of the last: still promised.
    expect(s.vop.services.ingest.room.uploads.reservedBytes()).toBe(5 * MiB - offset);
    expect((await create(s, b, 6 * MiB, '10.0.0.2')).status).toBe(507);
  });
});

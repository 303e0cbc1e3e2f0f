/**
 * Signed media: an application set to `mediaAccess: "signed"` hands out addresses with a token in
 * their path. They play (renditions, downloads, covers and their sizes, HLS down to the segments
 * through the playlists' relative addresses), open their own video only, are refused once altered
 * or expired, and the video's plain addresses are refused. Keys rotate, gently or revoking what
 * they signed. Real ffmpeg on a clip the test makes, real HTTP.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyRing } from '../../server/keys/keyRing.js';
import { MediaTokens } from '../../server/keys/mediaTokens.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { placeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let signedApp: SpecClient;
let publicApp: SpecClient;
/** Two playable videos of the signed application, one of the public one. */
let a: string;
let b: string;
let p: string;

async function playable(client: SpecClient, clip: string): Promise<string> {
  const id = await client.register();
  await placeSource(t.vop, id, clip);
  await waitForStatus(t.vop, id, [1], { timeoutMs: 60_000 });
  return id;
}

interface Detail {
  PlayURL: string;
  MobilePlayURL: string;
  DownloadURL: string;
  PicSavePath: string;
  HlsURL: string;
  files: string[];
}

async function detail(client: SpecClient, id: string): Promise<Detail> {
  const r = await client.get('/Api/Video/Get', { Id: id });
  expect(r.body.AuthMsg.ResultCode).toBe('1');
  const ms = r.body.MediaSever as { PlayURL: string; MobilePlayURL: string; DownloadURL: string };
  return {
    ...ms,
    PicSavePath: r.body.VideoModel.PicSavePath as string,
    HlsURL: r.body.HlsURL as string,
    files: (r.body.VideoPlayFile as Array<{ VideoURL: string }>).map((f) => f.VideoURL),
  };
}

/** Status and, for a refusal, the result code of the envelope. */
async function fetchCode(url: string): Promise<{ status: number; code?: string; cache?: string | null }> {
  const r = await fetch(url);
  if (r.ok) {
    await r.arrayBuffer();
    return { status: r.status };
  }
  const body = (await r.json()) as { AuthMsg: { ResultCode: string } };
  return { status: r.status, code: body.AuthMsg.ResultCode, cache: r.headers.get('cache-control') };
}

/** Every address of an HLS walk: the master, each variant playlist, and each variant's first segment, resolved as players resolve them. */
async function hlsWalk(master: string): Promise<string[]> {
  const urls = [master];
  const text = await (await fetch(master)).text();
  for (const line of text.split('\n').filter((l) => l.endsWith('.m3u8'))) {
    const variant = new URL(line, master).toString();
    urls.push(variant);
    const segment = (await (await fetch(variant)).text()).split('\n').find((l) => l !== '' && !l.startsWith('#'))!;
    urls.push(new URL(segment, variant).toString());
  }
  return urls;
}

/** The plain address of a signed one: `/media/s/<token>/` taken out. */
const plain = (url: string) => url.replace(/\/media\/s\/[^/]+\//, '/media/');

beforeAll(async () => {
  t = await startServer({ processing: TINY_PROCESSING });
  signedApp = await t.newApp('signed');
  publicApp = await t.newApp('public');
  const r = await t.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaAccess: 'signed', mediaTtlSeconds: 600 });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 600 });
  const clip = await makeClip({ seconds: 2, width: 320, height: 180 });
  [a, b, p] = await Promise.all([playable(signedApp, clip), playable(signedApp, clip), playable(publicApp, clip)]);
}, 180_000);
afterAll(async () => {
  await t?.close();
});

describe('an application that serves signed addresses', () => {
  it('takes mediaAccess and mediaTtlSeconds from the admin API, and refuses what is out of range', async () => {
    const created = await t.admin.request('POST', '/apps', { name: 'made signed', mediaAccess: 'signed', mediaTtlSeconds: 10 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 10 });
    expect((await t.admin.request('GET', `/apps/${publicApp.appId}`)).body).toMatchObject({ mediaAccess: 'public', mediaTtlSeconds: 3600 });
    for (const bad of [{ mediaAccess: 'private' }, { mediaTtlSeconds: 9 }, { mediaTtlSeconds: 86_401 }, { mediaTtlSeconds: 60.5 }, { mediaTtlSeconds: '600' }]) {
      const r = await t.admin.request('PATCH', `/apps/${created.body.appId}`, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error.code).toBe('201');
      expect(r.body.error.message).toContain(Object.keys(bad)[0]);
    }
  });

  it('hands out addresses with a token in their path, and every one of them plays: renditions, downloads, covers, HLS to the segments', async () => {
    const d = await detail(signedApp, a);
    for (const url of [d.PlayURL, d.MobilePlayURL, d.DownloadURL, d.HlsURL]) expect(url).toMatch(/\/media\/s\/[a-z0-9]+\.[a-z0-9]+\.m\.[A-Za-z0-9_-]{22}\//);
    // The cover's token is the cover's only.
    expect(d.PicSavePath).toMatch(/\/media\/s\/[a-z0-9]+\.[a-z0-9]+\.c\.[A-Za-z0-9_-]{22}\//);
    expect(d.files.length).toBeGreaterThan(0);
    // PlayURL + VideoURL, as the spec's clients join them.
    for (const f of d.files) {
      expect((await fetchCode(d.PlayURL + f)).status).toBe(200);
      expect((await fetchCode(d.MobilePlayURL + f)).status).toBe(200);
      const dl = await fetch(d.DownloadURL + f);
      expect(dl.status).toBe(200);
      expect(dl.headers.get('content-disposition')).toMatch(/^attachment/);
      await dl.arrayBuffer();
    }
    expect((await fetchCode(d.PicSavePath)).status).toBe(200);
    expect((await fetchCode(`${d.PicSavePath}?t=3`)).status).toBe(200);
    const walk = await hlsWalk(d.HlsURL);
    expect(walk.length).toBeGreaterThanOrEqual(3);
    for (const url of walk) {
      expect(url).toContain('/media/s/');
      expect((await fetchCode(url)).status, url).toBe(200);
    }
    // The list's covers are signed too.
    const list = await signedApp.get('/Api/Video/GetList', { PageSize: '10' });
    const covers = (list.body.VideoList as Array<{ Id: string; PicSavePath: string }>).map((v) => v.PicSavePath);
    expect(covers.length).toBe(2);
    for (const cover of covers) {
      expect(cover).toContain('/media/s/');
      expect((await fetchCode(cover)).status).toBe(200);
    }
  });

  it("refuses the video's plain addresses, with 420 and no-store", async () => {
    const d = await detail(signedApp, a);
    const plainOnes = [plain(d.PlayURL) + d.files[0], plain(d.DownloadURL) + d.files[0], plain(d.PicSavePath), plain(d.HlsURL), ...(await hlsWalk(d.HlsURL)).slice(1).map(plain)];
    for (const url of plainOnes) {
      expect(url).not.toContain('/media/s/');
      expect(await fetchCode(url), url).toEqual({ status: 403, code: '420', cache: 'no-store' });
    }
  });

  it('opens its own video only: the token of one video on the path of another is refused', async () => {
    const da = await detail(signedApp, a);
    const db = await detail(signedApp, b);
    const tokenA = /\/media\/s\/([^/]+)\//.exec(da.PlayURL)![1]!;
    const tokenB = /\/media\/s\/([^/]+)\//.exec(db.PlayURL)![1]!;
    expect(tokenA).not.toBe(tokenB);
    const swap = (url: string) => url.replace(tokenB, tokenA);
    const coverA = /\/media\/s\/([^/]+)\//.exec(da.PicSavePath)![1]!;
    const coverOfBUnderA = db.PicSavePath.replace(/\/media\/s\/[^/]+\//, `/media/s/${coverA}/`);
    for (const url of [swap(db.PlayURL) + db.files[0], coverOfBUnderA, swap(db.HlsURL), ...(await hlsWalk(db.HlsURL)).slice(1).map(swap)]) {
      expect(await fetchCode(url), url).toMatchObject({ status: 403, code: '420' });
    }
    // Nor another application's video (a public one: its plain address works, a borrowed token opens nothing).
    const dp = await detail(publicApp, p);
    expect(dp.PlayURL).not.toContain('/media/s/');
    expect((await fetchCode(dp.PlayURL + dp.files[0])).status).toBe(200);
    expect(await fetchCode(dp.PlayURL.replace('/media/', `/media/s/${tokenA}/`) + dp.files[0])).toMatchObject({ status: 403, code: '420' });
  });

  it("signs a caption track's addresses with the video's token: its WebVTT file and its HLS rendition play, its plain and borrowed addresses are refused", async () => {
    const body = new FormData();
    for (const [k, v] of Object.entries({ ...signedApp.auth(), VideoId: b, Language: 'en' })) body.append(k, v);
    body.append('file', new Blob([Buffer.from('1\n00:00:00,500 --> 00:00:01,500\nHello\n')]), 'c.srt');
    const added = (await (await fetch(`${t.baseUrl}/Api/Video/Caption`, { method: 'POST', body })).json()) as any;
    expect(added.AuthMsg.ResultCode).toBe('1');
    const r = await signedApp.get('/Api/Video/Get', { Id: b });
    const url = r.body.Captions[0].URL as string;
    expect(url).toBe(added.Caption.URL);
    expect(url).toMatch(/\/media\/s\/[^/]+\/text\//);
    expect((await fetchCode(url)).status).toBe(200);
    // The master lists it as a subtitle rendition, resolved under the same token.
    const master = await (await fetch(r.body.HlsURL)).text();
    const subtitles = /URI="(subs-[0-9a-f]{8}\/index\.m3u8)"/.exec(master)![1]!;
    const playlist = new URL(subtitles, r.body.HlsURL).toString();
    expect((await fetchCode(playlist)).status).toBe(200);
    expect((await fetchCode(new URL('seg_00000.vtt', playlist).toString())).status).toBe(200);
    for (const refused of [plain(url), plain(playlist)]) expect(await fetchCode(refused), refused).toEqual({ status: 403, code: '420', cache: 'no-store' });
    const tokenA = /\/media\/s\/([^/]+)\//.exec((await detail(signedApp, a)).PlayURL)![1]!;
    const borrowed = url.replace(/\/media\/s\/[^/]+\//, `/media/s/${tokenA}/`);
    expect(await fetchCode(borrowed)).toMatchObject({ status: 403, code: '420' });
  });

  it("opens with a cover's token the cover only, and with a media token all but the cover; a token made before scopes opens all until it expires", async () => {
    const d = await detail(signedApp, a);
    const coverToken = /\/media\/s\/([^/]+)\//.exec(d.PicSavePath)![1]!;
    const mediaToken = /\/media\/s\/([^/]+)\//.exec(d.PlayURL)![1]!;
    const under = (url: string, token: string) => url.replace(/\/media\/s\/[^/]+\//, `/media/s/${token}/`);
    const media = [d.PlayURL + d.files[0], d.DownloadURL + d.files[0], ...(await hlsWalk(d.HlsURL))];
    expect((await fetchCode(d.PicSavePath)).status).toBe(200);
    for (const url of media) {
      const r = await fetch(under(url, coverToken));
      expect(r.status, url).toBe(403);
      const body = (await r.json()) as { AuthMsg: { ResultCode: string; ResultMessage: string } };
      expect(body.AuthMsg.ResultCode).toBe('420');
      expect(body.AuthMsg.ResultMessage).toMatch(/cover's opens the cover only/);
    }
    expect(await fetchCode(under(d.PicSavePath, mediaToken))).toMatchObject({ status: 403, code: '420' });
    // A token as vop made them before scopes: the MAC over the video's id and the expiry alone.
    const ring = await KeyRing.open({ store: t.vop.stores.signingKeys, purpose: 'media', events: t.vop.events, log: () => {} });
    try {
      const key = ring.signing();
      const expires = Math.floor(Date.now() / 1000) + 600;
      const legacy = `${key.id}.${expires.toString(36)}.${crypto.createHmac('sha256', key.secret).update(`vop-media-v1.${a}.${expires}`).digest('base64url').slice(0, 22)}`;
      for (const url of [d.PicSavePath, ...media]) expect((await fetchCode(under(url, legacy))).status, url).toBe(200);
    } finally {
      ring.close();
    }
  });

  it('refuses an altered token, and an expired one', async () => {
    const d = await detail(signedApp, a);
    const url = d.PlayURL + d.files[0];
    const token = /\/media\/s\/([^/]+)\//.exec(url)![1]!;
    const [keyId, expiry, scope, mac] = token.split('.') as [string, string, string, string];
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('A') ? 'B' : 'A');
    const later = (parseInt(expiry, 36) + 3600).toString(36);
    // Its scope changed (a cover's made into a media one), or left out (as a token made before scopes): altered.
    const altereds = [`${keyId}.${expiry}.${scope}.${flip(mac)}`, `${keyId}.${later}.${scope}.${mac}`, `zzzzzz.${expiry}.${scope}.${mac}`, `${keyId}.${expiry}.c.${mac}`, `${keyId}.${expiry}.${mac}`, `${keyId}.${expiry}`, 'x'];
    for (const altered of altereds) {
      expect(await fetchCode(url.replace(token, altered)), altered).toMatchObject({ status: 403, code: '420' });
    }
    // One the server's own key signed, expired a minute ago.
    const ring = await KeyRing.open({ store: t.vop.stores.signingKeys, purpose: 'media', events: t.vop.events, log: () => {} });
    try {
      const expired = new MediaTokens(ring).sign(a, 10, 'media', Date.now() - 60_000);
      expect(expired.split('.')[0]).toBe(keyId);
      const r = await fetch(url.replace(token, expired));
      expect(r.status).toBe(403);
      expect(((await r.json()) as { AuthMsg: { ResultMessage: string } }).AuthMsg.ResultMessage).toMatch(/expired/);
      // Its twin that has not expired plays: the refusal was the expiry.
      expect((await fetchCode(url.replace(token, new MediaTokens(ring).sign(a, 10, 'media')))).status).toBe(200);
    } finally {
      ring.close();
    }
  });

  it('rotates its keys: a gentle rotation keeps what was handed out, a revoking one ends it; every key stays out of the admin API', async () => {
    const before = await detail(signedApp, a);
    const oldUrl = before.PlayURL + before.files[0];
    const listed = await t.admin.request('GET', '/keys');
    expect(listed.status).toBe(200);
    expect(listed.body.media).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toMatch(/[0-9a-f]{64}/);
    const oldId = listed.body.media[0].id as string;

    const gentle = await t.admin.request('POST', '/keys/media/rotate', {});
    expect(gentle.status).toBe(200);
    expect(gentle.body.keys[0]).toMatchObject({ signing: true, expiresAt: null });
    expect(gentle.body.keys[1]).toMatchObject({ id: oldId, signing: false });
    const after = await detail(signedApp, a);
    expect(after.PlayURL).not.toBe(before.PlayURL);
    expect(after.PlayURL).toContain(`/media/s/${gentle.body.keys[0].id}.`);
    expect((await fetchCode(oldUrl)).status).toBe(200);
    expect((await fetchCode(after.PlayURL + after.files[0])).status).toBe(200);

    const revoking = await t.admin.request('POST', '/keys/media/rotate', { revokeOld: true });
    expect(revoking.status).toBe(200);
    expect(revoking.body.keys).toHaveLength(1);
    expect(await fetchCode(oldUrl)).toMatchObject({ status: 403, code: '420' });
    expect(await fetchCode(after.PlayURL + after.files[0])).toMatchObject({ status: 403, code: '420' });
    const fresh = await detail(signedApp, a);
    expect((await fetchCode(fresh.PlayURL + fresh.files[0])).status).toBe(200);

    expect((await t.admin.request('POST', '/keys/nothing/rotate', {})).status).toBe(404);
    expect((await t.admin.request('POST', '/keys/media/rotate', { revokeOld: 'yes' })).status).toBe(400);
    expect((await t.admin.request('POST', '/keys/media/rotate', { revoke: true })).status).toBe(400);
  });

  it('serves the plain addresses again once the application is public, within a second', async () => {
    const d = await detail(signedApp, b);
    const url = plain(d.PlayURL) + d.files[0];
    expect((await fetchCode(url)).status).toBe(403);
    expect((await t.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaAccess: 'public' })).status).toBe(200);
    await waitUntil('the media to be public', async () => {
      const { status } = await fetchCode(url);
      return status === 200 ? true : notYet(status);
    }, { timeoutMs: 3000, pollMs: 100 });
    expect((await detail(signedApp, b)).PlayURL).not.toContain('/media/s/');
    expect((await t.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaAccess: 'signed' })).status).toBe(200);
  });
});

describe('the console for a signed application', () => {
  it('gets signed addresses for its player and share link, good for the lifetime asked', async () => {
    const r = await t.admin.request('GET', `/videos/${a}/playback?ttl=86400`);
    expect(r.status).toBe(200);
    expect(r.body.signedUntil).toBeGreaterThan(Date.now() + 86_000_000);
    expect(r.body.hlsUrl).toContain('/media/s/');
    for (const url of [r.body.renditions[0].playUrl, r.body.renditions[0].downloadUrl, r.body.coverUrl, r.body.hlsUrl]) expect((await fetchCode(url)).status).toBe(200);
    const short = await t.admin.request('GET', `/videos/${a}/playback`);
    expect(short.body.signedUntil).toBeLessThan(Date.now() + 700_000);
    expect((await t.admin.request('GET', `/videos/${a}/playback?ttl=5`)).status).toBe(400);
    const pub = await t.admin.request('GET', `/videos/${p}/playback`);
    expect(pub.body.signedUntil).toBeNull();
    // The console's list shows signed thumbnails for it.
    const rows = await t.admin.request('GET', `/videos?appId=${signedApp.appId}`);
    for (const v of rows.body.videos as Array<{ coverUrl: string }>) {
      expect(v.coverUrl).toContain('/media/s/');
      expect((await fetchCode(`${v.coverUrl}?t=4`)).status).toBe(200);
    }
  });
});

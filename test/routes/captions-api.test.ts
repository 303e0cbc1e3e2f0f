/**
 * The caption calls (beyond the spec), with the spec's authentication and envelope: a caption
 * track added from SRT or WebVTT is stored as WebVTT made from its cues, listed, and removed;
 * what a player would misread, and what costs more than a caption should, is refused with its
 * code before anything is stored. What players make of captions is test/media/hls-tracks.test.ts.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let client: SpecClient;

beforeAll(async () => {
  t = await startServer();
  client = await t.newApp();
});
afterAll(async () => {
  await t?.close();
});

const SRT = '\uFEFF1\r\n00:00:01,000 --> 00:00:02,500\r\nHello <b>there</b> & <script>alert(1)</script>\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,000\r\n<font color="red">Bye</font>\r\n';

/** Adds a caption file to `videoId` as an application would: the form's fields, then the file. */
async function addCaption(videoId: string, file: Uint8Array | string, fields: Record<string, string> = { Language: 'en' }, as: SpecClient = client) {
  const body = new FormData();
  for (const [k, v] of Object.entries({ ...as.auth(), VideoId: videoId, ...fields })) body.append(k, v);
  body.append('file', new Blob([typeof file === 'string' ? Buffer.from(file) : Buffer.from(file)]), 'captions.srt');
  const res = await fetch(`${t.baseUrl}/Api/Video/Caption`, { method: 'POST', body });
  return { status: res.status, body: (await res.json()) as any };
}

const storedFiles = (videoId: string) => {
  const dir = t.vop.media.path('text', videoId);
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

describe('adding, listing and removing a caption track', () => {
  it('stores an SRT file (CRLF, byte order mark) as WebVTT made from its cues, and lists it', async () => {
    const id = await client.register();
    const added = await addCaption(id, SRT, { Language: 'pt-br', Label: 'Português' });
    expect(added.body.AuthMsg.ResultCode).toBe('1');
    const caption = added.body.Caption;
    expect(caption).toEqual({ Id: expect.stringMatching(/^[0-9a-f]{8}$/), Language: 'pt-BR', Label: 'Português', Origin: 'api', URL: `${t.baseUrl}/media/text/${id}/${caption.Id}.vtt` });
    const vtt = fs.readFileSync(t.vop.media.path('text', id, `${caption.Id}.vtt`), 'utf8');
    expect(vtt).toBe('WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nHello <b>there</b> &amp; &lt;script&gt;alert(1)&lt;/script&gt;\n\n00:00:03.000 --> 00:00:04.000\nBye\n\n');

    const listed = await client.get('/Api/Video/Captions', { VideoId: id });
    expect(listed.body.AuthMsg.ResultCode).toBe('1');
    expect(listed.body.Captions).toEqual([caption]);
    // Not playable yet: the detail shows no media address.
    const detail = await client.get('/Api/Video/Get', { Id: id });
    expect(detail.body.Captions).toEqual([]);
    expect(detail.body.ChaptersURL).toBe('');
  });

  it('takes WebVTT, a language in ISO 639-2, and names the track by its language when no label is sent', async () => {
    const id = await client.register();
    const added = await addCaption(id, 'WEBVTT\n\nNOTE a note\n\n1\n00:01.000 --> 00:02.000 align:start\n<i>Bonjour</i>\n', { Language: 'fre' });
    expect(added.body.Caption).toMatchObject({ Language: 'fr', Label: 'French' });
    expect(fs.readFileSync(t.vop.media.path('text', id, `${added.body.Caption.Id}.vtt`), 'utf8')).toBe('WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<i>Bonjour</i>\n\n');
  });

  it('removes a track: its row and its file', async () => {
    const id = await client.register();
    const { body } = await addCaption(id, SRT);
    expect(storedFiles(id)).toEqual([`${body.Caption.Id}.vtt`]);
    const removed = await client.post('/Api/Video/Caption/Delete', { VideoId: id, CaptionId: body.Caption.Id });
    expect(removed.body).toMatchObject({ AuthMsg: { ResultCode: '1' }, CaptionId: body.Caption.Id });
    expect((await client.get('/Api/Video/Captions', { VideoId: id })).body.Captions).toEqual([]);
    expect(storedFiles(id)).toEqual([]);
    expect((await client.post('/Api/Video/Caption/Delete', { VideoId: id, CaptionId: body.Caption.Id })).body.AuthMsg.ResultCode).toBe('317');
  });
});

describe('what is refused, before anything is stored', () => {
  let id: string;
  beforeAll(async () => {
    id = await client.register();
  });

  const refusals: Array<[what: string, file: Uint8Array | string, fields: Record<string, string>, code: string, detail?: RegExp]> = [
    ['Latin-1 text', Buffer.from('1\n00:00:01,000 --> 00:00:02,000\nCaf\xe9\n', 'latin1'), { Language: 'fr' }, '313', /not UTF-8.*line 3/],
    ['UTF-16 text', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('1\n00:00:01,000 --> 00:00:02,000\nHi\n', 'utf16le')]), { Language: 'en' }, '313', /UTF-16/],
    ['a binary file', Buffer.from([0x00, 0x00, 0x00, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32]), { Language: 'en' }, '313', /not text/],
    ['cues out of order', '1\n00:00:05,000 --> 00:00:06,000\nLater\n\n2\n00:00:01,000 --> 00:00:02,000\nSooner\n', { Language: 'en' }, '313', /line 6/],
    ['a malformed timing', '1\n00:00:05 --> 00:00:06\nNo milliseconds\n', { Language: 'en' }, '313', /line 2/],
    ['a file with no cue', 'WEBVTT\n\nNOTE nothing here\n', { Language: 'en' }, '313'],
    ['a file over 2 MiB', `1\n00:00:01,000 --> 00:00:02,000\n${'x'.repeat(2 * 1024 * 1024 + 10)}\n`, { Language: 'en' }, '314'],
    ['a language that is not BCP-47', SRT, { Language: 'en_US' }, '315'],
    ['a language no one speaks', SRT, { Language: 'xx' }, '315'],
    ['"und"', SRT, { Language: 'und' }, '315'],
    ['no language', SRT, {}, '100'],
    ['a label with a double quote', SRT, { Language: 'en', Label: 'Say "hi"' }, '201'],
    ['a label over 100 characters', SRT, { Language: 'en', Label: 'x'.repeat(101) }, '201'],
  ];
  for (const [what, file, fields, code, detail] of refusals) {
    it(`refuses ${what} with ${code}`, async () => {
      const r = await addCaption(id, file, fields);
      expect(r.body.AuthMsg.ResultCode).toBe(code);
      if (detail) expect(r.body.AuthMsg.ResultMessage).toMatch(detail);
      expect(storedFiles(id)).toEqual([]);
      expect((await client.get('/Api/Video/Captions', { VideoId: id })).body.Captions).toEqual([]);
    });
  }

  it('refuses a form without its file', async () => {
    const r = await client.postMultipart('/Api/Video/Caption', { VideoId: id, Language: 'en' });
    expect(r.body.AuthMsg.ResultCode).toBe('100');
  });

  it("refuses another application's video as unknown, and a wrong token", async () => {
    const other = await (await t.newApp('other')).register();
    expect((await addCaption(other, SRT)).body.AuthMsg.ResultCode).toBe('301');
    expect((await client.get('/Api/Video/Captions', { VideoId: other })).body.AuthMsg.ResultCode).toBe('301');
    const body = new FormData();
    for (const [k, v] of Object.entries({ ...client.auth({ Token: '0'.repeat(32) }), VideoId: id, Language: 'en' })) body.append(k, v);
    body.append('file', new Blob([SRT]), 'c.srt');
    const res = await fetch(`${t.baseUrl}/Api/Video/Caption`, { method: 'POST', body });
    expect(((await res.json()) as any).AuthMsg.ResultCode).toBe('104');
  });

  it('takes 20 caption tracks a video, and refuses the 21st', async () => {
    const full = await client.register();
    for (let i = 0; i < 20; i++) expect((await addCaption(full, SRT, { Language: 'en', Label: `Track ${i}` })).body.AuthMsg.ResultCode).toBe('1');
    const refused = await addCaption(full, SRT, { Language: 'en' });
    expect(refused.body.AuthMsg.ResultCode).toBe('316');
    expect(storedFiles(full)).toHaveLength(20);
  });

  it('refuses a caption for a video being deleted', async () => {
    const gone = await client.register();
    expect(await t.vop.stores.videos.setStatus(gone, 0)).toBe(true);
    expect((await addCaption(gone, SRT)).body.AuthMsg.ResultCode).toBe('303');
  });
});

describe("the console's caption calls (admin API)", () => {
  const adminForm = async (videoId: string, fields: Record<string, string>, file: string) => {
    const body = new FormData();
    for (const [k, v] of Object.entries(fields)) body.append(k, v);
    body.append('file', new Blob([Buffer.from(file)]), 'c.srt');
    const res = await fetch(`${t.baseUrl}/admin/api/videos/${videoId}/captions`, { method: 'POST', headers: { Authorization: `Bearer ${t.vop.adminToken}` }, body });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('adds, lists and removes a caption track as the API does, in the same shape', async () => {
    const id = await client.register();
    const added = await adminForm(id, { language: 'de', label: 'Deutsch' }, SRT);
    expect(added.status).toBe(200);
    expect(added.body.caption).toEqual({ id: expect.stringMatching(/^[0-9a-f]{8}$/), language: 'de', label: 'Deutsch', origin: 'api', url: `${t.baseUrl}/media/text/${id}/${added.body.caption.id}.vtt` });
    expect((await t.admin.request('GET', `/videos/${id}/captions`)).body).toEqual({ captions: [added.body.caption] });
    // The application sees the console's track as its own.
    expect((await client.get('/Api/Video/Captions', { VideoId: id })).body.Captions.map((c: { Id: string }) => c.Id)).toEqual([added.body.caption.id]);
    const removed = await t.admin.request('DELETE', `/videos/${id}/captions/${added.body.caption.id}`);
    expect(removed).toMatchObject({ status: 200, body: { removed: added.body.caption.id } });
    expect((await t.admin.request('DELETE', `/videos/${id}/captions/${added.body.caption.id}`)).body.error.code).toBe('317');
  });

  it('refuses a bad file with the status and code of the catalogue', async () => {
    const id = await client.register();
    const refused = await adminForm(id, { language: 'en' }, 'WEBVTT\n\n00:02.000 --> 00:01.000\nBackwards\n');
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('313');
    expect(refused.body.error.message).toMatch(/line 3/);
    const language = await adminForm(id, { language: 'klingon' }, SRT);
    expect([language.status, language.body.error.code]).toEqual([400, '315']);
  });
});

/**
 * Registration, spec 4.2 and the limits of section 8 (issue 2, item 6).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { UUID_V4_RE } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';

const code = (r: { body: any }) => r.body?.AuthMsg?.ResultCode as string;
const codePoints = (s: string) => [...s].length;

describe('4.2 registration', () => {
  let s: TestServer;
  let c: SpecClient;
  beforeAll(async () => {
    s = await startServer();
    c = await s.newApp('registrar');
  });
  afterAll(() => s.close());

  /** Registers and reads the video back through the detail call. */
  async function registerAndRead(fields: Record<string, string | number>) {
    const r = await c.post('/Api/Video/Post', { SourceFileGetType: 1, ...fields });
    expect(r.body.AuthMsg, r.text).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
    const d = await c.get('/Api/Video/Get', { Id: r.body.VideoId });
    return { id: r.body.VideoId as string, model: d.body.VideoModel, stored: (await s.vop.stores.videos.get(r.body.VideoId))! };
  }

  it('registers from an application/x-www-form-urlencoded form and answers AuthMsg and VideoId', async () => {
    const r = await c.post('/Api/Video/Post', {
      VideoTitle: 'First',
      Description: 'Desc',
      Tags: 'x,y',
      Actors: 'Ann',
      CreateUser: 'bob',
      SourceFileGetType: 1,
    });
    expect(r.status).toBe(200);
    expect(r.contentType).toBe('application/json; charset=utf-8');
    expect(Object.keys(r.body).sort()).toEqual(['AuthMsg', 'VideoId']);
    expect(r.body.AuthMsg).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
    expect(r.body.VideoId).toMatch(UUID_V4_RE);
    const d = await c.get('/Api/Video/Get', { Id: r.body.VideoId });
    expect(d.body.VideoModel).toMatchObject({ Id: r.body.VideoId, VideoTitle: 'First', Description: 'Desc', Tags: 'x,y', Actors: 'Ann', CreateUser: 'bob', Status: 8 });
  });

  it('registers from a multipart/form-data form too', async () => {
    const r = await c.postMultipart('/Api/Video/Post', { VideoTitle: '多部分', CreateUser: 'mp', SourceFileGetType: 2, SourceFilePath: 'https://files.example/a/clip.mp4' });
    expect(r.body.AuthMsg.ResultCode, r.text).toBe('1');
    const d = await c.get('/Api/Video/Get', { Id: r.body.VideoId });
    expect(d.body.VideoModel).toMatchObject({ VideoTitle: '多部分', CreateUser: 'mp', Status: 2 });
  });

  it('reads the form field names without regard to case', async () => {
    const r = await c.post('/Api/Video/Post', { videotitle: 'lower', SOURCEFILEGETTYPE: 2, sourcefilepath: 'http://h.example/v.flv', createuser: 'cu' });
    expect(code(r), r.text).toBe('1');
    const d = await c.get('/Api/Video/Get', { Id: r.body.VideoId });
    expect(d.body.VideoModel).toMatchObject({ VideoTitle: 'lower', CreateUser: 'cu', Status: 2 });
  });

  it('decodes URL-encoded values ("+" is a space; &, = and % survive)', async () => {
    const body = `${new URLSearchParams(c.auth())}&VideoTitle=a+b%20%26%20c%3Dd%25&SourceFileGetType=1`;
    const res = await fetch(`${s.baseUrl}/Api/Video/Post`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    const id = (await res.json()).VideoId;
    expect((await s.vop.stores.videos.get(id))?.title).toBe('a b & c=d%');
  });

  it('issues a distinct random UUID (version 4) for every video', async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, () => c.register()));
    for (const id of ids) expect(id).toMatch(UUID_V4_RE);
    expect(new Set(ids).size).toBe(20);
  });

  describe('cutting to the limits of section 8, in Unicode code points', () => {
    it('cuts a title of 51 emoji to the first 50, never splitting one', async () => {
      const { model } = await registerAndRead({ VideoTitle: '😀'.repeat(50) + '🎬' });
      expect(model.VideoTitle).toBe('😀'.repeat(50));
      expect(codePoints(model.VideoTitle)).toBe(50);
      expect(model.VideoTitle.length).toBe(100); // UTF-16 units: 50 surrogate pairs
    });

    it('cuts a CJK title to 50 characters, and keeps one of exactly 50', async () => {
      const cjk = '视频标题'.repeat(15); // 60 characters
      expect((await registerAndRead({ VideoTitle: cjk })).model.VideoTitle).toBe(cjk.slice(0, 50));
      const fifty = 'é'.repeat(50);
      expect((await registerAndRead({ VideoTitle: fifty })).model.VideoTitle).toBe(fifty);
    });

    it('cuts Description to 400, Actors to 50 and CreateUser to 50 characters', async () => {
      const description = 'd'.repeat(399) + '😀' + 'tail';
      const { model } = await registerAndRead({ VideoTitle: 't', Description: description, Actors: '演'.repeat(51), CreateUser: 'ü'.repeat(51) });
      expect(model.Description).toBe('d'.repeat(399) + '😀');
      expect(codePoints(model.Description)).toBe(400);
      expect(model.Actors).toBe('演'.repeat(50));
      expect(model.CreateUser).toBe('ü'.repeat(50));
    });

    it('keeps values at their limits whole', async () => {
      const { model } = await registerAndRead({ VideoTitle: 'x'.repeat(50), Description: '字'.repeat(400), Actors: 'a'.repeat(50), CreateUser: 'c'.repeat(50) });
      expect(model).toMatchObject({ VideoTitle: 'x'.repeat(50), Description: '字'.repeat(400), Actors: 'a'.repeat(50), CreateUser: 'c'.repeat(50) });
    });

    it.each([
      ['keeps the first 5 tags', 'a,b,c,d,e,f,g', 'a,b,c,d,e'],
      ['trims tags and drops empty ones', ' a , b ,, c ,', 'a,b,c'],
      ['splits on the full-width comma too', '甲，乙，丙,丁', '甲,乙,丙,丁'],
      ['then cuts to 60 characters', ['t'.repeat(20), 'u'.repeat(20), 'v'.repeat(20), 'w'.repeat(5)].join(','), `${'t'.repeat(20)},${'u'.repeat(20)},${'v'.repeat(18)}`],
      ['counts code points when cutting tags', `${'😀'.repeat(30)},${'🎬'.repeat(40)}`, `${'😀'.repeat(30)},${'🎬'.repeat(29)}`],
      ['keeps a single tag of 60', 'x'.repeat(60), 'x'.repeat(60)],
    ])('Tags: %s', async (_what, tags, expected) => {
      const { model } = await registerAndRead({ VideoTitle: 'tags', Tags: tags });
      expect(model.Tags).toBe(expected);
      expect(codePoints(model.Tags)).toBeLessThanOrEqual(60);
    });

    it('cuts SourceFilePath to 200 characters before checking it', async () => {
      const exact = `http://h.example/${'p'.repeat(200 - 'http://h.example/'.length - 4)}.mp4`;
      expect(exact.length).toBe(200);
      const a = await registerAndRead({ VideoTitle: 'u', SourceFileGetType: 2, SourceFilePath: exact });
      expect(a.stored.sourceUrl).toBe(exact);
      // 230 characters whose first 200 still end in a file name with an extension.
      const longer = `${exact}?token=${'z'.repeat(23)}`;
      const b = await registerAndRead({ VideoTitle: 'u', SourceFileGetType: 2, SourceFilePath: longer });
      expect(b.stored.sourceUrl).toBe(exact);
      expect(b.model.Status).toBe(2);
      // When the cut takes the extension away, the address is refused.
      const cutAway = `http://h.example/${'q'.repeat(190)}.mp4`;
      expect(code(await c.post('/Api/Video/Post', { VideoTitle: 'u', SourceFileGetType: 2, SourceFilePath: cutAway }))).toBe('201');
    });
  });

  describe('VideoTitle and SourceFileGetType', () => {
    it.each([
      ['absent', undefined],
      ['empty', ''],
      ['only spaces', '   '],
    ])('refuses a VideoTitle that is %s with 100', async (_what, title) => {
      const fields: Record<string, string | number> = { SourceFileGetType: 1 };
      if (title !== undefined) fields.VideoTitle = title;
      const r = await c.post('/Api/Video/Post', fields);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ AuthMsg: { ResultCode: '100', ResultMessage: 'Missing parameter: VideoTitle' } });
    });

    it('refuses a registration without SourceFileGetType with 100', async () => {
      const r = await c.post('/Api/Video/Post', { VideoTitle: 't' });
      expect(r.body.AuthMsg).toEqual({ ResultCode: '100', ResultMessage: 'Missing parameter: SourceFileGetType' });
    });

    it('gives status 8 for SourceFileGetType 1, and ignores a SourceFilePath sent with it', async () => {
      const { model, stored } = await registerAndRead({ VideoTitle: 'upload', SourceFileGetType: 1, SourceFilePath: 'ftp://ignored/whatever' });
      expect(model.Status).toBe(8);
      expect(stored.sourceType).toBe(1);
      expect(stored.sourceUrl).toBe('');
    });

    it.each(['http://media.example/path/clip.mp4', 'https://media.example/a%20b/clip.MOV?sig=abc#frag', 'HTTPS://MEDIA.EXAMPLE/X.MKV'])(
      'gives status 2 for SourceFileGetType 2 with %s',
      async (url) => {
        const { model, stored } = await registerAndRead({ VideoTitle: 'pull', SourceFileGetType: 2, SourceFilePath: url });
        expect(model.Status).toBe(2);
        expect(stored.sourceType).toBe(2);
        expect(stored.sourceUrl).toBe(url);
      },
    );

    it.each([['absent'], ['empty'], ['spaces']])('refuses SourceFileGetType 2 with SourceFilePath %s with 100', async (what) => {
      const fields: Record<string, string | number> = { VideoTitle: 't', SourceFileGetType: 2 };
      if (what === 'empty') fields.SourceFilePath = '';
      if (what === 'spaces') fields.SourceFilePath = '   ';
      const r = await c.post('/Api/Video/Post', fields);
      expect(code(r)).toBe('100');
      expect(r.body.AuthMsg.ResultMessage).toMatch(/^Missing parameter: SourceFilePath/);
    });

    it.each([
      ['an ftp address', 'ftp://media.example/clip.mp4'],
      ['a file address', 'file:///etc/clip.mp4'],
      ['no file extension', 'http://media.example/clip'],
      ['only a host', 'http://media.example/'],
      ['an extension on the host only', 'http://media.example.com'],
      ['not an address at all', 'clip.mp4'],
    ])('refuses SourceFileGetType 2 with %s with 201', async (_what, url) => {
      const r = await c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 2, SourceFilePath: url });
      expect(r.status).toBe(200);
      expect(code(r)).toBe('201');
      expect(r.body.AuthMsg.ResultMessage).toMatch(/^Invalid Parameter: SourceFilePath/);
    });

    it.each(['3', '0', 'abc', '-1', '1.0', '01', '2x'])('refuses SourceFileGetType %j with 201', async (type) => {
      const r = await c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: type, SourceFilePath: 'http://h.example/a.mp4' });
      expect(r.body.AuthMsg).toEqual({ ResultCode: '201', ResultMessage: 'Invalid Parameter: SourceFileGetType must be 1 (upload) or 2 (download from URL)' });
    });

    it('stores nothing when it refuses', async () => {
      const before = (await c.get('/Api/Video/GetList')).body.Total;
      await c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 3 });
      await c.post('/Api/Video/Post', { SourceFileGetType: 1 });
      await c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 2, SourceFilePath: 'ftp://x/y.mp4' });
      expect((await c.get('/Api/Video/GetList')).body.Total).toBe(before);
    });
  });
});

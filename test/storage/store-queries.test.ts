import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppService } from '../../server/services/appService.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import { videoRecord } from '../helpers/fixtures.js';

describe('VideoStore queries', () => {
  let dir: string;
  let stores: Awaited<ReturnType<typeof openSqlJsStores>>;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-renditions-'));
    stores = await openSqlJsStores({ dir });
  });
  afterAll(async () => {
    await stores.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lists a video’s renditions highest bitrate first, then by label, and only its own', async () => {
    const app = await new AppService(stores.apps).create({ name: 'a' });
    const [v, other] = [videoRecord(app.appId, { status: 1 }), videoRecord(app.appId, { status: 1 })];
    await stores.videos.insert(v);
    await stores.videos.insert(other);
    const r = (label: string, bitrateKbps: number, videoId = v.id) => ({ videoId, label, width: 2, height: 2, bitrateKbps, file: `d/${label}.mp4`, bytes: 1 });
    await stores.videos.setRenditions(v.id, [r('360p', 800), r('1080p', 5000), r('720p-b', 2500), r('720p-a', 2500), r('240p', 400)]);
    await stores.videos.setRenditions(other.id, [r('9999p', 99_999, other.id)]);
    expect((await stores.videos.renditions(v.id)).map((x) => x.label)).toEqual(['1080p', '720p-a', '720p-b', '360p', '240p']);
    expect(await stores.videos.renditions('00000000-0000-4000-8000-000000000000')).toEqual([]);
  });

  it('reads list pages newest first straight from videos_by_app, backwards, without sorting', async () => {
    const plan = (sql: string) => stores.db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ['app', 50, 0]).map((r) => r.detail).join('\n');
    const list = plan('SELECT * FROM videos WHERE app_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?');
    expect(list).toContain('USING INDEX videos_by_app');
    expect(list).not.toContain('TEMP B-TREE');
    const cols = stores.db.all<{ name: string; desc: number }>("SELECT name, desc FROM pragma_index_xinfo('videos_by_app') WHERE key = 1");
    expect(cols).toEqual([
      { name: 'app_id', desc: 0 },
      { name: 'created_at', desc: 0 },
      { name: 'id', desc: 0 },
    ]);
  });
});

/**
 * Registrations per application: a rate (on by default) and a quota (off by default), both
 * settings (issue 12, item 10). Over real HTTP, as an application server calls.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import { savedSettingsAsOptions } from '../../server/settings/consoleSettings.js';
import { DEFAULT_VIDEO_OPTIONS } from '../../server/services/videoService.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { clearOfMinuteTurn } from '../helpers/wait.js';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const register = async (c: Awaited<ReturnType<TestServer['newApp']>>) => c.post('/Api/Video/Post', { VideoTitle: 'v', SourceFileGetType: 1 });

describe('registration limits', () => {
  it('limits registrations per minute for each application, and says when to try again', async () => {
    t = await startServer({ videos: { ...DEFAULT_VIDEO_OPTIONS, registrationsPerMinute: 5 } });
    const busy = await t.newApp('busy');
    const other = await t.newApp('other');
    // The six calls within one clock minute, else the count starts again between them.
    await clearOfMinuteTurn(5_000);
    const codes = [];
    for (let i = 0; i < 6; i++) codes.push((await register(busy)).body.AuthMsg.ResultCode);
    expect(codes).toEqual(['1', '1', '1', '1', '1', '308']);
    const refused = await register(busy);
    expect(refused.status).toBe(200);
    expect(refused.body.AuthMsg.ResultMessage).toMatch(/^Too Many Registrations: at most 5 registrations a minute per application; try again in \d+ s$/);
    // Nothing was written for the refused calls.
    expect((await busy.get('/Api/Video/GetList')).body.Total).toBe(5);
    // Another application has its own allowance.
    expect((await register(other)).body.AuthMsg.ResultCode).toBe('1');
  });

  it('keeps each application within its quota of videos; deleted ones do not count', async () => {
    t = await startServer({ videos: { ...DEFAULT_VIDEO_OPTIONS, maxVideosPerApp: 3 } });
    const c = await t.newApp();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await register(c)).body.VideoId);
    const over = await register(c);
    expect(over.body.AuthMsg.ResultCode).toBe('309');
    expect(over.body.AuthMsg.ResultMessage).toBe('Video Quota Reached: this application has 3 videos, its quota is 3; delete some or ask the admin for more');
    expect((await t.admin.request('DELETE', `/videos/${ids[0]}`)).status).toBe(200);
    expect((await register(c)).body.AuthMsg.ResultCode).toBe('1');
    expect((await register(c)).body.AuthMsg.ResultCode).toBe('309');
  });

  it('has a rate on and a quota off by default, both settable from the console and refused when negative', async () => {
    expect(DEFAULT_VIDEO_OPTIONS).toMatchObject({ registrationsPerMinute: 600, maxVideosPerApp: 0 });
    t = await startServer();
    const put = await t.admin.request('PUT', '/settings', { registrationsPerMinute: 0, maxVideosPerApp: 1000 });
    expect(put.status).toBe(200);
    // Applied at once: the running options change, nothing waits for a restart.
    expect(put.body.applied).toEqual(['registrationsPerMinute', 'maxVideosPerApp']);
    expect(put.body.afterRestart).toEqual([]);
    expect(t.vop.options.videos).toMatchObject({ registrationsPerMinute: 0, maxVideosPerApp: 1000 });
    expect((await t.admin.request('PUT', '/settings', { maxVideosPerApp: -1 })).status).toBe(400);
    const saved = (await t.admin.request('GET', '/settings')).body.saved;
    const o = resolveOptions({ dataDir: t.dataDir, ...savedSettingsAsOptions(saved).options });
    expect(o.videos).toMatchObject({ registrationsPerMinute: 0, maxVideosPerApp: 1000, maxPageSize: 200 });
    expect(() => resolveOptions({ dataDir: t!.dataDir, videos: { ...DEFAULT_VIDEO_OPTIONS, registrationsPerMinute: 1.5 } })).toThrow(/videos.registrationsPerMinute/);
  });
});

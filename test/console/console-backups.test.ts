import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { zhCN } from '../../renderer/src/messages/zh-CN.js';
import { verifyBackup } from '../../server/backup/verifyBackup.js';
import { launchBrowser } from '../helpers/browser.js';
import { CookieClient, ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { ADMIN_TOKEN, startServer, tempDataDir, type TestServer } from '../helpers/server.js';

/**
 * The console's Backups page (docs/backup.md, "Scheduled backups and the console"): a backup made
 * with its button, listed as verified, downloaded by its link and verified again; and the ticket
 * that lets a plain link download one backup and nothing else.
 */

const servers: TestServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function boot() {
  const s = await startServer({ timeZone: 'Asia/Shanghai' });
  servers.push(s);
  return s;
}

describe('downloading a backup with the console’s session', () => {
  it('takes a ticket for that one backup, in the query, with the cookie; nothing else opens it', async () => {
    const s = await boot();
    const made = (await s.admin.request('POST', '/backups', { media: 'none' })).body;
    const other = (await s.admin.request('POST', '/backups', { media: 'none' })).body;
    const c = new CookieClient(s.baseUrl);
    const refused = async (res: Response, code = '412') => {
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe(code);
    };
    expect((await c.login(ADMIN_TOKEN)).status).toBe(200);
    // The cookie alone (a link followed by the browser) is refused.
    await refused(await c.raw('GET', `/admin/api/backups/${made.name}`, undefined, { consoleHeader: false }));
    const { status, body } = await c.json('POST', `/backups/${made.name}/ticket`);
    expect(status).toBe(200);
    expect(body.url).toMatch(new RegExp(`^/admin/api/backups/${made.name}\\?ticket=`));
    expect(body.bytes).toBe(made.bytes);
    const res = await c.raw('GET', body.url, undefined, { consoleHeader: false });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).length).toBe(made.bytes);
    // The ticket opens its own backup only, and nothing without the cookie.
    const ticket = new URL(body.url, s.baseUrl).searchParams.get('ticket')!;
    await refused(await c.raw('GET', `/admin/api/backups/${other.name}?ticket=${ticket}`, undefined, { consoleHeader: false }));
    await refused(await c.raw('GET', `/admin/api/backups?ticket=${ticket}`, undefined, { consoleHeader: false }));
    await refused(await c.raw('GET', `/admin/api/events?ticket=${ticket}`, undefined, { consoleHeader: false }));
    await refused(await fetch(`${s.baseUrl}${body.url}`), '410');
    // No ticket for a backup that is not there; the bearer token needs none.
    expect((await c.json('POST', '/backups/vop-backup-20000101-000000.tar/ticket')).body.error.code).toBe('310');
    expect((await s.admin.request('POST', `/backups/${made.name}/ticket`)).status).toBe(400);
  });
});

describe('the Backups page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('makes a backup with its button, lists it as verified with the schedule, and downloads a file that verifies', async () => {
    const s = await boot();
    const app = await s.newApp();
    await app.register({ VideoTitle: 'in the backup' });
    const context = await browser.newContext({ locale: 'en-US', acceptDownloads: true });
    const page = await context.newPage();
    try {
      await logIntoConsole(page, s.baseUrl);
      await page.getByRole('link', { name: 'Backups' }).click();
      await page.getByRole('heading', { level: 1, name: 'Backups' }).waitFor();
      await page.getByText('No backup has been made in the backup folder yet.').waitFor();
      // The schedule, from the server: the daily backup at 02:00 Shanghai time, 14 kept, full ones off.
      const daily = page.locator('[data-schedule="daily"]');
      await expect.poll(() => daily.textContent()).toContain('at 02:00');
      expect(await daily.textContent()).toContain('the last 14 kept');
      expect(await daily.textContent()).toContain('next:');
      expect(await page.locator('[data-schedule="full"]').textContent()).toContain('Off');
      expect(await page.getByText('Times are in Asia/Shanghai.').count()).toBe(1);

      await page.getByLabel('Include the media files').check();
      await page.getByRole('button', { name: 'Back up now' }).click();
      await page.getByRole('status').filter({ hasText: 'written and verified' }).waitFor({ timeout: 60_000 });
      const row = page.locator('tr[data-backup]');
      await expect.poll(() => row.count()).toBe(1);
      const name = (await row.getAttribute('data-backup'))!;
      expect(name).toMatch(/^vop-backup-\d{8}-\d{6}-full\.tar$/);
      expect(await row.locator('[data-verified="true"]').count()).toBe(1);
      expect(await row.textContent()).toContain('with media');
      const last = page.getByTestId('last-backup');
      expect(await last.locator('[data-verified="true"]').count()).toBe(1);
      expect(await last.textContent()).toContain('1 application, 1 video,');

      const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: `Download ${name}` }).click()]);
      expect(download.suggestedFilename()).toBe(name);
      const saved = path.join(tempDataDir('vop-download-'), name);
      await download.saveAs(saved);
      const checked = await verifyBackup(saved);
      expect(checked.problems).toEqual([]);
      expect(checked.manifest!.media).toBe('include');
      expect(checked.manifest!.counts.videos).toBe(1);
      expect(fs.statSync(saved).size).toBe(fs.statSync(path.join(s.dataDir, 'backups', name)).size);
    } finally {
      await context.close();
    }
  });

  it('shows a failed backup’s reason, in Chinese too', async () => {
    const dir = path.join(tempDataDir(), 'a-file');
    fs.writeFileSync(dir, 'not a folder');
    const s = await startServer({ backups: { dir } });
    servers.push(s);
    const context = await browser.newContext({ locale: 'zh-CN' });
    const page = await context.newPage();
    try {
      await page.goto(`${s.baseUrl}/console`);
      await page.locator('input[type="password"]').fill(ADMIN_TOKEN);
      await page.keyboard.press('Enter');
      await page.getByRole('link', { name: '备份' }).click();
      await page.getByRole('heading', { level: 1, name: '备份' }).waitFor();
      await page.getByRole('button', { name: '立即备份' }).click();
      await page.getByRole('alert').waitFor();
      // The code said in Chinese, with the server's reason: the folder cannot be made where a file is.
      const said = await page.getByRole('alert').textContent();
      expect(said).toMatch(new RegExp(`(EEXIST|ENOTDIR).*${dir}`));
      const refusal = (await s.admin.request('POST', '/backups', {})).body.error;
      expect(refusal.code).toBe('312');
      expect(said).toBe((zhCN.serverWords.resultCodes['312'] as (detail: string) => string)(refusal.detail));
      expect(await page.getByRole('button', { name: '立即备份' }).isEnabled()).toBe(true);
    } finally {
      await context.close();
    }
  });
});

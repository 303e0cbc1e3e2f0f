import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import { resolveBackupOptions } from '../../server/backup/backupOptions.js';
import { instantOfWallTime, nextRunAt } from '../../server/backup/backupSchedule.js';
import { verifyBackup } from '../../server/backup/verifyBackup.js';
import { ScheduledBackups } from '../../server/backup/scheduledBackups.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';
import { isWarningLine } from '../../server/core/logLines.js';

/**
 * The backup schedule (docs/backup.md, "Scheduled backups and the console"): when it runs, in a
 * time zone and across daylight saving; and, on a real server with a real data folder, that a
 * scheduled backup lands in the folder and verifies, that the oldest go beyond what is kept, and
 * that a failed one is a warning of /healthz until one succeeds.
 */

const iso = (ms: number) => new Date(ms).toISOString();

describe('the next run (fixed clocks)', () => {
  it('is today at the time if it is still to come, else tomorrow, read in the zone', () => {
    expect(iso(nextRunAt(Date.parse('2026-03-10T01:00:00Z'), '02:00', 'UTC'))).toBe('2026-03-10T02:00:00.000Z');
    expect(iso(nextRunAt(Date.parse('2026-03-10T02:00:00Z'), '02:00', 'UTC'))).toBe('2026-03-11T02:00:00.000Z');
    // Shanghai is UTC+8 all year: 02:00 there is 18:00 UTC the day before.
    expect(iso(nextRunAt(Date.parse('2026-03-10T12:00:00Z'), '02:00', 'Asia/Shanghai'))).toBe('2026-03-10T18:00:00.000Z');
    expect(iso(nextRunAt(Date.parse('2026-03-10T18:00:01Z'), '02:00', 'Asia/Shanghai'))).toBe('2026-03-11T18:00:00.000Z');
    // Across the end of a month and of a year.
    expect(iso(nextRunAt(Date.parse('2026-12-31T23:30:00Z'), '00:15', 'UTC'))).toBe('2027-01-01T00:15:00.000Z');
  });

  it('keeps the wall time across daylight saving, one run a day', () => {
    const berlin = 'Europe/Berlin';
    // Clocks go forward on 2026-03-29 at 02:00 (CET +1 to CEST +2).
    expect(iso(nextRunAt(Date.parse('2026-03-28T12:00:00Z'), '04:00', berlin))).toBe('2026-03-29T02:00:00.000Z');
    expect(iso(nextRunAt(Date.parse('2026-03-27T12:00:00Z'), '04:00', berlin))).toBe('2026-03-28T03:00:00.000Z');
    // 02:30 does not exist that night: it runs as far past the jump (03:30 CEST), once.
    const skipped = nextRunAt(Date.parse('2026-03-28T12:00:00Z'), '02:30', berlin);
    expect(iso(skipped)).toBe('2026-03-29T01:30:00.000Z');
    expect(iso(nextRunAt(skipped, '02:30', berlin))).toBe('2026-03-30T00:30:00.000Z');
    // Clocks go back on 2026-10-25 at 03:00: 02:30 happens twice; it runs at the first, and not again that day.
    const twice = nextRunAt(Date.parse('2026-10-24T12:00:00Z'), '02:30', berlin);
    expect(iso(twice)).toBe('2026-10-25T00:30:00.000Z');
    expect(iso(nextRunAt(twice, '02:30', berlin))).toBe('2026-10-26T01:30:00.000Z');
    expect(iso(instantOfWallTime(2026, 10, 25, 2, 30, berlin))).toBe('2026-10-25T00:30:00.000Z');
  });

  it('falls on the named weekday for a weekly run, a week on when today’s time has passed', () => {
    // 2026-03-10 is a Tuesday.
    expect(iso(nextRunAt(Date.parse('2026-03-10T12:00:00Z'), '03:00', 'UTC', 0))).toBe('2026-03-15T03:00:00.000Z');
    expect(iso(nextRunAt(Date.parse('2026-03-10T02:00:00Z'), '03:00', 'UTC', 2))).toBe('2026-03-10T03:00:00.000Z');
    expect(iso(nextRunAt(Date.parse('2026-03-10T04:00:00Z'), '03:00', 'UTC', 2))).toBe('2026-03-17T03:00:00.000Z');
    // Sunday 01:00 in Shanghai is Saturday 17:00 UTC.
    expect(iso(nextRunAt(Date.parse('2026-03-10T12:00:00Z'), '01:00', 'Asia/Shanghai', 0))).toBe('2026-03-14T17:00:00.000Z');
  });
});

describe('the backups options', () => {
  it('defaults to a daily backup at 02:00 with 14 kept and no full one, in <dataDir>/backups', () => {
    const o = resolveOptions({ dataDir: 'x' }).backups;
    expect(o).toEqual({ daily: { enabled: true, at: '02:00', keep: 14 }, full: { every: 'off', at: '03:00', weekday: 'sunday', keep: 4 } });
    expect(resolveOptions({ dataDir: 'x', backups: { dir: 'rel/b' } }).backups.dir).toBe(path.resolve('rel/b'));
    expect(resolveOptions({ dataDir: 'x', backups: { full: { every: 'weekly' } } }).backups.full).toMatchObject({ every: 'weekly', at: '03:00' });
  });

  it('refuses a bad value, naming the option', () => {
    expect(() => resolveBackupOptions({ daily: { at: '2am' } })).toThrow('Option backups.daily.at must be a time of day as HH:MM');
    expect(() => resolveBackupOptions({ full: { at: '24:00' } })).toThrow('Option backups.full.at');
    expect(() => resolveBackupOptions({ daily: { keep: 0 } })).toThrow('Option backups.daily.keep must be a whole number from 1 to 1000.');
    expect(() => resolveBackupOptions({ full: { every: 'hourly' as never } })).toThrow('Option backups.full.every must be one of off, daily, weekly');
    expect(() => resolveBackupOptions({ full: { weekday: 'Sun' as never } })).toThrow('Option backups.full.weekday');
    expect(() => resolveBackupOptions({ daily: { enabled: 'yes' as never } })).toThrow('Option backups.daily.enabled must be true or false.');
    expect(() => resolveBackupOptions({ dir: '' })).toThrow('Option backups.dir');
  });
});

const servers: TestServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function health(s: TestServer): Promise<{ warnings: string[] }> {
  return (await fetch(`${s.baseUrl}/healthz`, { headers: { authorization: `Bearer ${s.admin.token}` } })).json();
}

/** The daily run's next time, as the admin API shows it. */
async function nextDaily(s: TestServer): Promise<number> {
  const r = await s.admin.request('GET', '/backups');
  expect(r.status).toBe(200);
  return Date.parse(r.body.schedule.daily.next);
}

describe('scheduled backups on a real server', () => {
  it('writes a verified daily backup without media into the folder, and keeps only the newest `keep`', async () => {
    const s = await startServer({ backups: { daily: { keep: 2 } }, timeZone: 'Asia/Shanghai' });
    servers.push(s);
    const app = await s.newApp();
    await app.register({ VideoTitle: 'kept' });
    const first = await nextDaily(s);
    // The next run is a 02:00 in Shanghai, within a day.
    expect(new Date(first).getUTCHours()).toBe(18);
    expect(first - Date.now()).toBeLessThanOrEqual(24 * 3600_000);

    const made: string[] = [];
    let due = first;
    for (let i = 0; i < 3; i++) {
      // The schedule's clock, moved past the run's time: it fires now.
      await s.vop.backups.schedule.runDue(due + 1000);
      const { body } = await s.admin.request('GET', '/backups');
      expect(body.schedule.last.daily).toMatchObject({ ok: true });
      made.push(body.schedule.last.daily.name);
      const next = Date.parse(body.schedule.daily.next);
      expect(next - due).toBe(24 * 3600_000);
      due = next;
    }
    const folder = path.join(s.dataDir, 'backups');
    const files = fs.readdirSync(folder).filter((f) => f.endsWith('.tar')).sort();
    // The two newest are kept, the first removed with its record.
    expect(files).toEqual(made.slice(1).sort());
    expect(fs.readdirSync(folder).filter((f) => f.endsWith('.json')).sort()).toEqual(files.map((f) => `${f}.json`));
    for (const f of files) {
      const checked = await verifyBackup(path.join(folder, f));
      expect(checked.problems).toEqual([]);
      expect(checked.manifest!.media).toBe('none');
      expect(checked.manifest!.counts.videos).toBe(1);
    }
    const listed = (await s.admin.request('GET', '/backups')).body.backups;
    expect(listed.map((b: { name: string }) => b.name)).toEqual([made[2], made[1]]);
    expect(listed[0]).toMatchObject({ by: 'schedule', verified: true, media: 'none' });
    expect((await health(s)).warnings).toEqual([]);
  });

  it('makes full backups with media on their own schedule, kept apart from the daily ones', async () => {
    const s = await startServer({ backups: { daily: { enabled: false }, full: { every: 'weekly', weekday: 'wednesday', at: '04:30', keep: 1 } }, timeZone: 'UTC' });
    servers.push(s);
    const { body } = await s.admin.request('GET', '/backups');
    expect(body.schedule.daily.next).toBeNull();
    const due = Date.parse(body.schedule.full.next);
    expect(new Date(due).getUTCDay()).toBe(3);
    expect(iso(due).slice(11)).toBe('04:30:00.000Z');
    // A daily backup the console made is not the full rotation's to remove.
    await s.admin.request('POST', '/backups', { media: 'none' });
    await s.vop.backups.schedule.runDue(due);
    await s.vop.backups.schedule.runDue(Date.parse((await s.admin.request('GET', '/backups')).body.schedule.full.next));
    const listed = (await s.admin.request('GET', '/backups')).body.backups as Array<{ name: string; media: string; by: string }>;
    expect(listed.map((b) => [b.media, b.by])).toEqual([
      ['include', 'schedule'],
      ['none', 'console'],
    ]);
    expect(listed[0]!.name).toMatch(/-full\.tar$/);
  });

  it('reports a failed scheduled backup in /healthz and the log until one succeeds', async () => {
    const dir = path.join(tempDataDir(), 'not-a-folder');
    fs.writeFileSync(dir, 'a file where the backup folder should be');
    const s = await startServer({ backups: { dir } });
    servers.push(s);
    expect((await health(s)).warnings).toEqual([]);
    let due = await nextDaily(s);
    await s.vop.backups.schedule.runDue(due);
    const warnings = (await health(s)).warnings;
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^The scheduled daily backup at .* failed: /);
    // The log warns of it too, with why (the folder that is a file).
    expect(s.logs.some((l) => isWarningLine(l) && l.includes('not-a-folder'))).toBe(true);
    // Anyone else gets only the status.
    expect(await (await fetch(`${s.baseUrl}/healthz`)).json()).toEqual({ status: 'ok' });

    // The folder made right: the next run succeeds and the warning goes.
    fs.rmSync(dir);
    due = await nextDaily(s);
    await s.vop.backups.schedule.runDue(due);
    expect((await health(s)).warnings).toEqual([]);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tar'))).toHaveLength(1);
  });

  it('fires by its own timer, and a run that meets another backup waits for it', async () => {
    const s = await startServer({ backups: { daily: { enabled: false } } });
    servers.push(s);
    let now = Date.parse('2026-06-01T10:00:00Z');
    const schedule = new ScheduledBackups({
      backups: s.vop.backups.service,
      options: resolveBackupOptions({ daily: { at: '10:05', keep: 5 } }),
      timeZone: 'UTC',
      fullMedia: 'include',
      runsHere: true,
      log: (l) => s.logs.push(l),
      now: () => now,
      tickMs: 20,
      busyRetryMs: 20,
    });
    schedule.start();
    try {
      expect(schedule.view().daily.next).toBe('2026-06-01T10:05:00.000Z');
      // Time is the subject: five ticks (20 ms) before its time, no backup is made.
      await new Promise((r) => setTimeout(r, 100));
      expect(schedule.view().last.daily).toBeUndefined();
      now = Date.parse('2026-06-01T10:05:00Z');
      expect(await waitUntil('the daily backup', () => schedule.view().last.daily, { timeoutMs: 5_000, pollMs: 50 })).toMatchObject({ ok: true });
      expect(schedule.view().daily.next).toBe('2026-06-02T10:05:00.000Z');
      // The pass that made it has ended: it records its run before it prunes, and a runDue that
      // meets a pass under way leaves the work to that pass (the next tick's), as a tick would.
      await schedule.runDue(now);

      // A console backup under way when the time comes: the scheduled one waits, then runs.
      const consoleBackup = s.vop.backups.service.make('include', 'console');
      const scheduled = schedule.runDue(Date.parse('2026-06-02T10:05:00Z'));
      await Promise.all([consoleBackup, scheduled]);
      const by = (await s.vop.backups.service.list()).map((b) => b.by);
      expect(by).toEqual(['schedule', 'console', 'schedule']);
    } finally {
      await schedule.stop();
    }
  });
});

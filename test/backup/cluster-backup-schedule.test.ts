/**
 * The backup schedule in cluster mode (docs/backup.md, "Scheduled backups and the console"): two
 * nodes on one real PostgreSQL reach the same scheduled run, and the claim in the shared database
 * lets one of them make it. Which one made it shows in its last run; the other did nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startServer, type TestServer } from '../helpers/server.js';

let postgres: TestPostgres;
let a: TestServer;
let b: TestServer;
let w: TestServer;
beforeAll(async () => {
  postgres = await startPostgres();
  const databaseUrl = await postgres.createDatabase();
  const backups = { daily: { at: '02:00' } };
  a = await startServer({ databaseUrl, sharedMedia: true, timeZone: 'UTC', backups });
  b = await startServer({ databaseUrl, sharedMedia: true, timeZone: 'UTC', backups });
  w = await startServer({ databaseUrl, sharedMedia: true, timeZone: 'UTC', backups, role: 'worker' });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await w?.close();
  postgres?.stop();
});

describe('scheduled backups across nodes', () => {
  it('runs each scheduled run on one node only; a worker node does not take part', async () => {
    const due = a.vop.backups.schedule.view().daily.next!;
    expect(b.vop.backups.schedule.view().daily.next).toBe(due);
    expect(w.vop.backups.schedule.view().runsHere).toBe(false);
    // Both reach the run at once, as their timers would.
    await Promise.all([a, b].map((s) => s.vop.backups.schedule.runDue(Date.parse(due) + 1000)));
    const ran = [a, b].filter((s) => s.vop.backups.schedule.view().last.daily !== undefined);
    expect(ran).toHaveLength(1);
    // Each moved on to the next run, made or not.
    for (const s of [a, b]) expect(Date.parse(s.vop.backups.schedule.view().daily.next!) - Date.parse(due)).toBe(24 * 3600_000);
    // The next run is claimed afresh: one node again, whichever.
    const next = a.vop.backups.schedule.view().daily.next!;
    const before = [a, b].map((s) => s.vop.backups.schedule.view().last.daily?.at);
    await Promise.all([b, a].map((s) => s.vop.backups.schedule.runDue(Date.parse(next) + 1000)));
    const changed = [a, b].filter((s, i) => s.vop.backups.schedule.view().last.daily?.at !== before[i]);
    expect(changed).toHaveLength(1);
  });
});

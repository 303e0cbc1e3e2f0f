/**
 * `npm run bench -- cluster` (issue 11): the same node in cluster mode (metadata in PostgreSQL,
 * media in S3 on a Ceph RGW) against the embedded mode (sql.js, local disk), in the same run:
 * registrations per second, detail and list req/s, and the time from an upload to status 1. The
 * PostgreSQL and the Ceph RGW are the throwaway ones the tests start (test/helpers/), on loopback.
 * Then transcode throughput: one batch of uploads through an API node (`--role api`) with one and
 * with two workers (`--role worker`, real processes), against the embedded node with the same batch.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCeph } from '../test/helpers/ceph.js';
import { makeClip } from '../test/helpers/clips.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { ADMIN_TOKEN, benchApp, type BenchApp } from './uploadClients.js';
import {
  ServerFleet,
  assertHealthyRun,
  loadAverage,
  median,
  ms,
  progress,
  runLoad,
  whole,
  type BenchSection,
  type ChildServer,
  type LoadRequest,
  type LoadResult,
  type Target,
  VOP_SERVER,
} from './lib.js';


/** Settings of the run; the environment may shrink them for a quick look. */
interface ClusterBenchSettings {
  registrations: number;
  connections: number;
  durationS: number;
  warmupS: number;
  /** Uploads timed to status 1 per mode; the median is reported. */
  uploads: number;
  /** Clips of the transcode-throughput batch, uploaded at once. */
  batch: number;
}

const DEFAULT_SETTINGS: ClusterBenchSettings = { registrations: 3_000, connections: 50, durationS: 8, warmupS: 2, uploads: 5, batch: 6 };

export const clusterSection: BenchSection = {
  name: 'cluster',
  about: 'cluster mode (PostgreSQL + S3 on Ceph RGW) against the embedded mode: registrations, detail, list, upload to status 1 (VOP_BENCH_SECONDS)',
  run: () => clusterBench({ ...DEFAULT_SETTINGS, ...(process.env.VOP_BENCH_SECONDS ? { durationS: Number(process.env.VOP_BENCH_SECONDS) } : {}) }),
};

/** What one mode measured. */
interface ModeFigures {
  registrations: LoadResult;
  detail: LoadResult;
  list: LoadResult;
  uploadToPlayableMs: number[];
}

export async function clusterBench(s: ClusterBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-cluster-'));
  const fleet = new ServerFleet();
  progress('starting a throwaway PostgreSQL and a Ceph RGW on loopback');
  const pg = await startPostgres();
  const ceph = await startCeph();
  try {
    console.log(
      `cluster: ${whole(s.registrations)} registrations, ${s.connections} connections, ${s.durationS} s per read run, ${s.uploads} uploads per mode ` +
        `(${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}; PostgreSQL and Ceph run on this machine too)`,
    );
    const clip = fs.readFileSync(await makeClip({ seconds: 2, width: 320, height: 180, dir: work }));
    const database = `bench_${process.pid}`;
    await pg.createDatabase(database);
    const modes: Array<{ name: string; env: NodeJS.ProcessEnv }> = [
      { name: 'embedded', env: {} },
      {
        name: 'cluster',
        env: {
          VOP_DATABASE_URL: pg.url(database),
          VOP_S3_ENDPOINT: ceph.endpoint,
          VOP_S3_BUCKET: `vop-bench-${crypto.randomBytes(4).toString('hex')}`,
          VOP_S3_ACCESS_KEY_ID: ceph.accessKeyId,
          VOP_S3_SECRET_ACCESS_KEY: ceph.secretAccessKey,
          VOP_S3_FORCE_PATH_STYLE: '1',
        },
      },
    ];
    const figures = new Map<string, ModeFigures>();
    for (const mode of modes) {
      const dataDir = path.join(work, mode.name);
      fs.mkdirSync(dataDir, { mode: 0o700 });
      // The registration rate limit would turn most registrations into 308: the bench measures registering.
      fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ registrationsPerMinute: 0 }));
      const vop = await fleet.start({
        name: `vop (${mode.name})`,
        script: VOP_SERVER,
        args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir],
        env: { VOP_ADMIN_TOKEN: ADMIN_TOKEN, ...mode.env },
        listening: /vop listening on (http:\/\/\S+)/,
      });
      figures.set(mode.name, await measureMode(vop, s, clip));
      await fleet.stop(vop);
    }
    report(figures.get('embedded')!, figures.get('cluster')!);

    // Transcode throughput: a batch of 8 s 640×360 clips, each run on a fresh database and bucket.
    const batchClip = fs.readFileSync(await makeClip({ seconds: 8, width: 640, height: 360, dir: work, name: 'batch.mp4' }));
    const throughput: Array<{ label: string; videosPerMinute: number }> = [];
    let run = 0;
    for (const workers of [0, 1, 2]) {
      const label = workers === 0 ? 'embedded (one node)' : `cluster, ${workers} worker${workers > 1 ? 's' : ''}`;
      let env: NodeJS.ProcessEnv = {};
      if (workers > 0) {
        const db = `bench_${process.pid}_t${++run}`;
        await pg.createDatabase(db);
        env = { ...modes[1]!.env, VOP_DATABASE_URL: pg.url(db), VOP_S3_BUCKET: `vop-bench-${crypto.randomBytes(4).toString('hex')}` };
      }
      const start = (name: string, role: string) => {
        const dataDir = fs.mkdtempSync(path.join(work, `${name}-`));
        return fleet.start({
          name,
          script: VOP_SERVER,
          args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...(workers > 0 ? ['--role', role] : [])],
          env: { VOP_ADMIN_TOKEN: ADMIN_TOKEN, ...env },
          listening: /vop listening on (http:\/\/\S+)/,
        });
      };
      const api = await start(workers === 0 ? 'vop (embedded)' : 'vop (api)', 'api');
      const nodes = [api];
      for (let w = 0; w < workers; w++) nodes.push(await start(`vop (worker ${w + 1})`, 'worker'));
      progress(`${label}: ${s.batch} uploads, time until all are 1`);
      throughput.push({ label, videosPerMinute: await transcodeBatch(api, s.batch, batchClip) });
      for (const n of nodes.reverse()) await fleet.stop(n);
    }
    const base = throughput[0]!.videosPerMinute;
    console.log(`  transcode throughput (${s.batch} clips of 8 s, 640×360, uploaded at once; ${os.cpus().length} cores shared by every node, PostgreSQL and Ceph)`);
    for (const t of throughput) console.log(`  ${t.label.padEnd(26)} ${t.videosPerMinute.toFixed(1).padStart(10)} videos/min   /embedded ${(t.videosPerMinute / base).toFixed(2)}`);
    // Figures to watch, not targets: the issue sets none for this comparison.
    return [];
  } finally {
    await fleet.stopAll();
    await ceph.stop();
    await pg.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The spec's credential fields of a bench application, fresh for each call. */
function specFields(app: BenchApp): () => { AppId: string; Timestamp: string; Token: string } {
  return () => {
    const a = app.auth();
    return { AppId: a.appId, Timestamp: a.timestamp, Token: a.token };
  };
}

/** Uploads `clip` to the registered video `videoId` in one multipart form (spec 4.5). */
async function uploadClip(vop: ChildServer, auth: () => Record<string, string>, videoId: string, clip: Buffer): Promise<void> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(clip)], { type: 'video/mp4' }), 'clip.mp4');
  const up = await (await fetch(`${vop.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form })).json();
  if (up.AuthMsg?.ResultCode !== '1') throw new Error(`${vop.name}: upload refused: ${JSON.stringify(up)}`);
}

async function measureMode(vop: ChildServer, s: ClusterBenchSettings, clip: Buffer): Promise<ModeFigures> {
  const app = await benchApp(vop.baseUrl);
  const auth = specFields(app);
  const query = () => new URLSearchParams(auth()).toString();
  let n = 0;
  const registration = (): LoadRequest => ({
    method: 'POST',
    path: '/Api/Video/Post',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `${query()}&VideoTitle=Bench+${n++}&CreateUser=user-${n % 500}&SourceFileGetType=1`,
  });
  const load = (next: () => LoadRequest, run: { durationS: number } | { amount: number }) =>
    runLoad({ url: vop.baseUrl, connections: s.connections, next, serverPid: vop.pid, ...run });

  progress(`${vop.name}: ${whole(s.registrations)} registrations`);
  const registrations = await load(registration, { amount: s.registrations });
  assertHealthyRun(`${vop.name} registrations`, registrations, 60);
  const list = await (await fetch(`${vop.baseUrl}/Api/Video/GetList?${query()}&PageSize=50`)).json();
  const ids = (list.VideoList as Array<{ Id: string }>).map((v) => v.Id);
  const detail = (): LoadRequest => ({ path: `/Api/Video/Get?${query()}&Id=${ids[n++ % ids.length]}` });
  const listPage = (): LoadRequest => ({ path: `/Api/Video/GetList?${query()}&PageSize=50&PageIndex=${1 + (n++ % 20)}` });
  const measure = async (label: string, next: () => LoadRequest) => {
    progress(`${vop.name}: ${label}`);
    await load(next, { durationS: s.warmupS });
    const r = await load(next, { durationS: s.durationS });
    assertHealthyRun(`${vop.name} ${label}`, r, 200);
    return r;
  };
  const figures: ModeFigures = { registrations, detail: await measure('detail', detail), list: await measure('list', listPage), uploadToPlayableMs: [] };

  progress(`${vop.name}: ${s.uploads} uploads to status 1`);
  for (let i = 0; i < s.uploads; i++) {
    const videoId = await app.register();
    const started = performance.now();
    await uploadClip(vop, auth, videoId, clip);
    for (let polls = 0; ; polls++) {
      const status = await app.status(videoId);
      if (status === 1) break;
      if (status === 7 || polls > 6000) throw new Error(`${vop.name}: video ${videoId} ended in ${status}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    figures.uploadToPlayableMs.push(performance.now() - started);
  }
  return figures;
}

/** Uploads `count` copies of `clip` at once through `api`; resolves with videos per minute until the last is 1. */
async function transcodeBatch(api: ChildServer, count: number, clip: Buffer): Promise<number> {
  const app = await benchApp(api.baseUrl);
  const auth = specFields(app);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await app.register());
  const started = performance.now();
  await Promise.all(ids.map((videoId) => uploadClip(api, auth, videoId, clip)));
  const left = new Set(ids);
  for (let polls = 0; left.size > 0; polls++) {
    for (const videoId of [...left]) {
      const status = await app.status(videoId);
      if (status === 1) left.delete(videoId);
      else if (status === 7) throw new Error(`${api.name}: video ${videoId} ended in 7`);
    }
    if (polls > 6000) throw new Error(`${api.name}: ${left.size} videos not playable in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return (count * 60_000) / (performance.now() - started);
}

function report(embedded: ModeFigures, cluster: ModeFigures): void {
  const row = (what: string, e: number, c: number, unit: string, fmt: (n: number) => string) =>
    console.log(`  ${what.padEnd(26)} ${fmt(e).padStart(10)} ${fmt(c).padStart(10)} ${unit.padEnd(6)} cluster/embedded ${(c / e).toFixed(2)}`);
  console.log(`  ${''.padEnd(26)} ${'embedded'.padStart(10)} ${'cluster'.padStart(10)}`);
  row('registrations', embedded.registrations.reqPerSec, cluster.registrations.reqPerSec, 'req/s', (n) => whole(n));
  row('detail (4.1)', embedded.detail.reqPerSec, cluster.detail.reqPerSec, 'req/s', (n) => whole(n));
  row('detail p99', embedded.detail.p99Ms, cluster.detail.p99Ms, '', ms);
  row('list (4.4)', embedded.list.reqPerSec, cluster.list.reqPerSec, 'req/s', (n) => whole(n));
  row('list p99', embedded.list.p99Ms, cluster.list.p99Ms, '', ms);
  row('upload to status 1 (median)', median(embedded.uploadToPlayableMs), median(cluster.uploadToPlayableMs), '', ms);
}

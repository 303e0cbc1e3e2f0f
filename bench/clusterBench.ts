/**
 * `npm run bench -- cluster`: the same node in cluster mode against the embedded mode, in one run.
 *
 * Reads and registrations (bench/clusterReads.ts): for a library of one application with 20,000
 * and with 100,000 videos, one embedded node and one cluster node (`--database-url
 * --shared-media`, metadata in the throwaway PostgreSQL the tests start, test/helpers/postgres.ts),
 * detail, an early and a deep list page at 50 connections and registrations from 8 clients, runs
 * alternating between the nodes, medians printed with the ratio, the goals beside it and
 * PostgreSQL's own time per call (pg_stat_statements).
 *
 * Then uploads and transcode throughput, with media in S3 on a Ceph RGW (test/helpers/ceph.ts):
 * the time from an upload to status 1 on one node of each mode, and one batch of uploads through
 * an API node (`--role api`) with one and with two workers (`--role worker`, real processes),
 * against the embedded node with the same batch.
 *
 * For a quicker look: VOP_BENCH_SECONDS (seconds per measured run, default 8),
 * VOP_BENCH_CLUSTER_ROUNDS (measured runs per call and mode, default 3),
 * VOP_BENCH_CLUSTER_SIZES=20000 (library sizes, comma-separated; default 20000,100000; this one
 * skips the 100,000-video library), VOP_BENCH_CLUSTER_TRANSCODE=0 (skips the uploads and the
 * transcode throughput, and Ceph with them).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCeph } from '../test/helpers/ceph.js';
import { makeClip } from '../test/helpers/clips.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { clusterReads, type ClusterReadSettings } from './clusterReads.js';
import { ADMIN_TOKEN, benchApp, type BenchApp } from './uploadClients.js';
import { ServerFleet, loadAverage, median, ms, progress, whole, type BenchSection, type ChildServer, type Target, VOP_SERVER } from './lib.js';

/** Settings of the run; the environment may shrink them for a quick look (see above). */
interface ClusterBenchSettings extends ClusterReadSettings {
  /** Whether to measure uploads and transcode throughput. */
  transcode: boolean;
  /** Uploads timed to status 1 per mode; the median is reported. */
  uploads: number;
  /** Clips of the transcode-throughput batch, uploaded at once. */
  batch: number;
}

const DEFAULT_SETTINGS: ClusterBenchSettings = {
  sizes: [20_000, 100_000],
  connections: 50,
  registrationClients: 8,
  durationS: 8,
  warmupS: 2,
  rounds: 3,
  transcode: true,
  uploads: 5,
  batch: 6,
};

export const clusterSection: BenchSection = {
  name: 'cluster',
  about:
    'cluster mode (PostgreSQL; S3 on Ceph RGW for uploads) against the embedded mode: detail, list pages, registrations at 20,000 and 100,000 videos, ' +
    'upload to status 1, transcode throughput (VOP_BENCH_SECONDS, VOP_BENCH_CLUSTER_ROUNDS, VOP_BENCH_CLUSTER_SIZES, VOP_BENCH_CLUSTER_TRANSCODE=0)',
  run: () => clusterBench(settingsFromEnv(process.env)),
};

function settingsFromEnv(env: NodeJS.ProcessEnv): ClusterBenchSettings {
  const s = { ...DEFAULT_SETTINGS };
  if (env.VOP_BENCH_SECONDS) s.durationS = Number(env.VOP_BENCH_SECONDS);
  if (env.VOP_BENCH_CLUSTER_ROUNDS) s.rounds = Number(env.VOP_BENCH_CLUSTER_ROUNDS);
  if (env.VOP_BENCH_CLUSTER_SIZES !== undefined) s.sizes = env.VOP_BENCH_CLUSTER_SIZES.split(',').filter(Boolean).map(Number);
  if (env.VOP_BENCH_CLUSTER_TRANSCODE === '0') s.transcode = false;
  if (!(s.durationS >= 1) || !(s.rounds >= 1) || s.sizes.some((n) => !Number.isInteger(n) || n < DEEP_LIBRARY)) {
    throw new Error(`cluster bench: VOP_BENCH_SECONDS and VOP_BENCH_CLUSTER_ROUNDS must be 1 or more, each size a whole number of at least ${DEEP_LIBRARY}`);
  }
  return s;
}

/** The deep list page (PageIndex 200 of 50) must exist. */
const DEEP_LIBRARY = 10_100;

export async function clusterBench(s: ClusterBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-cluster-'));
  const fleet = new ServerFleet();
  try {
    console.log(
      `cluster: ${s.sizes.map(whole).join(' and ')} videos; reads at ${s.connections} connections, registrations from ${s.registrationClients} clients; ` +
        `${s.rounds} runs of ${s.durationS} s per call and mode after ${s.warmupS} s warm-up each, alternating; medians ` +
        `(${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}; PostgreSQL${s.transcode ? ' and Ceph run' : ' runs'} on this machine too)`,
    );
    const targets = await clusterReads(s, work, fleet);
    if (s.transcode) await uploadsAndTranscodes(s, work, fleet);
    return targets;
  } finally {
    await fleet.stopAll();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Upload to status 1 in each mode, then transcode throughput: media in S3 on a Ceph RGW. */
async function uploadsAndTranscodes(s: ClusterBenchSettings, work: string, fleet: ServerFleet): Promise<void> {
  progress('starting a throwaway PostgreSQL and a Ceph RGW on loopback');
  const pg = await startPostgres();
  const ceph = await startCeph();
  try {
    const clusterEnv = async (name: string): Promise<NodeJS.ProcessEnv> => {
      const db = `bench_${process.pid}_${name}`;
      await pg.createDatabase(db);
      return {
        VOP_DATABASE_URL: pg.url(db),
        VOP_S3_ENDPOINT: ceph.endpoint,
        VOP_S3_BUCKET: `vop-bench-${crypto.randomBytes(4).toString('hex')}`,
        VOP_S3_ACCESS_KEY_ID: ceph.accessKeyId,
        VOP_S3_SECRET_ACCESS_KEY: ceph.secretAccessKey,
        VOP_S3_FORCE_PATH_STYLE: '1',
      };
    };
    const start = (name: string, env: NodeJS.ProcessEnv, role?: string) => {
      const dataDir = fs.mkdtempSync(path.join(work, 'node-'));
      return fleet.start({
        name,
        script: VOP_SERVER,
        args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...(role ? ['--role', role] : [])],
        env: { VOP_ADMIN_TOKEN: ADMIN_TOKEN, ...env },
        listening: /vop listening on (http:\/\/\S+)/,
      });
    };

    // Upload to status 1: one node of each mode, a 2 s clip at a time.
    const clip = fs.readFileSync(await makeClip({ seconds: 2, width: 320, height: 180, dir: work }));
    const toPlayable: Record<string, number[]> = {};
    for (const mode of ['embedded', 'cluster']) {
      const vop = await start(`vop (${mode})`, mode === 'cluster' ? await clusterEnv('uploads') : {});
      progress(`${vop.name}: ${s.uploads} uploads to status 1`);
      toPlayable[mode] = await uploadsToPlayable(vop, s.uploads, clip);
      await fleet.stop(vop);
    }
    const e = median(toPlayable.embedded!);
    const c = median(toPlayable.cluster!);
    console.log(`  upload to status 1 (median of ${s.uploads}, 2 s 320×180 clip): embedded ${ms(e)}, cluster ${ms(c)}, cluster/embedded ${(c / e).toFixed(2)}`);

    // Transcode throughput: a batch of 8 s 640×360 clips, each run on a fresh database and bucket.
    const batchClip = fs.readFileSync(await makeClip({ seconds: 8, width: 640, height: 360, dir: work, name: 'batch.mp4' }));
    const throughput: Array<{ label: string; videosPerMinute: number }> = [];
    for (const workers of [0, 1, 2]) {
      const label = workers === 0 ? 'embedded (one node)' : `cluster, ${workers} worker${workers > 1 ? 's' : ''}`;
      const env = workers > 0 ? await clusterEnv(`t${workers}`) : {};
      const api = await start(workers === 0 ? 'vop (embedded)' : 'vop (api)', env, workers > 0 ? 'api' : undefined);
      const nodes = [api];
      for (let w = 0; w < workers; w++) nodes.push(await start(`vop (worker ${w + 1})`, env, 'worker'));
      progress(`${label}: ${s.batch} uploads, time until all are 1`);
      throughput.push({ label, videosPerMinute: await transcodeBatch(api, s.batch, batchClip) });
      for (const n of nodes.reverse()) await fleet.stop(n);
    }
    const base = throughput[0]!.videosPerMinute;
    console.log(`  transcode throughput (${s.batch} clips of 8 s, 640×360, uploaded at once; ${os.cpus().length} cores shared by every node, PostgreSQL and Ceph)`);
    for (const t of throughput) console.log(`  ${t.label.padEnd(26)} ${t.videosPerMinute.toFixed(1).padStart(10)} videos/min   /embedded ${(t.videosPerMinute / base).toFixed(2)}`);
    // Figures to watch, not targets: the issue sets none for these.
  } finally {
    await fleet.stopAll();
    await ceph.stop();
    await pg.stop();
  }
}

/** Uploads `count` clips one after another; resolves with the milliseconds each took to status 1. */
async function uploadsToPlayable(vop: ChildServer, count: number, clip: Buffer): Promise<number[]> {
  const app = await benchApp(vop.baseUrl);
  const auth = specFields(app);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const videoId = await app.register();
    const started = performance.now();
    await uploadClip(vop, auth, videoId, clip);
    for (let polls = 0; ; polls++) {
      const status = await app.status(videoId);
      if (status === 1) break;
      if (status === 7 || polls > 6000) throw new Error(`${vop.name}: video ${videoId} ended in ${status}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    times.push(performance.now() - started);
  }
  return times;
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

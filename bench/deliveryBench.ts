/**
 * `npm run bench -- delivery`, in two parts, through vop and through nginx in the same run:
 *
 * 1. Throughput: a large rendition (1 GiB by default) downloaded in full by a few clients at once
 *    (`/media/play/...`); the figure is MB/s and vop's share of nginx's, with CPU per GB. The
 *    clients are curl processes writing to /dev/null, so that the load generator is not what
 *    limits either server.
 * 2. Requests (issue 14): what a player asks for, one request at a time — 1 and 64 KiB Ranges,
 *    HEAD, a cover at `?t=3`, an HLS playlist and a segment, and 200 viewers each walking an HLS
 *    rendition — through vop (at plain addresses, and at signed ones: `signed`, a video of an
 *    application with `mediaAccess: "signed"`), nginx and a bare Node server answering the same bytes
 *    (bench/deliveryRequests.ts), and through an API node of a cluster (issue 14, item 4: metadata
 *    in PostgreSQL, media in S3 on a Ceph RGW, bench/deliveryCluster.ts) serving them too, when
 *    PostgreSQL's and Ceph's binaries are installed.
 *
 * All servers are single processes on loopback (nginx with `master_process off`: one process
 * serving, like vop). Each server's CPU time is printed too: on a machine shared with other work,
 * wall-clock rates move with the neighbours, CPU per byte or per request much less. nginx comes
 * from the distribution: if it is missing, the bench installs it when it runs as root on Debian
 * (`apt-get install -y nginx`, with the service kept from starting) or says what to run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findExecutable } from '../server/media/findExecutable.js';
import { clusterUnavailable, startDeliveryCluster, type DeliveryCluster } from './deliveryCluster.js';
import { assertSameBytes, mirrorFromVop, runRequestCases, type LaterServer, type Served } from './deliveryRequests.js';
import { makeVideoContent, requestCases, seedVideo, type VideoContent } from './deliveryVideo.js';
import { VOP_SERVER, cpuTimeMs, loadAverage, progress, ServerFleet, verdict, type BenchSection, type Target } from './lib.js';
import { describeTuning, findOrInstallNginx, NGINX_TUNINGS, nginxVersion, SBIN, startNginx, type RunningNginx } from './nginx.js';

/** Settings of the delivery benchmark; the environment may change them. */
export interface DeliveryBenchSettings {
  /** Size of the served file, MiB. */
  fileMb: number;
  /** Downloads running at once. */
  clients: number;
  /** Full downloads per client, per server. */
  rounds: number;
  /** Seconds of load per run of a request case on a server. */
  requestSeconds: number;
  /** Runs of each request case on each server, interleaved; the medians are printed. */
  requestRounds: number;
}

const DEFAULT_SETTINGS: DeliveryBenchSettings = { fileMb: 1024, clients: 4, rounds: 2, requestSeconds: 3, requestRounds: 3 };

/** Issue 4's target: vop serves at least 70% of nginx's throughput. */
const MIN_RATIO = 0.7;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export const deliverySection: BenchSection = {
  name: 'delivery',
  about:
    'a 1 GiB rendition downloaded by parallel clients (MB/s), then Ranges, HEAD, covers, HLS and 200 viewers (req/s, p99, CPU per request), vop vs nginx vs bare Node, ' +
    'and through a cluster API node (PostgreSQL + Ceph RGW) when they are installed ' +
    '(VOP_BENCH_DELIVERY_MB, VOP_BENCH_DELIVERY_CLIENTS, VOP_BENCH_DELIVERY_SECONDS or VOP_BENCH_SECONDS, VOP_BENCH_DELIVERY_ROUNDS)',
  run: () =>
    deliveryBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_DELIVERY_MB ? { fileMb: Number(process.env.VOP_BENCH_DELIVERY_MB) } : {}),
      ...(process.env.VOP_BENCH_DELIVERY_CLIENTS ? { clients: Number(process.env.VOP_BENCH_DELIVERY_CLIENTS) } : {}),
      ...(process.env.VOP_BENCH_DELIVERY_ROUNDS ? { requestRounds: Number(process.env.VOP_BENCH_DELIVERY_ROUNDS) } : {}),
      // VOP_BENCH_SECONDS, every section's quick setting, unless this section's own is given.
      ...(process.env.VOP_BENCH_DELIVERY_SECONDS || process.env.VOP_BENCH_SECONDS
        ? { requestSeconds: Number(process.env.VOP_BENCH_DELIVERY_SECONDS || process.env.VOP_BENCH_SECONDS) }
        : {}),
    }),
};

export async function deliveryBench(s: DeliveryBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-delivery-'));
  const dataDir = path.join(work, 'data');
  const fleet = new ServerFleet();
  /** nginx in each of its tunings (bench/nginx.ts), named `nginx:<tuning>`. */
  const nginxes: Array<RunningNginx & { name: string; tuning: string }> = [];
  let cluster: DeliveryCluster | undefined;
  try {
    const curl = findExecutable('curl', undefined, SBIN);
    if (!curl) throw new Error('the delivery bench downloads with curl: install it (apt-get install -y curl) and run again');
    console.log(
      `delivery: a ${s.fileMb} MiB file, ${s.clients} clients × ${s.rounds} full downloads per server, then request cases, ${s.requestRounds} runs of ${s.requestSeconds} s each; ` +
        `${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}`,
    );

    progress(`seeding a playable video: a ${s.fileMb} MiB rendition, a small one, a cover and an HLS rendition`);
    const content = await makeVideoContent(work);
    const seeded = await seedVideo({ dataDir, adminToken: ADMIN_TOKEN }, content, s.fileMb);
    // A second video, of an application that serves signed addresses: the same bytes at
    // `/media/s/<token>/...`, through the same vop (\`signed\` in the rows).
    const signed = await seedVideo({ dataDir, adminToken: ADMIN_TOKEN }, content, 0, { signed: true });
    const big = seeded.big!;
    const bytes = fs.statSync(big.file).size;

    const vop = await fleet.start({
      name: 'vop',
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN],
      listening: /vop listening on (http:\/\/\S+)/,
    });
    const vopRun = await measure('vop', curl, `${vop.baseUrl}/media/play/${big.url}`, bytes, s, vop.pid);

    const targets: Target[] = [];
    const mbps = (bps: number) => `${(bps / 1e6).toFixed(0)} MB/s`;
    const cpu = (r: Measured) => `${r.cpuMsPerGb.toFixed(0)} ms CPU per GB`;
    const nginxPath = findOrInstallNginx();
    // What nginx and bare Node serve for the request cases: vop's own answers, byte for byte.
    const docroot = path.join(work, 'docroot');
    await mirrorFromVop(vop.baseUrl, docroot, seeded.mirrored);
    if (nginxPath) {
      const runs: Array<{ name: string; tuning: string; run: Measured }> = [];
      for (const tuning of NGINX_TUNINGS) {
        const started = await startNginx(nginxPath, work, { '/media/play/': path.join(dataDir, 'media', 'play'), '/same/': docroot }, tuning);
        const name = `nginx:${tuning.name}`;
        nginxes.push({ ...started, name, tuning: describeTuning(tuning) });
        runs.push({ name, tuning: describeTuning(tuning), run: await measure(name, curl, `${started.baseUrl}/media/play/${big.url}`, bytes, s, started.pid) });
      }
      // The baseline is nginx at its best for this work: the faster of its tunings.
      const best = runs.reduce((a, b) => (b.run.bytesPerSecond > a.run.bytesPerSecond ? b : a));
      const ratio = vopRun.bytesPerSecond / best.run.bytesPerSecond;
      const met = ratio >= MIN_RATIO;
      console.log(`  whole ${s.fileMb} MiB downloads:`);
      console.log(`    vop:   ${mbps(vopRun.bytesPerSecond)}, ${cpu(vopRun)}`);
      for (const r of runs) console.log(`    ${r.name}: ${mbps(r.run.bytesPerSecond)}, ${cpu(r.run)}  (${r.tuning}, one process; ${nginxVersion(nginxPath)})`);
      console.log(`    vop / nginx (${best.name}, the faster): ${ratio.toFixed(3)}  (target ≥ ${MIN_RATIO.toFixed(2)})  ${verdict(met)}; CPU per byte, nginx / vop: ${(best.run.cpuMsPerGb / vopRun.cpuMsPerGb).toFixed(3)}`);
      targets.push({ what: 'vop/nginx throughput', text: `${ratio.toFixed(3)} (≥ ${MIN_RATIO.toFixed(2)}; nginx ${best.name})`, met });
    } else {
      console.log(`  whole downloads: vop ${mbps(vopRun.bytesPerSecond)}, ${cpu(vopRun)}; nginx: not measured (see above)`);
      targets.push({ what: 'vop/nginx throughput', text: 'not measured: nginx is not installed', met: false });
    }

    const bare = await fleet.start({ name: 'bare', script: 'bench/bareMediaServer.ts', args: [docroot, '/same'], listening: /bare listening on (http:\/\/\S+)/ });
    const servers: Served[] = [
      { name: 'vop', baseUrl: vop.baseUrl, pid: vop.pid },
      { name: 'signed', baseUrl: vop.baseUrl, pid: vop.pid },
      ...nginxes.map((n) => ({ name: n.name, baseUrl: n.baseUrl, pid: n.pid })),
      { name: 'bare', baseUrl: bare.baseUrl, pid: bare.pid },
    ];
    const cases = requestCases([
      { name: 'vop', vop: seeded },
      { name: 'signed', vop: signed },
      ...nginxes.map((n) => ({ name: n.name, mirrorOf: seeded })),
      { name: 'bare', mirrorOf: seeded },
    ]);
    // The cluster is started once the others have been measured (see runRequestCases).
    const later = async (): Promise<LaterServer | undefined> => {
      cluster = await startClusterIfPossible(work, content, fleet);
      if (!cluster) return undefined;
      // The cluster's own paths (its video id), each checked to give the very bytes the others serve.
      await assertSameBytes(cluster.served.baseUrl, docroot, cluster.video.mirrored.map((f, i) => ({ from: f.from, to: seeded.mirrored[i]!.to })));
      const asks = Object.fromEntries(requestCases([{ name: 'cluster', vop: cluster.video }]).map((c) => [c.name, c.asks.cluster!]));
      return { served: cluster.served, asks };
    };
    const ratios: Array<[string, string]> = [['vop', 'nginx'], ['vop', 'bare'], ['signed', 'vop'], ['cluster', 'nginx'], ['cluster', 'bare'], ['cluster', 'vop']];
    // Signed addresses cost within 3% of plain ones.
    const parity = { server: 'signed', reference: 'vop', within: 0.03 };
    const bestOf = nginxes.length ? { nginx: nginxes.map((n) => n.name) } : undefined;
    targets.push(...(await runRequestCases(cases, servers, { seconds: s.requestSeconds, rounds: s.requestRounds, targeted: 'vop', ratios, parity, bestOf }, later)));
    return targets;
  } finally {
    await cluster?.stop();
    await fleet.stopAll();
    for (const n of nginxes) await n.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The cluster part's API node (`cluster` in the printed rows), or undefined after a line saying
 * why not: PostgreSQL's or Ceph's binaries missing, or their start failing (the rest of the bench
 * still runs).
 */
async function startClusterIfPossible(work: string, content: VideoContent, fleet: ServerFleet): Promise<DeliveryCluster | undefined> {
  // VOP_BENCH_DELIVERY_CLUSTER=0: the embedded rows only, without the minute the services take.
  const unavailable = process.env.VOP_BENCH_DELIVERY_CLUSTER === '0' ? 'VOP_BENCH_DELIVERY_CLUSTER=0' : clusterUnavailable();
  if (unavailable) {
    console.log(`  through an API node of a cluster: skipped, ${unavailable}`);
    return undefined;
  }
  try {
    const cluster = await startDeliveryCluster(work, content, fleet, ADMIN_TOKEN);
    console.log('  cluster: a --role api node, metadata in PostgreSQL, media in S3 on a Ceph RGW (memstore), both on this machine over loopback; the same bytes');
    return cluster;
  } catch (err) {
    console.log(`  through an API node of a cluster: not measured, it did not start: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
}

interface Measured {
  bytesPerSecond: number;
  /** The server process's CPU time (user and system) per 10^9 bytes served. */
  cpuMsPerGb: number;
}

/** One warm-up download, then `clients` × `rounds` full downloads from the server process `pid`. */
async function measure(name: string, curl: string, url: string, bytes: number, s: DeliveryBenchSettings, pid: number): Promise<Measured> {
  progress(`${name}: warm-up download`);
  await download(curl, url, bytes);
  progress(`${name}: ${s.clients} clients × ${s.rounds} downloads`);
  const cpuBefore = cpuTimeMs(pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: s.clients }, async () => {
      for (let i = 0; i < s.rounds; i++) await download(curl, url, bytes);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const total = s.clients * s.rounds * bytes;
  return { bytesPerSecond: total / seconds, cpuMsPerGb: ((cpuTimeMs(pid) - cpuBefore) * 1e9) / total };
}

/** One full GET with curl to /dev/null; rejects unless exactly `bytes` came with a 200. */
function download(curl: string, url: string, bytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(curl, ['-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0 && out.trim() === `200 ${bytes}`) resolve();
      else reject(new Error(`download of ${url} failed: curl exit ${code}, "${out.trim()}"`));
    });
  });
}

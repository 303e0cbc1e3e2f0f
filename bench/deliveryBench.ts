/**
 * `npm run bench -- delivery`: a large rendition (1 GiB by default) downloaded in full by a few
 * clients at once, through vop (`/media/play/...`) and through nginx with sendfile serving the
 * same file, in the same run; the figure is MB/s and vop's share of nginx's.
 *
 * Both servers are single processes on loopback (nginx with `master_process off`: one process
 * serving, like vop); the clients are curl processes writing to /dev/null, so that the load
 * generator is not what limits either. Each server's CPU time per GB is printed too: on a machine
 * shared with other work, wall-clock rates move with the neighbours, CPU per byte much less. nginx
 * comes from the distribution: if it is missing, the bench installs it when it runs as root on
 * Debian (`apt-get install -y nginx`, with the service kept from starting) or says what to run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../server/app.js';
import { makeDateFolder, playFileName } from '../server/processing/mediaNames.js';
import { findExecutable } from '../server/media/findExecutable.js';
import { VOP_SERVER, cpuTimeMs, loadAverage, progress, spawnServer, verdict, type BenchSection, type ChildServer, type Target } from './lib.js';

/** nginx lives in sbin, which a user's PATH may leave out. */
const SBIN = ['/usr/sbin', '/sbin'];

/** Settings of the delivery benchmark; the environment may change them. */
export interface DeliveryBenchSettings {
  /** Size of the served file, MiB. */
  fileMb: number;
  /** Downloads running at once. */
  clients: number;
  /** Full downloads per client, per server. */
  rounds: number;
}

const DEFAULT_SETTINGS: DeliveryBenchSettings = { fileMb: 1024, clients: 4, rounds: 2 };

/** Issue 4's target: vop serves at least 70% of nginx's throughput. */
const MIN_RATIO = 0.7;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export const deliverySection: BenchSection = {
  name: 'delivery',
  about: 'a 1 GiB rendition downloaded by parallel clients, MB/s through vop vs nginx with sendfile (VOP_BENCH_DELIVERY_MB, VOP_BENCH_DELIVERY_CLIENTS)',
  run: () =>
    deliveryBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_DELIVERY_MB ? { fileMb: Number(process.env.VOP_BENCH_DELIVERY_MB) } : {}),
      ...(process.env.VOP_BENCH_DELIVERY_CLIENTS ? { clients: Number(process.env.VOP_BENCH_DELIVERY_CLIENTS) } : {}),
    }),
};

export async function deliveryBench(s: DeliveryBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-delivery-'));
  const dataDir = path.join(work, 'data');
  let vop: ChildServer | undefined;
  let nginx: ChildProcess | undefined;
  try {
    const curl = findExecutable('curl', undefined, SBIN);
    if (!curl) throw new Error('the delivery bench downloads with curl: install it (apt-get install -y curl) and run again');
    console.log(
      `delivery: a ${s.fileMb} MiB file, ${s.clients} clients × ${s.rounds} full downloads per server; ` +
        `${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}`,
    );

    progress(`seeding a playable video with a ${s.fileMb} MiB rendition`);
    const { videoUrl, file } = await seedLargeRendition(dataDir, s.fileMb);
    const bytes = fs.statSync(file).size;

    vop = await spawnServer({
      name: 'vop',
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN],
      listening: /vop listening on (http:\/\/\S+)/,
    });
    const vopUrl = `${vop.baseUrl}/media/play/${videoUrl}`;
    const vopRun = await measure('vop', curl, vopUrl, bytes, s, vop.pid);

    const targets: Target[] = [];
    const mbps = (bps: number) => `${(bps / 1e6).toFixed(0)} MB/s`;
    const cpu = (r: Measured) => `${r.cpuMsPerGb.toFixed(0)} ms CPU per GB`;
    const nginxPath = findOrInstallNginx();
    if (!nginxPath) {
      console.log(`  vop: ${mbps(vopRun.bytesPerSecond)}, ${cpu(vopRun)}; nginx: not measured (see above)`);
      targets.push({ what: 'vop/nginx throughput', text: 'not measured: nginx is not installed', met: false });
      return targets;
    }
    const started = await startNginx(nginxPath, work, path.join(dataDir, 'media', 'play'));
    nginx = started.child;
    const nginxRun = await measure('nginx', curl, `${started.baseUrl}/media/play/${videoUrl}`, bytes, s, nginx.pid!);

    const ratio = vopRun.bytesPerSecond / nginxRun.bytesPerSecond;
    const met = ratio >= MIN_RATIO;
    console.log(`  vop:   ${mbps(vopRun.bytesPerSecond)}, ${cpu(vopRun)}`);
    console.log(`  nginx: ${mbps(nginxRun.bytesPerSecond)}, ${cpu(nginxRun)}  (sendfile on, one process; ${spawnSync(nginxPath, ['-v'], { encoding: 'utf8' }).stderr.trim()})`);
    console.log(`  vop / nginx: ${ratio.toFixed(3)}  (target ≥ ${MIN_RATIO.toFixed(2)})  ${verdict(met)}; CPU per byte, nginx / vop: ${(nginxRun.cpuMsPerGb / vopRun.cpuMsPerGb).toFixed(3)}`);
    targets.push({ what: 'vop/nginx throughput', text: `${ratio.toFixed(3)} (≥ ${MIN_RATIO.toFixed(2)})`, met });
    return targets;
  } finally {
    await vop?.stop();
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((r) => nginx!.once('exit', r));
      nginx.kill('SIGTERM'); // nginx: fast shutdown
      await exited;
    }
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * A video in status 1 whose one rendition is a file of `mb` MiB (random bytes: the content does
 * not matter to delivery), written through the server's own stores while no server runs.
 */
async function seedLargeRendition(dataDir: string, mb: number): Promise<{ videoUrl: string; file: string }> {
  const vop = await createServer({ dataDir, adminToken: ADMIN_TOKEN, log: () => undefined });
  try {
    const app = await vop.services.apps.create({ name: 'bench delivery' });
    const appRecord = (await vop.stores.apps.get(app.appId))!;
    const video = await vop.services.videos.register(appRecord, { VideoTitle: 'large', SourceFileGetType: '1' });
    const date = makeDateFolder()(Date.now());
    const name = playFileName(video.id, '720p', 'mp4');
    const file = vop.media.path('play', date, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const chunk = crypto.randomBytes(1024 * 1024);
    const fd = fs.openSync(file, 'w');
    try {
      for (let i = 0; i < mb; i++) fs.writeSync(fd, chunk);
    } finally {
      fs.closeSync(fd);
    }
    await vop.stores.videos.setRenditions(video.id, [
      { videoId: video.id, label: '720p', width: 1280, height: 720, bitrateKbps: 2928, file: `${date}/${name}`, bytes: mb * 1024 * 1024 },
    ]);
    await vop.services.lifecycle.move(video.id, 1);
    return { videoUrl: `${date}/${name}`, file };
  } finally {
    await vop.close();
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

/** nginx on PATH (or /usr/sbin); else installed when root on Debian; else undefined after saying what to run. */
function findOrInstallNginx(): string | undefined {
  const found = findExecutable('nginx', undefined, SBIN);
  if (found) return found;
  const isRoot = process.getuid?.() === 0;
  if (!isRoot || !fs.existsSync('/etc/debian_version')) {
    console.log('  nginx is not installed. To compare with it, run:  sudo apt-get install -y nginx   then run the bench again.');
    return undefined;
  }
  progress('nginx is not installed: apt-get install -y nginx (the service is kept from starting: RUNLEVEL=1)');
  // RUNLEVEL=1 makes invoke-rc.d skip starting the packaged service: the bench runs its own nginx.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', RUNLEVEL: '1' };
  let r = spawnSync('apt-get', ['install', '-y', 'nginx'], { stdio: 'inherit', env });
  if (r.status !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
    r = spawnSync('apt-get', ['install', '-y', 'nginx'], { stdio: 'inherit', env });
  }
  const installed = findExecutable('nginx', undefined, SBIN);
  if (!installed) console.log('  Installing nginx failed. Run:  apt-get install -y nginx   then run the bench again.');
  return installed;
}

/**
 * nginx with a config of its own in `work`: one process (no master, so no switch to another user:
 * it runs as the current user), sendfile on, no daemon, logs and temp files under `work`, serving
 * `playDir` at /media/play/ on a free loopback port.
 */
async function startNginx(nginx: string, work: string, playDir: string): Promise<{ child: ChildProcess; baseUrl: string }> {
  const prefix = path.join(work, 'nginx');
  fs.mkdirSync(path.join(prefix, 'logs'), { recursive: true });
  const port = await freePort();
  const conf = `
daemon off;
master_process off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  types { video/mp4 mp4; }
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    location /media/play/ { alias ${playDir}/; }
  }
}
`;
  const confFile = path.join(prefix, 'nginx.conf');
  fs.writeFileSync(confFile, conf);
  const child = spawn(nginx, ['-p', prefix, '-c', confFile, '-e', path.join(prefix, 'logs', 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${err}${fs.readFileSync(path.join(prefix, 'logs', 'error.log'), 'utf8')}`);
    if (await canConnect(port)) break;
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${port}: ${err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { child, baseUrl: `http://127.0.0.1:${port}` };
}


function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

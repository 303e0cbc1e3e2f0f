/**
 * nginx for the delivery bench (bench/deliveryBench.ts): found or installed, then run with a
 * config of its own as the reference vop is compared with.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { findExecutable } from '../server/media/findExecutable.js';
import { progress } from './lib.js';

/** nginx lives in sbin, which a user's PATH may leave out. */
export const SBIN = ['/usr/sbin', '/sbin'];

/** nginx on PATH (or /usr/sbin); else installed when root on Debian; else undefined after saying what to run. */
export function findOrInstallNginx(): string | undefined {
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

/** `nginx version: nginx/1.22.1`, as nginx -v prints it. */
export function nginxVersion(nginx: string): string {
  return spawnSync(nginx, ['-v'], { encoding: 'utf8' }).stderr.trim();
}

/**
 * How nginx is set up for a run. The bench runs each tuning and takes the faster per case: the
 * baseline is nginx as its users would tune it for that work, never one setting's handicap.
 * tcp_nopush (TCP_CORK with sendfile) is the one that matters here: on loopback it corks a 64 KiB
 * answer into the 40 ms delayed-ACK wait (1,184 req/s at p99 44 ms with it, 88,599 at 0.9 ms
 * without, in one run), while whole downloads are where it is meant to help.
 */
export interface NginxTuning {
  /** As printed: `nopush-on`. */
  name: string;
  tcpNopush: boolean;
}

export const NGINX_TUNINGS: readonly NginxTuning[] = [
  { name: 'nopush-on', tcpNopush: true },
  { name: 'nopush-off', tcpNopush: false },
];

/** How a tuning reads in a line of the bench: `tcp_nopush on, sendfile on, open_file_cache`. */
export function describeTuning(t: NginxTuning): string {
  return `tcp_nopush ${t.tcpNopush ? 'on' : 'off'}, sendfile on, open_file_cache`;
}

/** A running nginx of the bench's. */
export interface RunningNginx {
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  /** The config it runs with, as written (for the README). */
  config: string;
  stop(): Promise<void>;
}

/**
 * nginx with a config of its own in `work`: one process (no master, so no switch to another user:
 * it runs as the current user), sendfile on, `tuning`'s tcp_nopush, an open-file cache (vop keeps
 * open descriptors too), no daemon, no access log, logs and temp files under `work`, serving each
 * `locations` folder at its URL prefix on a free loopback port. Otherwise nginx's defaults.
 */
export async function startNginx(nginx: string, work: string, locations: Record<string, string>, tuning: NginxTuning = NGINX_TUNINGS[0]!): Promise<RunningNginx> {
  const prefix = path.join(work, `nginx-${tuning.name}`);
  fs.mkdirSync(path.join(prefix, 'logs'), { recursive: true });
  const port = await freePort();
  const aliases = Object.entries(locations)
    .map(([url, dir]) => `    location ${url} { alias ${dir}/; }`)
    .join('\n');
  const config = `
daemon off;
master_process off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush ${tuning.tcpNopush ? 'on' : 'off'};
  # Every request of a case asks for the same few files, as viewers of one video do.
  open_file_cache max=1000 inactive=60s;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  types { video/mp4 mp4; video/mp2t ts; image/jpeg jpg; application/vnd.apple.mpegurl m3u8; }
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
${aliases}
  }
}
`;
  const confFile = path.join(prefix, 'nginx.conf');
  fs.writeFileSync(confFile, config);
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
  return {
    child,
    pid: child.pid!,
    baseUrl: `http://127.0.0.1:${port}`,
    config,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM'); // nginx: fast shutdown
      await exited;
    },
  };
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

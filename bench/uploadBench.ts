/**
 * `npm run bench -- upload`: a 1 GiB file uploaded over loopback through tus (tus-js-client, the
 * reference client) and through `POST /Api/Video/Upload` (multipart, streamed), each as a ratio
 * of writing the same bytes to the same disk with a plain Node stream in the same run (issue 3),
 * with vop's peak resident memory during each upload.
 *
 * What is timed. Both sides are timed twice over: until the bytes are in the file (in the page
 * cache), and until they are on the disk (the same plus an fsync of that file). The issue's
 * figure is the second: the plain stream is fsynced, and so is an upload, by vop itself before it
 * acknowledges it (ingest/sourceIntake.ts); the benchmark fsyncs the stored source once more when
 * the upload is over and adds that time (next to nothing for vop, the whole fsync for the bare
 * server), which puts every side on the same footing. For vop the two figures are therefore
 * nearly the same; for the others the first, page cache only, leaves the disk out, which on a
 * slow disk dominates the second and hides what the code costs, so it is printed too. So is the
 * CPU time per GiB of each side, far less disturbed by other work on the machine than wall time.
 *
 * An upload is "in the file" when vop links it into `sources/<videoId>/source`, which it does once
 * the last byte is written and fsynced and before it probes the file: the benchmark watches for
 * that link.
 * The probe (ffprobe, then the status change) comes after, and the last response waits for it; it
 * is excluded from the transfer and printed on its own. The file is random bytes, so it ends in
 * status 7 (not a video), which leaves the transcoder idle during the run.
 *
 * Beside them, for the reader, the same bytes sent to a bare Node `http` server that only writes
 * the body to a file (bench/bareUploadServer.ts): the part of any gap that receiving over HTTP
 * costs in Node at all, whatever the server; vop's own cost is what it adds to that.
 *
 * The source file and the servers' directories sit in one temp dir, so everything writes to the
 * same file system; all of it is removed at the end. Runs alternate (plain, tus, multipart, bare,
 * then again) so that a noisy neighbour hurts each alike, and the best of each is compared.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import {
  ServerFleet,
  cpuTimeMs,
  loadAverage,
  mb,
  progress,
  residentMemory,
  verdict,
  type BenchSection,
  type ChildServer,
  type Target,
  VOP_SERVER,
} from './lib.js';
import { ADMIN_TOKEN, CLIENT_READ_BYTES, bareUpload, benchApp, multipartUpload, tusUpload, type BenchApp, type SpecAuth } from './uploadClients.js';

/** Settings of the upload benchmark; the environment may change them. */
export interface UploadBenchSettings {
  /** Size of the uploaded file, MiB (a whole number of 16 MiB blocks). */
  sizeMb: number;
  /** Bytes per tus PATCH, MiB (the upload page allows up to 64). */
  tusChunkMb: number;
  /** Rounds of plain write, tus, multipart and bare server; the best of each is compared. */
  rounds: number;
}

const DEFAULT_SETTINGS: UploadBenchSettings = { sizeMb: 1024, tusChunkMb: 64, rounds: 3 };

/** Issue 3's targets. */
const TARGETS = { minRatio: 0.8, maxResidentMb: 150 };

const MIB = 1024 * 1024;
/** The random block the file repeats: generating 1 GiB of fresh random bytes would take longer than the bench. */
const BLOCK_BYTES = 16 * MIB;
/** How often vop's VmRSS is sampled during an upload. */
const RSS_POLL_MS = 100;
/** How often the benchmark looks for the stored source (the end of the transfer). */
const STORED_POLL_MS = 2;

export const uploadSection: BenchSection = {
  name: 'upload',
  about: "a 1 GiB upload through tus and multipart vs a plain stream to the same disk, and vop's peak memory (VOP_BENCH_UPLOAD_MB, VOP_BENCH_UPLOAD_ROUNDS, VOP_BENCH_TUS_CHUNK_MB)",
  run: () =>
    uploadBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_UPLOAD_MB ? { sizeMb: Number(process.env.VOP_BENCH_UPLOAD_MB) } : {}),
      ...(process.env.VOP_BENCH_UPLOAD_ROUNDS ? { rounds: Number(process.env.VOP_BENCH_UPLOAD_ROUNDS) } : {}),
      ...(process.env.VOP_BENCH_TUS_CHUNK_MB ? { tusChunkMb: Number(process.env.VOP_BENCH_TUS_CHUNK_MB) } : {}),
    }),
};

/** One timed write of the file, by the plain stream or through a server. */
interface Run {
  /** Milliseconds until every byte was in the file (page cache). */
  cachedMs: number;
  /** Milliseconds until every byte was on the disk: cachedMs plus the fsync. */
  diskMs: number;
  /** Uploads only: from the stored file to the last response (vop: the probe and the status change). */
  probeMs?: number;
  /** vop only: the video's status afterwards (7: random bytes are not a video). */
  status?: number;
  /** Uploads only: the server's peak resident memory during the upload (VmHWM, reset before it), MiB. */
  peakRssMb?: number;
  /** Uploads only: the highest VmRSS sample, MiB (a check on peakRssMb, and the figure if it cannot be reset). */
  sampledRssMb?: number;
  /** Uploads only: the server's VmRSS just before the upload, MiB. */
  rssBeforeMb?: number;
  /** Uploads only: the server's CPU time during the upload, ms. */
  serverCpuMs?: number;
  /** CPU time of this process (the plain stream, or the upload client), ms. */
  selfCpuMs: number;
}

type Kind = 'plain' | 'tus' | 'multipart' | 'bare';

export async function uploadBench(s: UploadBenchSettings): Promise<Target[]> {
  if (!Number.isInteger(s.sizeMb / 16) || s.sizeMb < 16) throw new Error('VOP_BENCH_UPLOAD_MB must be a multiple of 16');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-upload-'));
  const dataDir = path.join(work, 'data');
  const source = path.join(work, 'source.bin');
  const bytes = s.sizeMb * MIB;
  const fleet = new ServerFleet();
  try {
    console.log(
      `upload: ${s.sizeMb} MiB over loopback, tus (tus-js-client, ${s.tusChunkMb} MiB PATCHes) and multipart (streamed with http.request), ` +
        `both clients reading the file ${CLIENT_READ_BYTES / MIB} MiB at a time, ` +
        `vs fs.createWriteStream to the same file system (${fileSystemOf(work)}); best of ${s.rounds} round(s); ` +
        `vop and this client are separate processes (${os.cpus().length} cores, load average ${loadAverage().toFixed(1)})`,
    );
    progress(`writing the ${s.sizeMb} MiB source file`);
    await writeSourceFile(source, s.sizeMb / 16);

    const vop = await fleet.start({
      name: 'vop',
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN],
      listening: /vop listening on (http:\/\/\S+)/,
    });
    const bareDir = path.join(work, 'bare');
    fs.mkdirSync(bareDir);
    const bare = await fleet.start({ name: 'bare', script: 'bench/bareUploadServer.ts', args: [bareDir], listening: /bare-upload listening on (http:\/\/\S+)/ });
    const api = await benchApp(vop.baseUrl);
    const idle = residentMemory(vop.pid);

    const runs: Record<Kind, Run[]> = { plain: [], tus: [], multipart: [], bare: [] };
    for (let round = 1; round <= s.rounds; round++) {
      progress(`round ${round}/${s.rounds}: plain stream`);
      runs.plain.push(await plainWrite(source, path.join(work, `plain-${round}.bin`)));
      progress(`round ${round}/${s.rounds}: tus`);
      runs.tus.push(await throughVop(vop, dataDir, api, bytes, (videoId, auth) => tusUpload(vop.baseUrl, source, bytes, videoId, auth, s.tusChunkMb * MIB)));
      progress(`round ${round}/${s.rounds}: multipart`);
      runs.multipart.push(await throughVop(vop, dataDir, api, bytes, (videoId, auth) => multipartUpload(vop.baseUrl, source, bytes, videoId, auth)));
      progress(`round ${round}/${s.rounds}: bare server`);
      const name = `upload-${round}.bin`;
      runs.bare.push(await watchUpload(bare.pid, { file: path.join(bareDir, name), linked: false }, bytes, () => bareUpload(bare.baseUrl, name, source, bytes)));
    }
    return report(runs, bytes, idle);
  } finally {
    await fleet.stopAll();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** `blocks` × one random 16 MiB block, fsynced so that its write-back does not run into the first measurement. */
async function writeSourceFile(file: string, blocks: number): Promise<void> {
  const block = crypto.randomBytes(BLOCK_BYTES);
  const fd = await fs.promises.open(file, 'w');
  try {
    for (let i = 0; i < blocks; i++) await fd.write(block);
    await fd.sync();
  } finally {
    await fd.close();
  }
}

/** The baseline: the source through a plain read stream into a plain write stream, then an fsync. */
async function plainWrite(source: string, dest: string): Promise<Run> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await pipeline(fs.createReadStream(source), fs.createWriteStream(dest));
  const cachedMs = performance.now() - started;
  const diskMs = cachedMs + (await fsyncFile(dest));
  const selfCpuMs = cpuMsSince(cpuBefore);
  await fs.promises.rm(dest);
  return { cachedMs, diskMs, selfCpuMs };
}

/** CPU time of this process (every thread, user and system) since `before`, ms. */
function cpuMsSince(before: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(before);
  return (d.user + d.system) / 1000;
}

/** fsync of a file by path; resolves with how long it took, ms. */
async function fsyncFile(file: string): Promise<number> {
  const started = performance.now();
  const fd = await fs.promises.open(file, 'r');
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
  return performance.now() - started;
}

/**
 * An upload client: resolves once vop answered its last request, with the video's status if that
 * answer says it (tus: X-Video-Status), NaN otherwise (multipart answers the envelope only).
 */
type UploadClient = (videoId: string, auth: SpecAuth) => Promise<{ status: number }>;

/**
 * Registers a video and uploads its file with `upload`, measured by {@link watchUpload}; the
 * status comes from the answer or, failing that, from the detail call.
 */
async function throughVop(vop: ChildServer, dataDir: string, api: BenchApp, bytes: number, upload: UploadClient): Promise<Run> {
  const videoId = await api.register();
  const file = path.join(dataDir, 'media', 'sources', videoId, 'source');
  let status = NaN;
  const run = await watchUpload(vop.pid, { file, linked: true }, bytes, async () => {
    status = (await upload(videoId, api.auth())).status;
  });
  if (Number.isNaN(status)) status = await api.status(videoId);
  return { ...run, status };
}

/**
 * Runs `upload` while watching the server's memory and CPU and the stored file, then fsyncs that
 * file (neither server does) and removes it, so the disk does not fill over the rounds: a vop
 * video is in status 7 by then and nothing reads its source again.
 *
 * `linked`: the file appears only once complete (vop's link into sources/), and its appearance
 * ends the transfer; otherwise (the bare server) the answer does.
 */
async function watchUpload(pid: number, stored: { file: string; linked: boolean }, expectedBytes: number, upload: () => Promise<unknown>): Promise<Run> {
  const canResetPeak = resetPeakRss(pid);
  const rssBeforeMb = residentMemory(pid).rssMb;
  let sampledRssMb = rssBeforeMb;
  const rssTimer = setInterval(() => (sampledRssMb = Math.max(sampledRssMb, residentMemory(pid).rssMb)), RSS_POLL_MS);
  const cpuBefore = cpuTimeMs(pid);
  const selfCpuBefore = process.cpuUsage();

  const started = performance.now();
  let storedAt: number | undefined;
  const storedTimer = stored.linked
    ? setInterval(() => {
        if (storedAt === undefined && fs.existsSync(stored.file)) storedAt = performance.now();
      }, STORED_POLL_MS)
    : undefined;
  try {
    await upload();
  } finally {
    clearInterval(storedTimer);
    clearInterval(rssTimer);
  }
  const answeredAt = performance.now();
  const serverCpuMs = cpuTimeMs(pid) - cpuBefore;
  const selfCpuMs = cpuMsSince(selfCpuBefore);
  const memory = residentMemory(pid);
  sampledRssMb = Math.max(sampledRssMb, memory.rssMb);
  const size = fs.statSync(stored.file, { throwIfNoEntry: false })?.size;
  if (size !== expectedBytes) throw new Error(`the upload was answered but ${stored.file} holds ${size ?? 'no'} bytes, not ${expectedBytes}`);
  storedAt ??= answeredAt; // the bare server; or vop's link and answer fell between two looks
  const cachedMs = storedAt - started;
  const diskMs = cachedMs + (await fsyncFile(stored.file));
  await fs.promises.rm(stored.file);
  return {
    cachedMs,
    diskMs,
    probeMs: answeredAt - storedAt,
    peakRssMb: canResetPeak ? memory.peakMb : undefined,
    sampledRssMb,
    rssBeforeMb,
    serverCpuMs,
    selfCpuMs,
  };
}

/**
 * Resets the process's peak resident memory (VmHWM) to its current one ("5" to clear_refs,
 * Linux 4.0+), so that the peak read afterwards is the upload's own. False if not allowed.
 */
function resetPeakRss(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Report

/** Prints the figures, each next to the plain stream and the targets; returns the targets. */
function report(runs: Record<Kind, Run[]>, bytes: number, idle: { rssMb: number; peakMb: number }): Target[] {
  const targets: Target[] = [];
  const best = (rs: Run[], key: 'cachedMs' | 'diskMs') => Math.min(...rs.map((r) => r[key]));
  const rate = (ms: number) => `${Math.round(bytes / 1e6 / (ms / 1000))} MB/s`;
  const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const times = (rs: Run[], key: 'cachedMs' | 'diskMs') => rs.map((r) => secs(r[key])).join(', ');
  /** The least CPU time of the runs, in seconds per GiB: far less disturbed by other work than wall time. */
  const cpuPerGib = (rs: Run[], key: 'selfCpuMs' | 'serverCpuMs') => secs(Math.min(...rs.map((r) => r[key]!)) / (bytes / 1024 ** 3));
  const plainDisk = best(runs.plain, 'diskMs');
  const plainCached = best(runs.plain, 'cachedMs');
  console.log(
    `  plain stream: to disk ${rate(plainDisk)} (${times(runs.plain, 'diskMs')}), to page cache ${rate(plainCached)} (${times(runs.plain, 'cachedMs')}); ` +
      `CPU ${cpuPerGib(runs.plain, 'selfCpuMs')} per GiB`,
  );
  /** The throughput lines of one kind of upload; `target`: held to the issue's ratio. */
  const throughput = (kind: Kind, label: string, target: boolean) => {
    const rs = runs[kind];
    const ratio = plainDisk / best(rs, 'diskMs');
    const met = ratio >= TARGETS.minRatio;
    if (target) targets.push({ what: `${kind}/plain stream throughput to disk`, text: `${ratio.toFixed(2)} (≥ ${TARGETS.minRatio.toFixed(2)})`, met });
    console.log(
      `  ${label}: to disk ${rate(best(rs, 'diskMs'))} (${times(rs, 'diskMs')}), ratio ${ratio.toFixed(2)}` +
        `${target ? ` (target ≥ ${TARGETS.minRatio.toFixed(2)} ${verdict(met)})` : ''}; ` +
        `to page cache ${rate(best(rs, 'cachedMs'))} (${times(rs, 'cachedMs')}), ratio ${(plainCached / best(rs, 'cachedMs')).toFixed(2)}`,
    );
    const probe = kind === 'bare' ? '' : `probe and status change after the transfer (excluded): ${rs.map((r) => secs(r.probeMs!)).join(', ')}; status ${rs.map((r) => r.status).join(', ')}; `;
    console.log(`    ${probe}CPU per GiB: server ${cpuPerGib(rs, 'serverCpuMs')}, client ${cpuPerGib(rs, 'selfCpuMs')}`);
  };
  /** MiB with one decimal: a peak a few tenths under the limit must not print as the limit itself. */
  const mib = (n: number) => `${n.toFixed(1)} MB`;
  /** The memory line of one kind of upload; `target`: held to the issue's limit. */
  const memory = (kind: Kind, target: boolean) => {
    const rs = runs[kind];
    const peaks = rs.map((r) => r.peakRssMb ?? r.sampledRssMb!);
    const peak = Math.max(...peaks);
    const met = peak < TARGETS.maxResidentMb;
    if (target) targets.push({ what: `${kind}: vop peak resident memory`, text: `${mib(peak)} (< ${TARGETS.maxResidentMb} MB)`, met });
    const how =
      rs[0]!.peakRssMb === undefined
        ? `the highest VmRSS sample every ${RSS_POLL_MS} ms: VmHWM could not be reset`
        : `VmHWM, reset before each upload; VmRSS sampled every ${RSS_POLL_MS} ms peaked at ${rs.map((r) => mb(r.sampledRssMb!)).join(', ')}`;
    console.log(
      `    peak resident memory during the upload: ${peaks.map(mib).join(', ')}, ` +
        `that is ${rs.map((r, i) => `+${mb(peaks[i]! - r.rssBeforeMb!)}`).join(', ')} over the VmRSS before it (${how}` +
        `${target ? `; vop ${mb(idle.rssMb)} idle before the first upload; target < ${TARGETS.maxResidentMb} MB ${verdict(met)}` : ''})`,
    );
  };
  throughput('tus', 'tus', true);
  memory('tus', true);
  throughput('multipart', 'multipart', true);
  memory('multipart', true);
  throughput('bare', 'bare Node server (reference: the body piped to a file, nothing else)', false);
  memory('bare', false);

  const load = loadAverage();
  if (load > os.cpus().length) {
    console.log(
      `note: load average ${load.toFixed(1)} on ${os.cpus().length} cores: other work shared the machine (and maybe its disk); ` +
        'the rounds alternate so that it hurts each way alike, and the best of each is compared; CPU per GiB is far less affected',
    );
  }
  return targets;
}

/** The file system a path is on, as /proc/mounts names it (device and type), for the header line. */
function fileSystemOf(p: string): string {
  try {
    const mounts = fs
      .readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .filter((f) => f.length > 2 && (p === f[1] || p.startsWith(f[1] === '/' ? '/' : `${f[1]}/`)));
    const m = mounts.sort((a, b) => b[1]!.length - a[1]!.length)[0];
    return m ? `${m[0]} ${m[2]} on ${m[1]}` : 'unknown';
  } catch {
    return 'unknown';
  }
}

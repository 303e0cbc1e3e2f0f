/**
 * `npm run bench -- api`: the spec API with a 100,000-video library (issue 2), each figure next
 * to a bare Node `http` server answering the same bytes, measured the same way in the same run.
 *
 * Order: seed the library through the store layer (no server running), start vop on it, register
 * the last videos over HTTP (the registration figure), wait for the snapshot that follows, restart
 * vop (the start-up figure, with the full library), then load detail and list on vop and on the bare server in turn, then read vop's
 * resident memory. Nothing is kept between runs: the data dir is a temp dir removed at the end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ServerFleet,
  assertHealthyRun,
  loadAverage,
  mb,
  median,
  ms,
  progress,
  residentMemory,
  runLoad,
  tokenSource,
  verdict,
  whole,
  type BenchSection,
  type ChildServer,
  type LoadRequest,
  type LoadResult,
  type SpawnSpec,
  type Target,
  VOP_SERVER,
} from './lib.js';
import { seedLibrary, type SeededLibrary } from './seedLibrary.js';

/** Settings of the API benchmark; the environment may shrink them for a quick look. */
export interface ApiBenchSettings {
  /** Videos in the library while detail, list, start-up and memory are measured. */
  library: number;
  /** Of those, how many are registered over HTTP (the rest are seeded directly). */
  httpRegistrations: number;
  /** Concurrent connections of every load run. */
  connections: number;
  /** Seconds of each measured detail and list run. */
  durationS: number;
  /** Seconds of load before measuring, so both servers are past JIT warm-up. */
  warmupS: number;
  /** Start-ups timed; the median is reported. */
  startupRuns: number;
}

const DEFAULT_SETTINGS: ApiBenchSettings = {
  library: 100_000,
  httpRegistrations: 5_000,
  connections: 50,
  durationS: 10,
  warmupS: 2,
  startupRuns: 3,
};

/** Issue 2's targets. */
const TARGETS = { minRatio: 0.5, maxStartupMs: 2_000, maxResidentMb: 300 };

/** Spec 4.4's default PageSize, which the list calls use. */
const LIST_PAGE_SIZE = 50;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export const apiSection: BenchSection = {
  name: 'api',
  about: 'spec API with a 100,000-video library: registrations, detail, list, start-up, memory (VOP_BENCH_LIBRARY, VOP_BENCH_SECONDS)',
  run: () =>
    apiBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_LIBRARY ? { library: Number(process.env.VOP_BENCH_LIBRARY) } : {}),
      ...(process.env.VOP_BENCH_SECONDS ? { durationS: Number(process.env.VOP_BENCH_SECONDS) } : {}),
    }),
};

/** Everything the API benchmark measured, for {@link report}. */
interface ApiFigures {
  registrations: { vop: LoadResult; bare: LoadResult };
  detail: { vop: LoadResult; bare: LoadResult };
  list: { vop: LoadResult; bare: LoadResult };
  deepList: { page: number; vop: LoadResult };
  startup: { wallMs: number[]; cpuMs: number[]; bareWallMs: number[]; bareCpuMs: number[] };
  memory: { afterReads: Memory; afterRegistrations: Memory; bare: Memory };
  /** Size of vop.db with the whole library, bytes. */
  databaseBytes: number;
}
type Memory = ReturnType<typeof residentMemory>;

export async function apiBench(s: ApiBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-'));
  const dataDir = path.join(work, 'data');
  const fleet = new ServerFleet();
  const vopSpec: SpawnSpec = {
    name: 'vop',
    script: VOP_SERVER,
    args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN],
    listening: /vop listening on (http:\/\/\S+)/,
  };
  try {
    console.log(
      `api: ${whole(s.library)} videos, ${s.connections} connections, ${s.durationS} s per run after ${s.warmupS} s warm-up; ` +
        `vop, the bare server and the load generator are separate processes (${os.cpus().length} cores, load average ${loadAverage().toFixed(1)})`,
    );
    progress(`seeding ${whole(s.library - s.httpRegistrations)} videos through the store layer`);
    const seedStarted = performance.now();
    const lib = await seedLibrary({ dir: dataDir, count: s.library - s.httpRegistrations });
    progress(`seeded in ${ms(performance.now() - seedStarted)}`);
    // The registration rate limit (600 a minute per application by default) would turn most of
    // the HTTP registrations into 308 answers: the bench measures registering, so it is off here,
    // as the console's Settings page saves it.
    fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ registrationsPerMinute: 0 }));
    const req = apiRequests(lib, Math.floor(s.library / LIST_PAGE_SIZE / 2));
    const load = (server: ChildServer, next: () => LoadRequest, run: { durationS: number } | { amount: number }) =>
      runLoad({ url: server.baseUrl, connections: s.connections, next, serverPid: server.pid, ...run });

    // Registrations, over HTTP, into the seeded library (one by hand first: its answer is the bare body).
    let vop = await fleet.start(vopSpec);
    const postBody = await captureBody(vop.baseUrl, req.registration(), 'registration');
    progress(`registering ${whole(s.httpRegistrations - 1)} more videos over HTTP`);
    const regVop = await load(vop, req.registration, { amount: s.httpRegistrations - 1 });
    assertHealthyRun('vop registrations', regVop, postBody.length);
    // A running vop folds its journal into a snapshot of the whole database 30 s after the last
    // write (durableDatabase.ts), holding a second copy of it in memory meanwhile: the peak
    // figure must include that, as a server's life does.
    progress('waiting for the snapshot that follows the last write');
    await journalFolded(dataDir);
    const afterRegistrations = residentMemory(vop.pid);
    await fleet.stop(vop);

    // Start-up with the full library (the registrations' journal was folded into the snapshot on stop).
    const vopStarts = await fleet.timeStartups(vopSpec, s.startupRuns);
    vop = vopStarts.server;

    // The bare server answers with real answers of this vop.
    const detailBody = await captureBody(vop.baseUrl, req.detailOf(lib.videoIds[0]!), 'detail');
    const listBody = await captureBody(vop.baseUrl, req.list(), 'list');
    const total = (JSON.parse(listBody.toString('utf8')) as { Total: number }).Total;
    if (total !== s.library) throw new Error(`the list reports Total ${total}, expected ${s.library}: some registrations failed`);
    const bodiesFile = path.join(work, 'bodies.json');
    const bodies = { '/Api/Video/Get': detailBody, '/Api/Video/GetList': listBody, '/Api/Video/Post': postBody };
    fs.writeFileSync(bodiesFile, JSON.stringify(Object.fromEntries(Object.entries(bodies).map(([p, b]) => [p, b.toString('base64')]))));
    const bareStarts = await fleet.timeStartups(
      { name: 'bare', script: 'bench/bareServer.ts', args: [bodiesFile], listening: /bare listening on (http:\/\/\S+)/ },
      s.startupRuns,
    );
    const bare = bareStarts.server;

    progress('registrations on the bare server');
    const regBare = await load(bare, req.registration, { amount: s.httpRegistrations - 1 });
    assertHealthyRun('bare registrations', regBare, postBody.length);

    /** A warm-up run, then the measured one; `strict` throws if any answer was wrong or missing. */
    const measure = async (label: string, server: ChildServer, next: () => LoadRequest, bodyBytes: number, strict = true) => {
      progress(`${label} on ${server.name}`);
      await load(server, next, { durationS: s.warmupS });
      const r = await load(server, next, { durationS: s.durationS });
      if (strict) assertHealthyRun(`${server.name} ${label}`, r, bodyBytes);
      return r;
    };
    const figures: ApiFigures = {
      registrations: { vop: regVop, bare: regBare },
      detail: {
        vop: await measure('detail', vop, req.detail, detailBody.length * 0.85), // bodies vary a little with the status
        bare: await measure('detail', bare, req.detail, detailBody.length),
      },
      list: { vop: await measure('list', vop, req.list, listBody.length), bare: await measure('list', bare, req.list, listBody.length) },
      deepList: { page: req.deepPage, vop: await measure(`list page ${req.deepPage}`, vop, req.deepList, listBody.length, false) },
      startup: { wallMs: vopStarts.wallMs, cpuMs: vopStarts.cpuMs, bareWallMs: bareStarts.wallMs, bareCpuMs: bareStarts.cpuMs },
      memory: { afterReads: residentMemory(vop.pid), afterRegistrations, bare: residentMemory(bare.pid) },
      databaseBytes: fs.statSync(path.join(dataDir, 'vop.db')).size,
    };
    return report(figures, s);
  } finally {
    await fleet.stopAll();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The requests of the run, each with a fresh Timestamp and Token (spec section 5). */
function apiRequests(lib: SeededLibrary, deepPage: number) {
  const tokens = tokenSource(lib.secret);
  const auth = () => {
    const { timestamp, token } = tokens();
    return `AppId=${lib.appId}&Timestamp=${timestamp}&Token=${token}`;
  };
  let registered = 0;
  const detailOf = (id: string): LoadRequest => ({ path: `/Api/Video/Get?${auth()}&Id=${id}` });
  return {
    registration: (): LoadRequest => {
      const n = registered++;
      return {
        method: 'POST',
        path: '/Api/Video/Post',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body:
          `${auth()}&VideoTitle=Bench+registration+${n}&Description=Registered+over+HTTP+by+the+benchmark` +
          `&Tags=bench,http,registration&Actors=Speaker&CreateUser=user-${n % 2000}&SourceFileGetType=1`,
      };
    },
    detailOf,
    /** A random video of the library: most of the database is touched, not a cached few pages. */
    detail: () => detailOf(lib.videoIds[Math.floor(Math.random() * lib.videoIds.length)]!),
    list: (): LoadRequest => ({ path: `/Api/Video/GetList?${auth()}` }),
    /** A page from the middle of the library (1,000 of 2,000 with 100,000 videos): OFFSET walks the index to it. */
    deepPage,
    deepList: (): LoadRequest => ({ path: `/Api/Video/GetList?${auth()}&PageIndex=${deepPage}` }),
  };
}

/** Prints the figures, each next to its baseline and target, and returns the targets. */
function report(f: ApiFigures, s: ApiBenchSettings): Target[] {
  const targets: Target[] = [];
  const ratioLine = (label: string, v: LoadResult, bare: LoadResult, withTarget: boolean) => {
    const ratio = v.reqPerSec / bare.reqPerSec;
    let target = '';
    if (withTarget) {
      const met = ratio >= TARGETS.minRatio;
      targets.push({ what: `${label}/bare ratio`, text: `≥ ${TARGETS.minRatio.toFixed(2)}`, met });
      target = `, target ≥ ${TARGETS.minRatio.toFixed(2)} ${verdict(met)}`;
    }
    return (
      `${label}: ${whole(v.reqPerSec)} req/s (bare ${whole(bare.reqPerSec)} req/s, ratio ${ratio.toFixed(2)}${target}), ` +
      `p99 ${ms(v.p99Ms)} (bare ${ms(bare.p99Ms)}), ` +
      `server CPU ${whole(v.cpuUsPerResponse)} µs/req (bare ${whole(bare.cpuUsPerResponse)}, ratio ${(bare.cpuUsPerResponse / v.cpuUsPerResponse).toFixed(2)})`
    );
  };
  console.log(`${ratioLine('registrations', f.registrations.vop, f.registrations.bare, false)}, over ${whole(f.registrations.vop.responses)} registrations, each fsynced`);
  console.log(ratioLine('detail', f.detail.vop, f.detail.bare, true));
  console.log(`${ratioLine('list', f.list.vop, f.list.bare, true)}, page 0, ${LIST_PAGE_SIZE} per page`);
  const deep = f.deepList.vop;
  const deepFailures = deep.errors + deep.non2xx;
  console.log(
    `${ratioLine(`list page ${f.deepList.page}`, deep, f.list.bare, false)}, offset ${whole(f.deepList.page * LIST_PAGE_SIZE)}` +
      `${deepFailures > 0 ? `, ${whole(deepFailures)} failed (${whole(deep.timeouts)} timed out after 10 s)` : ''}: no target, for the README`,
  );

  const startup = median(f.startup.wallMs);
  const startupMet = startup < TARGETS.maxStartupMs;
  targets.push({ what: 'start-up', text: `< ${TARGETS.maxStartupMs} ms`, met: startupMet });
  console.log(
    `start-up: ${ms(startup)} with ${whole(s.library)} videos, spawn to /healthz 200, median of ${f.startup.wallMs.length} ` +
      `(${f.startup.wallMs.map(ms).join(', ')}), CPU ${ms(median(f.startup.cpuMs))} ` +
      `(bare ${ms(median(f.startup.bareWallMs))}, CPU ${ms(median(f.startup.bareCpuMs))}; target < ${whole(TARGETS.maxStartupMs)} ms ${verdict(startupMet)})`,
  );

  console.log(`database: vop.db ${mb(f.databaseBytes / 1024 / 1024)} with ${whole(s.library)} videos (${whole(f.databaseBytes / s.library)} bytes per video)`);
  const { afterReads, afterRegistrations, bare } = f.memory;
  const memoryMet = Math.max(afterReads.peakMb, afterRegistrations.peakMb) < TARGETS.maxResidentMb;
  targets.push({ what: 'resident memory (peak)', text: `< ${TARGETS.maxResidentMb} MB`, met: memoryMet });
  console.log(
    `memory: VmRSS ${mb(afterReads.rssMb)}, peak VmHWM ${mb(afterReads.peakMb)} after detail and list load; ` +
      `${mb(afterRegistrations.rssMb)} / ${mb(afterRegistrations.peakMb)} after registrations ` +
      `(bare ${mb(bare.rssMb)} / ${mb(bare.peakMb)}, target peak < ${TARGETS.maxResidentMb} MB ${verdict(memoryMet)})`,
  );

  const load = loadAverage();
  if (load > os.cpus().length) {
    console.log(
      `note: load average ${load.toFixed(1)} on ${os.cpus().length} cores: other work shared the machine, so req/s, latency and start-up ` +
        `are worse for both servers than on an idle machine; CPU per request and start-up CPU are much less affected`,
    );
  }
  return targets;
}

/** Resolves once the data dir's journal is empty again: a snapshot has taken in every write. */
async function journalFolded(dataDir: string, timeoutMs = 90_000): Promise<void> {
  const journal = path.join(dataDir, 'journal');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const bytes = fs.readdirSync(journal).reduce((sum, f) => sum + fs.statSync(path.join(journal, f)).size, 0);
    if (bytes === 0) return;
    if (Date.now() > deadline) throw new Error(`the journal still holds ${bytes} bytes after ${timeoutMs / 1000} s: no snapshot was taken`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Sends one request with fetch and returns the body, checking it is a success envelope. */
async function captureBody(baseUrl: string, req: LoadRequest, label: string): Promise<Buffer> {
  const res = await fetch(`${baseUrl}${req.path}`, { method: req.method ?? 'GET', headers: req.headers, body: req.body });
  const body = Buffer.from(await res.arrayBuffer());
  const parsed = JSON.parse(body.toString('utf8')) as { AuthMsg?: { ResultCode?: string } };
  if (res.status !== 200 || parsed.AuthMsg?.ResultCode !== '1') throw new Error(`${label} failed: ${res.status} ${body.toString('utf8')}`);
  return body;
}

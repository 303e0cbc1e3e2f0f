/**
 * The reads part of `npm run bench -- cluster`: one embedded node and one cluster node
 * (`--database-url --shared-media`, on the bench's throwaway PostgreSQL) over the same library of
 * one application, at each size of the run: detail (spec 4.1), two list pages (4.4: an early one
 * and a deep one) and registrations (4.2). Runs alternate between the two nodes (embedded,
 * cluster, embedded, ...) so that drift of the shared machine falls on both; the medians are
 * printed with the ratio, the issue's goal beside it, and PostgreSQL's own time per call
 * (pg_stat_statements, reset before each measured run of the cluster node).
 */
import fs from 'node:fs';
import path from 'node:path';
import { startOwnPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { StatementStats, StatementTally } from './pgStatements.js';
import { copyLibraryToPostgres } from './seedPostgres.js';
import { seedLibrary, type SeededLibrary } from './seedLibrary.js';
import { ADMIN_TOKEN } from './uploadClients.js';
import {
  assertHealthyRun,
  loadAverage,
  median,
  ms,
  progress,
  runLoad,
  sleep,
  tokenSource,
  verdict,
  whole,
  type ChildServer,
  type LoadRequest,
  type LoadResult,
  type ServerFleet,
  type Target,
  VOP_SERVER,
} from './lib.js';

/** Settings of the reads part. */
export interface ClusterReadSettings {
  /** Library sizes, each measured in turn on a fresh pair of nodes. */
  sizes: number[];
  /** Connections of the read runs. */
  connections: number;
  /** Connections of the registration runs: the applications' servers registering at once. */
  registrationClients: number;
  durationS: number;
  warmupS: number;
  /** Measured runs per call and mode, alternating between the modes. */
  rounds: number;
}

/** What the issue asks of a call in cluster mode, against the embedded node in the same run. */
interface Goal {
  ratio: number;
  /** The cluster node's p99 must be under this, if set. */
  p99Ms?: number;
}

const READ_GOAL: Goal = { ratio: 0.5, p99Ms: 20 };
const WRITE_GOAL: Goal = { ratio: 0.8 };

/** Ids a detail run walks: enough that no cache holds a handful of hot videos. */
const DETAIL_IDS = 1_000;

/** The pause between a warm-up and the reset of the statistics, bounds. */
const QUIET_MIN_MS = 300;
const QUIET_MAX_MS = 3_000;

/** The list pages measured (PageIndex, as the spec counts it, from 0; PageSize 50). */
const EARLY_PAGE = 3;
const DEEP_PAGE = 200;
const PAGE_SIZE = 50;

/** One call of the comparison. */
interface Call {
  name: string;
  connections: number;
  goal: Goal;
  /** The requests of one run, with a Timestamp of now (spec section 5 allows minutes of skew). */
  requests(): LoadRequest[];
  /** The least share of the first request's answer size an answer may have (detail answers vary with the status). */
  bodyShare: number;
  /** Registers videos: checked to have added one for each answer. */
  registers?: boolean;
}

/** Measures every size; resolves with the targets, one per call and size. */
export async function clusterReads(s: ClusterReadSettings, work: string, fleet: ServerFleet): Promise<Target[]> {
  progress('starting a throwaway PostgreSQL with pg_stat_statements on loopback');
  const pg = await startOwnPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top' } });
  try {
    const targets: Target[] = [];
    for (const size of s.sizes) targets.push(...(await measureSize(size, s, work, fleet, pg)));
    return targets;
  } finally {
    await pg.stop();
  }
}

async function measureSize(size: number, s: ClusterReadSettings, work: string, fleet: ServerFleet, pg: TestPostgres): Promise<Target[]> {
  const embeddedDir = path.join(work, `embedded-${size}`);
  const clusterDir = path.join(work, `cluster-${size}`);
  progress(`seeding ${whole(size)} videos into an embedded library`);
  let started = performance.now();
  const lib = await seedLibrary({ dir: embeddedDir, count: size, renditions: true });
  progress(`seeded in ${ms(performance.now() - started)}; copying them into PostgreSQL`);
  started = performance.now();
  const database = `bench_${process.pid}_${size}`;
  await pg.createDatabase(database);
  const copied = await copyLibraryToPostgres(embeddedDir, pg.url(database));
  progress(`copied in ${ms(performance.now() - started)}: ${Object.entries(copied).map(([t, n]) => `${whole(n)} ${t}`).join(', ')}`);
  const stats = await StatementStats.open(pg.url('postgres'), pg.url(database), database);

  fs.mkdirSync(clusterDir, { mode: 0o700 });
  // The registration rate limit would turn most registrations into 308: the bench measures registering.
  // (A cluster node imports its folder's settings.json into the shared settings.)
  for (const dir of [embeddedDir, clusterDir]) fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ registrationsPerMinute: 0 }));
  const start = (name: string, dataDir: string, env: NodeJS.ProcessEnv) =>
    fleet.start({
      name,
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir],
      env: { VOP_ADMIN_TOKEN: ADMIN_TOKEN, ...env },
      listening: /vop listening on (http:\/\/\S+)/,
    });
  const embedded = await start('vop (embedded)', embeddedDir, {});
  const cluster = await start('vop (cluster)', clusterDir, { VOP_DATABASE_URL: pg.url(database), VOP_SHARED_MEDIA: '1' });
  const nodes = { embedded, cluster };
  try {
    const calls = benchCalls(lib, s);
    for (const node of [embedded, cluster]) {
      const total = await listTotal(node, lib);
      if (total !== size) throw new Error(`${node.name}: the list reports Total ${total}, expected ${size}`);
    }
    console.log(
      `  ${whole(size)} videos of one application (80% published, with 2 renditions each; status history and status deliveries as a grown library has; ` +
        `load average ${loadAverage().toFixed(1)})`,
    );
    console.log(`  ${'call'.padEnd(30)} ${'embedded'.padStart(24)} ${'cluster'.padStart(24)}   cluster/embedded`);
    const targets: Target[] = [];
    for (const call of calls) {
      const runs: Record<keyof typeof nodes, LoadResult[]> = { embedded: [], cluster: [] };
      const tally = new StatementTally();
      const expected = new Map<ChildServer, number>();
      const totalsBefore = new Map<ChildServer, number>();
      const sent = new Map<ChildServer, number>();
      for (const node of [embedded, cluster]) {
        totalsBefore.set(node, await listTotal(node, lib));
        expected.set(node, (await answerOf(node, call.requests()[0]!, call.name)).length * call.bodyShare);
        sent.set(node, 1);
      }
      for (let round = 0; round < s.rounds; round++) {
        for (const mode of ['embedded', 'cluster'] as const) {
          const node = nodes[mode];
          progress(`${whole(size)} videos, ${call.name}: ${mode}, run ${round + 1} of ${s.rounds}`);
          const load = (durationS: number) => runLoad({ url: node.baseUrl, connections: call.connections, sequence: call.requests(), serverPid: node.pid, durationS });
          const warm = await load(s.warmupS);
          if (mode === 'cluster') {
            // The warm-up's last requests, still in the node when wrk stopped, must not count in the run.
            await sleep(Math.min(QUIET_MAX_MS, Math.max(QUIET_MIN_MS, 3 * warm.p99Ms)));
            await stats.reset();
          }
          const r = await load(s.durationS);
          assertHealthyRun(`${node.name} ${call.name}`, r, expected.get(node)!);
          if (mode === 'cluster') tally.add(await stats.read(), r.responses);
          runs[mode].push(r);
          sent.set(node, sent.get(node)! + warm.responses + r.responses);
        }
      }
      if (call.registers) {
        // Every answered registration is in the library (a run's last requests may land after wrk stopped counting).
        for (const node of [embedded, cluster]) {
          const added = (await listTotal(node, lib)) - totalsBefore.get(node)!;
          const least = sent.get(node)!;
          if (added < least || added > least + call.connections * 2 * s.rounds) throw new Error(`${node.name}: ${added} videos added by ${least} answered registrations`);
        }
      }
      targets.push(report(size, call, runs.embedded, runs.cluster, tally));
    }
    return targets;
  } finally {
    await fleet.stop(cluster);
    await fleet.stop(embedded);
    await stats.close();
    fs.rmSync(embeddedDir, { recursive: true, force: true });
    fs.rmSync(clusterDir, { recursive: true, force: true });
  }
}

/** The calls measured, in order: the reads on the library as seeded, then the registrations that grow it. */
function benchCalls(lib: SeededLibrary, s: ClusterReadSettings): Call[] {
  const tokens = tokenSource(lib.secret);
  const auth = () => {
    const { timestamp, token } = tokens();
    return `AppId=${lib.appId}&Timestamp=${timestamp}&Token=${token}`;
  };
  const step = Math.max(1, Math.floor(lib.videoIds.length / DETAIL_IDS));
  const ids = lib.videoIds.filter((_, i) => i % step === 0);
  const page = (index: number): Call => ({
    name: `list, PageIndex ${index} of ${PAGE_SIZE}`,
    connections: s.connections,
    goal: READ_GOAL,
    bodyShare: 0.9,
    requests: () => [{ path: `/Api/Video/GetList?${auth()}&PageIndex=${index}&PageSize=${PAGE_SIZE}` }],
  });
  return [
    {
      name: 'detail (4.1)',
      connections: s.connections,
      goal: READ_GOAL,
      bodyShare: 0.5, // a published video's answer lists its files; one in the pipeline has none
      requests: () => {
        const a = auth();
        return ids.map((id) => ({ path: `/Api/Video/Get?${a}&Id=${id}` }));
      },
    },
    page(EARLY_PAGE),
    page(DEEP_PAGE),
    {
      name: `registrations, ${s.registrationClients} clients`,
      connections: s.registrationClients,
      goal: WRITE_GOAL,
      bodyShare: 0.9,
      registers: true,
      requests: () => {
        const a = auth();
        return Array.from({ length: 500 }, (_, n) => ({
          method: 'POST' as const,
          path: '/Api/Video/Post',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body:
            `${a}&VideoTitle=Bench+registration+${n}&Description=Registered+over+HTTP+by+the+benchmark` +
            `&Tags=bench,http,registration&Actors=Speaker&CreateUser=user-${n % 2000}&SourceFileGetType=1`,
        }));
      },
    },
  ];
}

/** One request's answer, which must be a success (ResultCode 1). */
async function answerOf(node: ChildServer, req: LoadRequest, label: string): Promise<Buffer> {
  const res = await fetch(`${node.baseUrl}${req.path}`, { method: req.method ?? 'GET', headers: req.headers, body: req.body });
  const body = Buffer.from(await res.arrayBuffer());
  const parsed = JSON.parse(body.toString('utf8')) as { AuthMsg?: { ResultCode?: string } };
  if (res.status !== 200 || parsed.AuthMsg?.ResultCode !== '1') throw new Error(`${node.name} ${label} failed: ${res.status} ${body.toString('utf8')}`);
  return body;
}

/** The application's video count, as the list reports it. */
async function listTotal(node: ChildServer, lib: SeededLibrary): Promise<number> {
  const { timestamp, token } = tokenSource(lib.secret)();
  const body = await answerOf(node, { path: `/Api/Video/GetList?AppId=${lib.appId}&Timestamp=${timestamp}&Token=${token}&PageSize=1` }, 'list');
  return (JSON.parse(body.toString('utf8')) as { Total: number }).Total;
}

/** Prints one call's medians, ratio, goal and PostgreSQL's share; returns its target. */
function report(size: number, call: Call, embedded: LoadResult[], cluster: LoadResult[], tally: StatementTally): Target {
  const rate = (runs: LoadResult[]) => median(runs.map((r) => r.reqPerSec));
  const p99 = (runs: LoadResult[]) => median(runs.map((r) => r.p99Ms));
  const figure = (runs: LoadResult[]) => `${whole(rate(runs))} req/s, p99 ${ms(p99(runs))}`;
  const ratio = rate(cluster) / rate(embedded);
  const goal = call.goal;
  const met = ratio >= goal.ratio && (goal.p99Ms === undefined || p99(cluster) < goal.p99Ms);
  const goalText = `≥ ${goal.ratio.toFixed(2)}${goal.p99Ms !== undefined ? `, p99 < ${goal.p99Ms} ms` : ''}`;
  console.log(`  ${call.name.padEnd(30)} ${figure(embedded).padStart(24)} ${figure(cluster).padStart(24)}   ${ratio.toFixed(2)} (goal ${goalText}: ${verdict(met)})`);
  const each = (runs: LoadResult[]) => runs.map((r) => whole(r.reqPerSec)).join(', ');
  console.log(`      runs: embedded ${each(embedded)}; cluster ${each(cluster)} req/s`);
  const per = tally.perResponse();
  console.log(`      PostgreSQL per request: ${per.statements.toFixed(2)} statements, ${per.execMs.toFixed(3)} ms executing; the top ones:`);
  for (const st of tally.top(4)) {
    const text = st.query.length > 110 ? `${st.query.slice(0, 107)}...` : st.query;
    console.log(`        ${(st.calls / tally.responses).toFixed(2).padStart(6)}/req, mean ${(st.totalMs / st.calls).toFixed(3)} ms: ${text}`);
  }
  return { what: `${whole(size)} videos, ${call.name}: cluster/embedded`, text: goalText, met };
}

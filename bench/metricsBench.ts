/**
 * `npm run bench -- metrics`: what the metrics cost, with a 100,000-video library. Two figures,
 * each against its target:
 *
 * - a scrape (`GET /metrics` with the admin token, after the API load, so the request histogram
 *   holds its series): median and p95 of sequential scrapes, target at most 10 ms;
 * - the detail call (spec 4.1, a hot path) with the metrics off (VOP_METRICS_ENABLED=0) and on,
 *   vop restarted between them on the same library, in alternating rounds (off, on, off, on) so
 *   that a machine that slows down during the run weighs on both: server CPU per answer and
 *   answers per second side by side, target on within 3% of off. CPU per answer is the target's
 *   figure: it is what the metrics add, and it moves less than req/s when other work shares the
 *   machine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ServerFleet,
  assertHealthyRun,
  loadAverage,
  median,
  ms,
  progress,
  runLoad,
  tokenSource,
  verdict,
  whole,
  type BenchSection,
  type LoadRequest,
  type LoadResult,
  type Target,
  VOP_SERVER,
} from './lib.js';
import { seedLibrary } from './seedLibrary.js';

export interface MetricsBenchSettings {
  /** Videos in the library. */
  library: number;
  /** Concurrent connections of the load. */
  connections: number;
  /** Seconds of each measured run. */
  durationS: number;
  /** Seconds of load before each measured run. */
  warmupS: number;
  /** Rounds of (off, on). */
  rounds: number;
  /** Scrapes timed. */
  scrapes: number;
}

const DEFAULT_SETTINGS: MetricsBenchSettings = { library: 100_000, connections: 50, durationS: 10, warmupS: 2, rounds: 2, scrapes: 200 };
const TARGETS = { maxScrapeMs: 10, maxCpuRatio: 1.03 };
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export const metricsSection: BenchSection = {
  name: 'metrics',
  about: 'GET /metrics at 100,000 videos, and the detail call with metrics off and on (VOP_BENCH_LIBRARY, VOP_BENCH_SECONDS, VOP_BENCH_ROUNDS)',
  run: () =>
    metricsBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_LIBRARY ? { library: Number(process.env.VOP_BENCH_LIBRARY) } : {}),
      ...(process.env.VOP_BENCH_SECONDS ? { durationS: Number(process.env.VOP_BENCH_SECONDS) } : {}),
      ...(process.env.VOP_BENCH_ROUNDS ? { rounds: Number(process.env.VOP_BENCH_ROUNDS) } : {}),
    }),
};

export async function metricsBench(s: MetricsBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-metrics-'));
  const dataDir = path.join(work, 'data');
  const fleet = new ServerFleet();
  try {
    console.log(
      `metrics: ${whole(s.library)} videos, ${s.rounds} rounds of metrics off then on, ${s.connections} connections, ` +
        `${s.durationS} s per run after ${s.warmupS} s warm-up (${os.cpus().length} cores, load average ${loadAverage().toFixed(1)})`,
    );
    progress(`seeding ${whole(s.library)} videos through the store layer`);
    const lib = await seedLibrary({ dir: dataDir, count: s.library });
    const tokens = tokenSource(lib.secret);
    const detail = (): LoadRequest => {
      const { timestamp, token } = tokens();
      return { path: `/Api/Video/Get?AppId=${lib.appId}&Timestamp=${timestamp}&Token=${token}&Id=${lib.videoIds[Math.floor(Math.random() * lib.videoIds.length)]}` };
    };

    const runs: Record<'off' | 'on', LoadResult[]> = { off: [], on: [] };
    let scrapeMs: number[] = [];
    let scrapeBytes = 0;
    for (let round = 1; round <= s.rounds; round++) {
      for (const mode of ['off', 'on'] as const) {
        const vop = await fleet.start({
          name: `vop (metrics ${mode})`,
          script: VOP_SERVER,
          args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir],
          env: { VOP_ADMIN_TOKEN: ADMIN_TOKEN, VOP_METRICS_ENABLED: mode === 'on' ? '1' : '0' },
          listening: /vop listening on (http:\/\/\S+)/,
        });
        try {
          const bodyBytes = (await (await fetch(`${vop.baseUrl}${detail().path}`)).arrayBuffer()).byteLength;
          const load = (durationS: number) => runLoad({ url: vop.baseUrl, connections: s.connections, next: detail, serverPid: vop.pid, durationS });
          progress(`round ${round}: detail with metrics ${mode}`);
          await load(s.warmupS);
          const r = await load(s.durationS);
          assertHealthyRun(`detail, metrics ${mode}`, r, bodyBytes * 0.85); // bodies vary a little with the status
          runs[mode].push(r);
          if (mode === 'on' && round === s.rounds) {
            progress(`${s.scrapes} scrapes of /metrics`);
            ({ times: scrapeMs, bytes: scrapeBytes } = await timeScrapes(vop.baseUrl, s.scrapes));
          }
        } finally {
          await fleet.stop(vop);
        }
      }
    }
    return report(s, runs, scrapeMs, scrapeBytes);
  } finally {
    await fleet.stopAll();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Times `n` sequential scrapes (after a few untimed), each from the request to the last byte. */
async function timeScrapes(baseUrl: string, n: number): Promise<{ times: number[]; bytes: number }> {
  const scrape = async () => {
    const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text}`);
    return text.length;
  };
  for (let i = 0; i < 5; i++) await scrape();
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    bytes = await scrape();
    times.push(performance.now() - started);
  }
  return { times, bytes };
}

function report(s: MetricsBenchSettings, runs: Record<'off' | 'on', LoadResult[]>, scrapeMs: number[], scrapeBytes: number): Target[] {
  const targets: Target[] = [];
  const sorted = [...scrapeMs].sort((a, b) => a - b);
  const p50 = median(scrapeMs);
  const p95 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;
  const scrapeMet = p50 <= TARGETS.maxScrapeMs;
  targets.push({ what: `scrape at ${whole(s.library)} videos (median)`, text: `${ms(p50)} (target ≤ ${TARGETS.maxScrapeMs} ms)`, met: scrapeMet });
  console.log(
    `scrape: GET /metrics ${ms(p50)} median, ${ms(p95)} p95 over ${sorted.length} scrapes, ${whole(scrapeBytes)} bytes, ` +
      `${whole(s.library)} videos (target median ≤ ${TARGETS.maxScrapeMs} ms ${verdict(scrapeMet)})`,
  );

  console.log('detail call, metrics off against on (each round restarts vop on the same library):');
  console.log(`  ${'round'.padEnd(6)} ${'off req/s'.padStart(10)} ${'on req/s'.padStart(10)} ${'off µs/req'.padStart(11)} ${'on µs/req'.padStart(10)}  ${'off p99'.padStart(9)} ${'on p99'.padStart(9)}`);
  for (let i = 0; i < runs.off.length; i++) {
    const off = runs.off[i]!;
    const on = runs.on[i]!;
    console.log(
      `  ${String(i + 1).padEnd(6)} ${whole(off.reqPerSec).padStart(10)} ${whole(on.reqPerSec).padStart(10)} ` +
        `${whole(off.cpuUsPerResponse).padStart(11)} ${whole(on.cpuUsPerResponse).padStart(10)}  ${ms(off.p99Ms).padStart(9)} ${ms(on.p99Ms).padStart(9)}`,
    );
  }
  const cpu = (rs: LoadResult[]) => median(rs.map((r) => r.cpuUsPerResponse));
  const rate = (rs: LoadResult[]) => median(rs.map((r) => r.reqPerSec));
  const cpuRatio = cpu(runs.on) / cpu(runs.off);
  const rateRatio = rate(runs.on) / rate(runs.off);
  const cpuMet = cpuRatio <= TARGETS.maxCpuRatio;
  targets.push({ what: 'detail CPU per answer, metrics on/off', text: `${cpuRatio.toFixed(3)} (target ≤ ${TARGETS.maxCpuRatio.toFixed(2)})`, met: cpuMet });
  console.log(
    `  medians: ${whole(rate(runs.off))} against ${whole(rate(runs.on))} req/s (on/off ${rateRatio.toFixed(3)}), ` +
      `${whole(cpu(runs.off))} against ${whole(cpu(runs.on))} µs of server CPU per answer (on/off ${cpuRatio.toFixed(3)}, target ≤ ${TARGETS.maxCpuRatio.toFixed(2)} ${verdict(cpuMet)})`,
  );
  if (loadAverage() > os.cpus().length) {
    console.log(`note: load average ${loadAverage().toFixed(1)} on ${os.cpus().length} cores: other work shared the machine; CPU per answer is less affected than req/s`);
  }
  return targets;
}

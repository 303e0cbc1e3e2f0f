/**
 * What a player asks for, request by request (issue 14, item 3): Range requests of 1 and 64 KiB,
 * HEAD, a cover at `?t=3`, an HLS playlist and a segment, and "many viewers" (200 connections,
 * each walking an HLS rendition segment by segment), through vop, nginx and a bare Node server
 * answering the same bytes (bench/bareMediaServer.ts), each case on the three in turn.
 *
 * The load generator is autocannon in this process, on loopback: on a two-core machine it takes
 * one core and the server under test the other. Printed: requests per second, p99 latency and
 * the server's CPU time per request, each as vop's ratio to nginx and to bare Node. CPU per
 * request is the figure least moved by other work on the machine; requests per second are
 * bounded by the load generator as much as by the server when the server is fast (nginx).
 */
import fs from 'node:fs';
import path from 'node:path';
import { assertHealthyRun, ms, progress, runLoad, sleep, verdict, whole, type LoadRequest, type LoadResult, type Target } from './lib.js';

/** One request case as the three servers are asked it. */
export interface RequestCase {
  name: string;
  connections: number;
  /** What vop is asked: one request, or a walk every connection repeats. */
  vop: LoadRequest[];
  /** What nginx and bare Node are asked for the same bytes (their paths may differ: `?t=3` is vop's). */
  reference: LoadRequest[];
  head?: boolean;
  /** Body bytes of an answer (the least of the walk), to check the answers were the real ones. */
  bodyBytes: number;
  /** The targets apply to this case. */
  targeted?: boolean;
}

/** A server under test: where it answers and its process, for CPU time. */
export interface Served {
  name: string;
  baseUrl: string;
  pid: number;
}

/** Settings of the request cases. */
export interface RequestCaseSettings {
  /** Seconds of load per case and server. */
  seconds: number;
}

/** Issue 14's targets: a Range answer at a quarter of nginx's rate at least, about 0.7 of bare Node's, p99 under 10 ms. */
const MIN_NGINX_RATIO = 0.25;
const MIN_BARE_RATIO = 0.7;
const MAX_P99_MS = 10;

/** Load on each server before any case is measured, spread over the cases. */
const WARM_UP_SECONDS = 7;

/**
 * Runs every case on every server (vop first; nginx if there is one; bare Node) and prints one
 * line per case and server, then vop's ratios. Returns the targets of the targeted cases.
 */
export async function runRequestCases(cases: RequestCase[], vop: Served, others: Served[], s: RequestCaseSettings): Promise<Target[]> {
  const results = new Map<string, Map<string, LoadResult>>();
  const loadOf = (c: RequestCase, server: Served) => {
    const requests = server === vop ? c.vop : c.reference;
    return { url: server.baseUrl, connections: c.connections, head: c.head, ...(requests.length === 1 ? { next: () => requests[0]! } : { sequence: requests }) };
  };
  // A fresh process compiles its hot paths during its first thousands of requests: without this,
  // the first case measured vop at two to five times its CPU per request of the cases after it.
  for (const server of [vop, ...others]) {
    progress(`${server.name}: warm-up, ${WARM_UP_SECONDS} s of every case`);
    for (const c of cases) await runLoad({ ...loadOf(c, server), durationS: WARM_UP_SECONDS / cases.length });
  }
  for (const c of cases) {
    const row = new Map<string, LoadResult>();
    for (const server of [vop, ...others]) {
      const load = loadOf(c, server);
      progress(`${c.name}: ${server.name}, warm-up then ${s.seconds} s at ${c.connections} connections`);
      await runLoad({ ...load, durationS: 1 });
      await sleep(200); // the warm-up's connections gone, so that the run's own stay under vop's per-address cap
      const r = await runLoad({ ...load, durationS: s.seconds, serverPid: server.pid });
      assertHealthyRun(`${c.name} on ${server.name}`, r, c.bodyBytes);
      row.set(server.name, r);
    }
    results.set(c.name, row);
  }

  const line = (r: LoadResult) => `${whole(r.reqPerSec).padStart(7)} req/s  p99 ${ms(r.p99Ms).padStart(7)}  ${r.cpuUsPerResponse.toFixed(0).padStart(5)} µs CPU/req`;
  console.log(`  requests (autocannon on loopback, ${s.seconds} s per case and server):`);
  for (const c of cases) {
    const row = results.get(c.name)!;
    console.log(`  ${c.name} (${c.connections} connections)`);
    for (const [name, r] of row) console.log(`    ${name.padEnd(6)} ${line(r)}`);
    const v = row.get(vop.name)!;
    for (const o of others) {
      const r = row.get(o.name)!;
      console.log(
        `    vop / ${o.name.padEnd(5)} req/s ${(v.reqPerSec / r.reqPerSec).toFixed(2)}, p99 ${(v.p99Ms / Math.max(r.p99Ms, 1)).toFixed(2)}, CPU per request ${(v.cpuUsPerResponse / r.cpuUsPerResponse).toFixed(2)}`,
      );
    }
  }

  const targets: Target[] = [];
  for (const c of cases.filter((x) => x.targeted)) {
    const row = results.get(c.name)!;
    const v = row.get(vop.name)!;
    const nginx = row.get('nginx');
    const bare = row.get('bare');
    if (nginx) {
      const ratio = v.reqPerSec / nginx.reqPerSec;
      targets.push({ what: `${c.name} vop/nginx req/s`, text: `${ratio.toFixed(2)} (≥ ${MIN_NGINX_RATIO.toFixed(2)})`, met: ratio >= MIN_NGINX_RATIO });
    }
    if (bare) {
      const ratio = v.reqPerSec / bare.reqPerSec;
      targets.push({ what: `${c.name} vop/bare req/s`, text: `${ratio.toFixed(2)} (≥ ${MIN_BARE_RATIO.toFixed(2)})`, met: ratio >= MIN_BARE_RATIO });
    }
    targets.push({ what: `${c.name} vop p99`, text: `${ms(v.p99Ms)} (< ${MAX_P99_MS} ms)`, met: v.p99Ms < MAX_P99_MS });
  }
  for (const t of targets) console.log(`  ${verdict(t.met)}  ${t.what} ${t.text}`);
  return targets;
}

/**
 * Fetches each of `paths` from vop (`from`) and writes its bytes under `docroot` at `to(path)`:
 * the folder nginx and bare Node serve, so that all three send the very same bytes.
 */
export async function mirrorFromVop(vopBaseUrl: string, docroot: string, files: Array<{ from: string; to: string }>): Promise<void> {
  for (const f of files) {
    const r = await fetch(`${vopBaseUrl}${f.from}`);
    if (r.status !== 200) throw new Error(`vop answered ${r.status} for ${f.from}`);
    const dest = path.join(docroot, f.to);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, Buffer.from(await r.arrayBuffer()));
  }
}

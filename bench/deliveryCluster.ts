/**
 * The delivery bench's cluster part (issue 14, item 4): the same video served by an API node of a
 * cluster, a real `--role api` process with its metadata in PostgreSQL and its media in S3 on a
 * Ceph RGW, both the throwaway ones the tests start (test/helpers/), on loopback, as
 * bench/clusterBench.ts starts them. The node streams each answer from the bucket (stat, then the
 * object's stream) after checking the video in the database.
 *
 * The video is written into the database and the bucket through vop's own stores, the same bytes
 * as the embedded vop's (bench/deliveryVideo.ts), rather than uploaded and transcoded: a transcode
 * makes files of other sizes than the embedded vop's seeded ones, and the rows are only comparable
 * on the same bytes. So no worker runs: delivery never reaches one.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { missingCephBinaries, startCeph, type TestCeph } from '../test/helpers/ceph.js';
import { postgresBinDir, startPostgres } from '../test/helpers/postgres.js';
import type { Served } from './deliveryRequests.js';
import { seedVideo, type SeededVideo, type VideoContent } from './deliveryVideo.js';
import { VOP_SERVER, progress, type ServerFleet } from './lib.js';

/** The cluster serving the video, until {@link DeliveryCluster.stop}. */
export interface DeliveryCluster {
  /** The API node, named `cluster`; its backends are PostgreSQL's processes and Ceph's daemons. */
  served: Served;
  video: SeededVideo;
  /** Stops the node, Ceph and PostgreSQL. */
  stop(): Promise<void>;
}

/** Why the cluster part cannot run on this machine (binaries missing), or undefined if it can. */
export function clusterUnavailable(): string | undefined {
  const missing = [...(postgresBinDir() ? [] : ['initdb and pg_ctl']), ...missingCephBinaries()];
  return missing.length > 0 ? `${missing.join(', ')} not installed (apt-get install -y postgresql ceph-mon ceph-osd radosgw)` : undefined;
}

/** The Ceph daemons test/helpers/ceph.ts starts, by the names of their pid files. */
const CEPH_DAEMONS = ['mon.a', 'osd.0', 'client.rgw'];

/** Starts PostgreSQL and Ceph, seeds the video into them and starts an API node in `fleet`. */
export async function startDeliveryCluster(work: string, content: VideoContent, fleet: ServerFleet, adminToken: string): Promise<DeliveryCluster> {
  progress('cluster: a throwaway PostgreSQL and Ceph RGW on loopback, the video written into them, then an API node');
  const pg = await startPostgres();
  let ceph: TestCeph | undefined;
  try {
    ceph = await startCeph();
    const database = `bench_delivery_${process.pid}`;
    await pg.createDatabase(database);
    const databaseUrl = pg.url(database);
    const objectStorage = {
      endpoint: ceph.endpoint,
      bucket: `vop-bench-${crypto.randomBytes(4).toString('hex')}`,
      accessKeyId: ceph.accessKeyId,
      secretAccessKey: ceph.secretAccessKey,
      forcePathStyle: true,
    };
    const video = await seedVideo({ dataDir: path.join(work, 'cluster-seed'), adminToken, databaseUrl, objectStorage }, content, 0);
    const node = await fleet.start({
      name: 'vop (cluster api)',
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', path.join(work, 'cluster-api'), '--role', 'api'],
      env: {
        VOP_ADMIN_TOKEN: adminToken,
        VOP_DATABASE_URL: databaseUrl,
        VOP_S3_ENDPOINT: objectStorage.endpoint,
        VOP_S3_BUCKET: objectStorage.bucket,
        VOP_S3_ACCESS_KEY_ID: objectStorage.accessKeyId,
        VOP_S3_SECRET_ACCESS_KEY: objectStorage.secretAccessKey,
        VOP_S3_FORCE_PATH_STYLE: '1',
      },
      listening: /vop listening on (http:\/\/\S+)/,
    });
    const postmaster = postmasterPid(pg.port);
    if (postmaster === undefined) progress(`cluster: PostgreSQL's process on port ${pg.port} not found; its CPU is left out`);
    const cephDir = ceph.dir;
    const cephPids = () => CEPH_DAEMONS.map((d) => Number(readOr(path.join(cephDir, 'run', `${d}.pid`), ''))).filter((pid) => pid > 0);
    const started = ceph;
    return {
      served: { name: 'cluster', baseUrl: node.baseUrl, pid: node.pid, backends: () => [...cephPids(), ...(postmaster !== undefined ? processTree(postmaster) : [])] },
      video,
      async stop() {
        await fleet.stop(node);
        await started.stop();
        pg.stop();
      },
    };
  } catch (err) {
    await ceph?.stop();
    pg.stop();
    throw err;
  }
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return fallback;
  }
}

/** The PostgreSQL server listening on `port`: the process started with `-p <port>` (pg_ctl's `-o`). */
function postmasterPid(port: number): number | undefined {
  for (const pid of allPids()) {
    const args = readOr(`/proc/${pid}/cmdline`, '').split('\0');
    const p = args.indexOf('-p');
    if (p >= 0 && args[p + 1] === String(port) && path.basename(args[0]!) === 'postgres') return pid;
  }
  return undefined;
}

/** `root` and every process below it (PostgreSQL's backends, one per connection, and its helpers). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const stat = readOr(`/proc/${pid}/stat`, '');
    // The parent is the second field after the command name, which may hold spaces.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid > 0) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

function allPids(): number[] {
  return fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
}

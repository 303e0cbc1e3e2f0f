/**
 * `npm run vop -- backup | verify | restore` (docs/backup.md).
 *
 * backup: through the server that holds the data folder (it holds the folder's lock: no second
 * process may open the database), found from `<dataDir>/vop.address` or --server; when none
 * does, the command opens the folder itself. The file is written as `<out>.partial` and renamed
 * once whole and on disk, then verified; `--out -` writes to standard output.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { readSealKey, resealWithKey } from './backup/backupSeal.js';
import { RestoreRefusedError, restoreIntoDataDir } from './backup/restoreBackup.js';
import { verifyBackup } from './backup/verifyBackup.js';
import { MEDIA_CHOICES, writeBackup, type BackupManifest } from './backup/writeBackup.js';
import type { MediaChoice } from './backup/backupViews.js';
import { VOP_VERSION } from './core/version.js';
import { lockHolder } from './storage/dataDirLock.js';
import { fsyncFile } from './storage/fsync.js';
import { LocalMediaRoot } from './storage/media/localMediaRoot.js';
import { LocalObjectMediaStore } from './storage/media/localObjectMediaStore.js';
import { runningServerUrl } from './storage/serverAddress.js';
import { databaseAddress } from './storage/postgres/postgresDatabase.js';
import { openSqlJsStores } from './storage/sqljs/openSqlJsStores.js';
import { parseStartArgs } from './startArgs.js';

export const BACKUP_USAGE = `backup --out <file|-> [--data-dir <dir>] [--with-media | --no-media | --media include|list|none]
                                a backup of the data folder, through its server if one is running
  verify --in <file>            check every checksum of a backup and its database's integrity
  restore --in <file> --data-dir <new-dir>
                                restore a backup into a new or empty folder
  (each takes --seal-key-file <file>: seal with that key, or require a seal made with it)
  restore --in <file> --database-url <postgres://…> [--config <file>] [--data-dir <new-dir>]
                                restore a cluster's backup into an empty database (and its media
                                into the empty bucket that --config or the VOP_S3_* variables name)`;

export const BACKUP_COMMANDS = ['backup', 'verify', 'restore'];

export interface BackupCommandIo {
  /** Where `--out -` writes. */
  stdout: Writable;
  /** Progress and messages. */
  say: (line: string) => void;
}

/** Runs one of the backup commands; resolves with the exit code. */
export async function runBackupCommand(argv: string[], env: NodeJS.ProcessEnv, io: BackupCommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        out: { type: 'string' },
        in: { type: 'string' },
        'data-dir': { type: 'string' },
        media: { type: 'string' },
        'with-media': { type: 'boolean' },
        'no-media': { type: 'boolean' },
        server: { type: 'string' },
        'admin-token': { type: 'string' },
        'database-url': { type: 'string' },
        config: { type: 'string' },
        'seal-key-file': { type: 'string' },
      },
    });
  } catch (err) {
    io.say(`${(err as Error).message}\n\nUsage: npm run vop -- ${BACKUP_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command] = positionals;
  const usage = (why: string) => {
    io.say(`${why}\n\nUsage: npm run vop -- ${BACKUP_USAGE}`);
    return 2;
  };
  try {
    const sealKeyFile = values['seal-key-file'];
    const sealKey = sealKeyFile !== undefined ? readSealKey(sealKeyFile) : undefined;
    if (command === 'verify') {
      if (!values.in) return usage('verify needs --in <file>');
      return await verify(values.in, sealKeyFile, sealKey, io);
    }
    if (command === 'restore' && values['database-url'] !== undefined) {
      if (!values.in) return usage('restore needs --in <file>');
      return await restoreCluster({ file: values.in, databaseUrl: values['database-url'], config: values.config, dataDir: values['data-dir'], sealKey }, env, io);
    }
    if (command === 'restore') {
      if (!values.in || !values['data-dir']) return usage('restore needs --in <file> and --data-dir <new folder> (or --database-url <postgres://…> for a cluster)');
      const result = await restoreIntoDataDir(values.in, values['data-dir'], { progress: io.say, sealKey });
      const c = result.manifest.counts;
      io.say(
        `Restored ${values.in} into ${path.resolve(values['data-dir'])}: ${c.apps} applications, ${c.videos} videos, ${c.callbackDeliveries} callback records, ` +
          `${result.files} files (${result.bytes} bytes). Start it with: npm start -- --data-dir ${values['data-dir']}`,
      );
      return 0;
    }
    if (command === 'backup') {
      if (!values.out) return usage('backup needs --out <file> (or --out - for standard output)');
      const chosen = [values['with-media'] && 'include', values['no-media'] && 'none', values.media].filter(Boolean) as string[];
      if (chosen.length > 1) return usage('give one of --with-media, --no-media and --media');
      if (chosen[0] !== undefined && !(MEDIA_CHOICES as readonly string[]).includes(chosen[0])) return usage(`--media must be one of ${MEDIA_CHOICES.join(', ')}`);
      return await backup(
        { out: values.out, dataDir: values['data-dir'] ?? env.VOP_DATA_DIR ?? './data', media: chosen[0] as MediaChoice | undefined, server: values.server ?? env.VOP_SERVER, adminToken: values['admin-token'] ?? env.VOP_ADMIN_TOKEN, sealKey },
        io,
      );
    }
  } catch (err) {
    io.say(err instanceof RestoreRefusedError ? err.message : `Failed: ${(err as Error).message}`);
    return 1;
  }
  return usage(`unknown command "${positionals.join(' ')}"`);
}

/**
 * A cluster's restore. The database is named on the command line only (a restore writes into it:
 * never one picked up from VOP_DATABASE_URL); the bucket comes from --config or the VOP_S3_*
 * variables, read as `npm start` reads them.
 */
async function restoreCluster(args: { file: string; databaseUrl: string; config?: string; dataDir?: string; sealKey?: Buffer }, env: NodeJS.ProcessEnv, io: BackupCommandIo): Promise<number> {
  const start = parseStartArgs([...(args.config !== undefined ? ['--config', args.config] : []), '--database-url', args.databaseUrl], env);
  const objectStorage = start.options.objectStorage;
  // Loaded here: PostgreSQL's client and the S3 SDK are the cluster's, not every command's.
  const { restoreIntoCluster } = await import('./backup/restoreCluster.js');
  const result = await restoreIntoCluster(args.file, { databaseUrl: args.databaseUrl, objectStorage, dataDir: args.dataDir }, { progress: io.say, sealKey: args.sealKey });
  const c = result.manifest.counts;
  const lines = [
    `Restored ${args.file} into the database at ${databaseAddress(args.databaseUrl)}: ${c.apps} applications, ${c.videos} videos, ${c.callbackDeliveries} callback records (${result.rows} rows).`,
  ];
  if (result.manifest.media === 'include') lines.push(`Media: ${result.objects} objects (${result.bytes} bytes) put into the bucket ${objectStorage!.bucket}.`);
  if (result.manifest.media === 'list') {
    lines.push(`Media: this backup lists the bucket's ${c.mediaObjects} objects (${c.mediaBytes} bytes) but does not hold them: they must come from the bucket's own copy.`);
    if (!result.missingMedia) lines.push('No bucket was named (--config or VOP_S3_*), so nothing was checked against one.');
    else if (result.missingMedia.count === 0) lines.push(`The bucket ${objectStorage!.bucket} holds every listed object.`);
    else lines.push(`WARNING: the bucket ${objectStorage!.bucket} lacks ${result.missingMedia.count} listed object(s) (or holds them with another size): ${result.missingMedia.keys.join(', ')}${result.missingMedia.count > result.missingMedia.keys.length ? ', …' : ''}`);
  }
  if (result.manifest.media === 'none') lines.push('Media: this backup holds none and lists none; the bucket was not looked at.');
  lines.push(
    result.settingsFiles.length > 0
      ? `Settings files written into ${path.resolve(args.dataDir!)}: ${result.settingsFiles.join(', ')}.`
      : 'The node\'s settings files of the backup (settings/ in the archive: its admin token) were not written: pass --data-dir <new folder> for them.',
  );
  lines.push(`Start a node on it: npm start -- --database-url <the same URL>${objectStorage ? ' with the same bucket' : ''}.`);
  io.say(lines.join('\n'));
  return 0;
}

async function verify(file: string, keyFile: string | undefined, sealKey: Buffer | undefined, io: BackupCommandIo): Promise<number> {
  if (!fs.existsSync(file)) {
    io.say(`${file}: no such file`);
    return 1;
  }
  const result = await verifyBackup(file, { sealKey });
  if (result.problems.length > 0) {
    io.say(`${file} is NOT sound:\n  ${result.problems.join('\n  ')}`);
    return 1;
  }
  io.say(describe(file, result.bytes, result.manifest as BackupManifest, `verified: every checksum matches and the database is sound; ${sealSaid(result.seal, keyFile)}`));
  return 0;
}

/** What the seal proves, in the words of the summary line. */
function sealSaid(seal: 'plain' | 'keyed' | undefined, keyFile: string | undefined): string {
  if (seal === 'keyed' && keyFile !== undefined) return `its keyed seal was made with the key in ${keyFile}`;
  if (seal === 'keyed') return 'it carries a keyed seal, not checked (give --seal-key-file to check who made it)';
  return 'its seal is plain: it proves the file is whole, not who made it';
}

function describe(file: string, bytes: number, m: BackupManifest, verdict: string): string {
  const c = m.counts;
  return (
    `${file}: ${verdict}. Made ${m.createdAt} by vop ${m.vopVersion} (${m.mode}); ${bytes} bytes; ` +
    `${c.apps} applications, ${c.videos} videos, ${c.callbackDeliveries} callback records; media: ${m.media} (${c.mediaObjects} objects, ${c.mediaBytes} bytes` +
    `${c.mediaMissing ? `, ${c.mediaMissing} deleted while the backup ran` : ''}).`
  );
}

interface BackupArgs {
  out: string;
  dataDir: string;
  media?: MediaChoice;
  server?: string;
  adminToken?: string;
  /** Seal with a keyed seal under this key. */
  sealKey?: Buffer;
}

async function backup(args: BackupArgs, io: BackupCommandIo): Promise<number> {
  const toStdout = args.out === '-';
  const target = toStdout ? undefined : path.resolve(args.out);
  if (target && fs.existsSync(target)) {
    io.say(`${target} exists: choose another name (a backup never overwrites a file).`);
    return 1;
  }
  const partial = target && `${target}.partial`;
  const server = args.server ?? runningServerUrl(args.dataDir);
  let out: Writable;
  if (partial) {
    fs.rmSync(partial, { force: true }); // a backup cut off before: never taken for a whole one
    out = fs.createWriteStream(partial, { flags: 'wx', mode: 0o600 });
  } else {
    out = io.stdout;
  }
  try {
    if (server) {
      await throughServer(server, args, out);
    } else {
      const holder = lockHolder(args.dataDir);
      if (holder) throw new Error(`${path.resolve(args.dataDir)} is in use by process ${holder.pid}, which left no address: pass --server <its URL>.`);
      if (!fs.existsSync(path.join(args.dataDir, 'vop.db'))) throw new Error(`${path.resolve(args.dataDir)} holds no vop database (no vop.db): is --data-dir right? (A cluster is backed up through one of its nodes: --server <its URL>.)`);
      const stores = await openSqlJsStores({ dir: args.dataDir });
      try {
        const objects = new LocalObjectMediaStore(new LocalMediaRoot(args.dataDir));
        await writeBackup(out, { stores, objects, dataDir: args.dataDir, mode: 'embedded', vopVersion: VOP_VERSION }, { media: args.media ?? 'include', sealKey: args.sealKey });
      } finally {
        await stores.close();
      }
    }
    if (!partial || !target) return 0;
    await fsyncFile(partial);
    fs.renameSync(partial, target);
  } catch (err) {
    if (partial) fs.rmSync(partial, { force: true });
    throw err;
  }
  const checked = await verifyBackup(target, { sealKey: args.sealKey });
  if (checked.problems.length > 0) {
    io.say(`${target} was written but does NOT verify:\n  ${checked.problems.join('\n  ')}`);
    return 1;
  }
  const sealed = checked.seal === 'keyed' && args.sealKey ? ', with a keyed seal' : '';
  io.say(describe(target, checked.bytes, checked.manifest as BackupManifest, `written${server ? ` by the server at ${server}` : ''}${sealed} and verified`));
  return 0;
}


async function throughServer(server: string, args: BackupArgs, out: Writable): Promise<void> {
  let token = args.adminToken;
  if (!token) {
    const file = path.join(args.dataDir, 'admin-token');
    try {
      token = fs.readFileSync(file, 'utf8').trim();
    } catch {
      throw new Error(`No admin token for the server at ${server}: pass --admin-token, set VOP_ADMIN_TOKEN, or point --data-dir at its data folder (looked in ${file}).`);
    }
  }
  const url = `${server.replace(/\/+$/, '')}/admin/api/backup${args.media ? `?media=${args.media}` : ''}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    throw new Error(`Cannot reach vop at ${server}: ${(err as Error).message}`);
  }
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => '');
    throw new Error(`The server at ${server} refused the backup (HTTP ${res.status}): ${text.slice(0, 500)}`);
  }
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
  // The server seals with its own key, if it has one; the key given here reseals what it sent.
  if (args.sealKey) await pipeline(body, resealWithKey(args.sealKey), out);
  else await pipeline(body, out);
}

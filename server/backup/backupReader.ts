/**
 * Reads a backup archive (backupArchive.ts) and checks every byte of it: the parts against the
 * manifest's checksums, and everything before the seal against the seal. Verify and restore both
 * read through here; restore twice (a whole check before it writes anything, then the writing
 * pass, checked again in case the file changed in between).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { PassThrough, Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { Pacer } from './pacer.js';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, MANIFEST_NAME, type ManifestBase, type PartRecord } from './backupArchive.js';
import { BodyHasher, checkTail, TAIL_BYTES } from './backupSeal.js';

/** What a read found: `problems` is empty when every check passed. */
export interface BackupReadResult<M> {
  problems: string[];
  /** The manifest, when it could be read (it may still disagree with the parts). */
  manifest?: M & ManifestBase;
  bytes: number;
  /** The seal found at the end: plain, or keyed (checked against the key when one was given). */
  seal?: 'plain' | 'keyed';
}

export interface ReadBackupOptions {
  /**
   * Called with each part as it is read (never the manifest): consume `stream` to the end (or the
   * read stalls). A rejection ends the read with that error.
   */
  onPart?: (part: { name: string; size: number }, stream: Readable) => Promise<void>;
  /** The part of the thread the read's hashing may take (a serving server's check; see pacer.ts). */
  threadShare?: number;
  /**
   * The seal key (backupSeal.ts): the file must carry a keyed seal made with it. Without one, a
   * keyed seal's SHA-256 is checked and its HMAC is not.
   */
  sealKey?: Buffer;
}

/** Reads `file` through, checking it whole; never throws for a damaged file, only for an unreadable one. */
export async function readBackup<M extends object>(file: string, options: ReadBackupOptions = {}): Promise<BackupReadResult<M>> {
  const problems: string[] = [];
  const bytes = (await fs.promises.stat(file)).size;
  if (bytes < TAIL_BYTES + 512 || bytes % 512 !== 0) {
    return { problems: [`${file} is not a whole backup (${bytes} bytes): it was cut off, or is not a vop backup`], bytes };
  }
  const bodyEnd = bytes - TAIL_BYTES;
  const pacer = new Pacer(options.threadShare);
  const whole = new BodyHasher(options.sealKey);
  const seen: PartRecord[] = [];
  let manifestText: string | undefined;
  /**
   * Each entry's handling, to the end: the extract can finish while the last entry's consumer is
   * still resting (a paced read, pacer.ts), and the manifest, the last entry, was then missed.
   */
  const entriesHandled: Array<Promise<void>> = [];
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const name = header.name;
    const size = header.size ?? 0;
    const chunks: Buffer[] = [];
    const partHash = crypto.createHash('sha256');
    let got = 0;
    const hashing = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        got += chunk.length;
        pacer.time(() => partHash.update(chunk));
        if (name === MANIFEST_NAME) chunks.push(chunk);
        pacer.rest().then(() => cb(null, chunk));
      },
    });
    // A consumer that gives up before the end must not leave the entry's stream waiting on it.
    const consumer = (name !== MANIFEST_NAME && options.onPart ? options.onPart({ name, size }, hashing) : drain(hashing)).catch((err: unknown) => {
      hashing.destroy(err as Error);
      throw err;
    });
    const copied = pipeline(stream as unknown as Readable, hashing as unknown as Writable).catch(() => undefined); // the consumer's promise reports it
    const handled = Promise.all([copied, consumer])
      .then(() => {
        if (name === MANIFEST_NAME) manifestText = Buffer.concat(chunks).toString('utf8');
        else seen.push({ name, size: got, sha256: partHash.digest('hex') });
        next();
      }, (err: unknown) => {
        // The consumer's own failure (a restore's write), never to be taken for a damaged file.
        const failure = err instanceof Error ? err : new Error(String(err));
        next(Object.assign(failure, { fromConsumer: true }));
      });
    entriesHandled.push(handled);
  });
  const body = fs.createReadStream(file, { start: 0, end: bodyEnd - 1, highWaterMark: 1 << 20 });
  const hashingBody = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      pacer.time(() => whole.update(chunk));
      pacer.rest().then(() => cb(null, chunk));
    },
  });
  try {
    await pipeline(body, hashingBody, extract as unknown as Writable);
    await Promise.all(entriesHandled);
  } catch (err) {
    const message = (err as Error).message;
    // tar-stream's own words for a damaged header or a file cut mid-part; a consumer's error is not the file's.
    if (/tar|Unexpected end|Invalid/i.test(message) && !(err as { fromConsumer?: boolean }).fromConsumer) {
      problems.push(`${file} is damaged: ${message.replace(/ Maybe the tar.*$/, '')}`);
      return { problems, bytes };
    }
    throw err;
  }
  const tail = Buffer.alloc(TAIL_BYTES);
  const fh = await fs.promises.open(file, 'r');
  try {
    await fh.read(tail, 0, TAIL_BYTES, bodyEnd);
  } finally {
    await fh.close();
  }
  const tailCheck = await checkTail(tail, whole.digests());
  if (tailCheck.problem) problems.push(`${file}: ${tailCheck.problem}`);
  else if (options.sealKey && tailCheck.seal === 'plain') {
    problems.push(`${file} carries no keyed seal, only a plain one, which anyone can make: nothing proves it was made with this seal key`);
  }

  let manifest: (M & ManifestBase) | undefined;
  if (manifestText === undefined) {
    problems.push(`${file} has no ${MANIFEST_NAME}: it was cut off, or is not a vop backup`);
  } else {
    try {
      manifest = JSON.parse(manifestText) as M & ManifestBase;
    } catch {
      problems.push(`${file}: its ${MANIFEST_NAME} is not readable JSON (the file is damaged)`);
    }
  }
  if (manifest) {
    if (manifest.format !== BACKUP_FORMAT) problems.push(`${file} is not a vop backup (format ${JSON.stringify(manifest.format)})`);
    else if (manifest.formatVersion > BACKUP_FORMAT_VERSION) problems.push(`${file} is a backup of format ${manifest.formatVersion}, newer than this vop reads (${BACKUP_FORMAT_VERSION}): use a newer vop`);
    problems.push(...compareParts(manifest.parts ?? [], seen));
  }
  return { problems, manifest, bytes, ...(tailCheck.seal ? { seal: tailCheck.seal } : {}) };
}

/** Differences between the parts the manifest lists and those found, in order. */
function compareParts(listed: PartRecord[], found: PartRecord[]): string[] {
  const problems: string[] = [];
  const n = Math.max(listed.length, found.length);
  for (let i = 0; i < n; i++) {
    const l = listed[i];
    const f = found[i];
    if (!l) problems.push(`part ${f!.name} is not in the manifest`);
    else if (!f) problems.push(`part ${l.name} is missing`);
    else if (l.name !== f.name) problems.push(`part ${i + 1} is ${f.name}, the manifest lists ${l.name}`);
    else if (l.size !== f.size) problems.push(`part ${l.name} has ${f.size} bytes, the manifest says ${l.size}`);
    else if (l.sha256 !== f.sha256) problems.push(`part ${l.name} does not match its checksum (it is damaged)`);
    if (problems.length >= 20) {
      problems.push('(more differences not listed)');
      break;
    }
  }
  return problems;
}

/** Reads a stream to its end, keeping nothing. */
async function drain(stream: Readable): Promise<void> {
  await pipeline(stream, new PassThrough().resume() as unknown as Writable);
}

/** Collects a part's bytes (for a part that is checked or written whole, such as the database). */
export async function collect(stream: Readable, size: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (at + chunk.length > size) throw new Error(`a part gave more than its ${size} bytes`);
    chunk.copy(out, at);
    at += chunk.length;
  }
  return at === size ? out : out.subarray(0, at);
}

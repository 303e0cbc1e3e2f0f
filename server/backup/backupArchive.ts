/**
 * The backup file: a POSIX tar archive (so `tar tf` and `tar xf` read it too) of named parts,
 * then `manifest.json` (what the parts are, with a SHA-256 of each), then a seal: a last entry
 * holding the SHA-256 of every byte of the file before it, and with a seal key an HMAC of them
 * too (backupSeal.ts).
 *
 * Why a seal as well as the parts' checksums: tar leaves bytes that no part covers (the padding
 * after each part, the header's checksum field, whose terminator tar readers do not read), and a
 * flipped byte there must be found too. With the seal every byte before it is covered, and the
 * seal entry and the two zero blocks after it are checked byte for byte against what this writer
 * makes (backupSeal.ts, checkTail). A copy cut off anywhere lacks the seal, so nothing cut short verifies.
 */
import crypto from 'node:crypto';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { BLOCK, BodyHasher, sealEntry } from './backupSeal.js';
import { Pacer } from './pacer.js';

/** What `manifest.json` says the file is. */
export const BACKUP_FORMAT = 'vop-backup';
/** Bumped when a reader of the old format could not read the new one. */
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_NAME = 'manifest.json';
/** Longest entry name written as is; a longer media key is stored under a digest (see entryName). */
const MAX_PLAIN_NAME = 100;
/**
 * A part held in memory and larger than this goes into the archive in slices of this size, as a
 * stream does. Why: its bytes are hashed twice (the part's checksum, the seal), and a server
 * serving while it backs up must not stop for that. Whole, the 117 MB database of a
 * 100,000-video library held the event loop for 300 ms per backup (SHA-256 at about 800 MB/s,
 * twice); a slice costs under 1 ms, and requests are answered between slices (see slices()).
 */
const SLICE_BYTES = 256 << 10;

/** One part as the manifest records it. */
export interface PartRecord {
  /** Its entry name in the archive. */
  name: string;
  size: number;
  sha256: string;
  /** A media part: the object key it restores to (the name is `media/<key>` when that fits). */
  key?: string;
}

/** A part to write: its bytes in memory, or a stream of exactly `size` bytes. */
export type PartSource = { name: string; key?: string; data: Uint8Array } | { name: string; key?: string; size: number; stream: Readable };

/** The name a part is stored under: long media keys would need a pax header, which this format does not use. */
export function entryName(prefix: string, key: string): string {
  const plain = `${prefix}${key}`;
  return Buffer.byteLength(plain) <= MAX_PLAIN_NAME ? plain : `${prefix}by-digest/${crypto.createHash('sha256').update(key).digest('hex')}`;
}

/**
 * Writes one backup archive to `out`: add the parts in order, then finish with the manifest's
 * fields. A failure of the output or of a part's source rejects add()/finish() and ends the
 * archive without its seal, so the bytes written are never taken for a whole backup.
 */
export class BackupWriter {
  private readonly pack = tar.pack();
  private readonly hash: BodyHasher;
  private written = 0;
  /** Bytes the entries added so far make, headers and padding included. */
  private expected = 0;
  private waiter: { at: number; resolve: () => void } | undefined;
  private readonly parts: PartRecord[] = [];
  private readonly done: Promise<void>;
  private failure: unknown;
  private readonly mtime = new Date();
  private readonly pacer: Pacer;

  /**
   * `options.threadShare`: the part of the thread the archive's hashing may take (a serving
   * server's backup; see pacer.ts). `options.sealKey`: seal with a keyed seal (backupSeal.ts).
   */
  constructor(out: Writable, options: { threadShare?: number; sealKey?: Buffer } = {}) {
    this.pacer = new Pacer(options.threadShare);
    this.hash = new BodyHasher(options.sealKey);
    const counter = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        this.pacer.time(() => this.hash.update(chunk));
        this.written += chunk.length;
        if (this.waiter && this.written >= this.waiter.at) {
          const w = this.waiter;
          this.waiter = undefined;
          w.resolve();
        }
        this.pacer.rest().then(() => cb(null, chunk));
      },
    });
    this.done = pipeline(this.pack as unknown as Readable, counter, out);
    this.done.catch((err) => {
      this.failure ??= err;
      this.waiter?.resolve();
    });
  }

  /** Adds a part; resolves with its record once its bytes are in the archive. */
  async add(part: PartSource): Promise<PartRecord> {
    this.throwIfFailed();
    const size = 'data' in part ? part.data.length : part.size;
    const source = 'data' in part ? (part.data.length > SLICE_BYTES ? Readable.from(slices(part.data), { highWaterMark: 1 }) : part.data) : part.stream;
    const record = await this.entry(part.name, size, source);
    if (part.key !== undefined) record.key = part.key;
    this.parts.push(record);
    return record;
  }

  /** The records of the parts added so far. */
  records(): readonly PartRecord[] {
    return this.parts;
  }

  /**
   * Writes the manifest (the given fields, the format and the parts' records) and the seal, and
   * waits for the output to take the last byte. Resolves with the archive's length and the manifest.
   */
  async finish<M extends object>(fields: M): Promise<{ bytes: number; manifest: M & ManifestBase }> {
    this.throwIfFailed();
    const manifest = { format: BACKUP_FORMAT, formatVersion: BACKUP_FORMAT_VERSION, ...fields, parts: this.parts } as M & ManifestBase;
    await this.entry(MANIFEST_NAME, -1, Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`));
    // Everything before the seal has gone through the hash once the output took `expected` bytes.
    await new Promise<void>((resolve) => {
      if (this.written >= this.expected || this.failure) resolve();
      else this.waiter = { at: this.expected, resolve };
    });
    this.throwIfFailed();
    const seal = sealEntry(this.hash.digests());
    this.pack.entry(seal.header, seal.content);
    this.pack.finalize();
    await this.done;
    return { bytes: this.written, manifest };
  }

  /** Ends the archive unfinished (no manifest, no seal) and frees the output. */
  abort(err: Error): void {
    this.failure ??= err;
    this.pack.destroy(err);
  }

  private entry(name: string, size: number, source: Uint8Array | Readable): Promise<PartRecord> {
    const partHash = crypto.createHash('sha256');
    return new Promise<PartRecord>((resolve, reject) => {
      const header = { name, size: source instanceof Uint8Array ? source.length : size, mode: 0o600, mtime: this.mtime, type: 'file' as const };
      if (Buffer.byteLength(name) > MAX_PLAIN_NAME) return reject(new Error(`Backup entry name too long: ${name}`));
      this.expected += BLOCK + Math.ceil(header.size / BLOCK) * BLOCK;
      if (source instanceof Uint8Array) {
        partHash.update(source);
        this.pack.entry(header, Buffer.from(source.buffer, source.byteOffset, source.length), (err) => {
          if (err) reject(err);
          else resolve({ name, size: header.size, sha256: partHash.digest('hex') });
        });
        return;
      }
      let seen = 0;
      const sink = this.pack.entry(header, (err) => {
        if (err) return reject(err);
        if (seen !== header.size) return reject(new Error(`${name} gave ${seen} bytes, not the ${header.size} it was listed with`));
        resolve({ name, size: header.size, sha256: partHash.digest('hex') });
      });
      const pacer = this.pacer;
      const hashing = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          seen += chunk.length;
          pacer.time(() => partHash.update(chunk));
          pacer.rest().then(() => cb(null, chunk));
        },
      });
      pipeline(source, hashing, sink as unknown as Writable).catch((err) => {
        this.abort(err as Error);
        reject(err);
      });
    });
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }
}

/**
 * `data` as views of {@link SLICE_BYTES} each (no copy), one per turn of the event loop: the
 * requests that arrived meanwhile are answered before the next slice is hashed. Without the turn,
 * the slices flowed on for as long as the output took them (a socket on loopback takes many), and
 * the backup still held the loop for tens of milliseconds at a time.
 */
async function* slices(data: Uint8Array): AsyncGenerator<Buffer> {
  for (let at = 0; at < data.length; at += SLICE_BYTES) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve));
    yield Buffer.from(data.buffer, data.byteOffset + at, Math.min(SLICE_BYTES, data.length - at));
  }
}

/** What every manifest holds, whatever else it says. */
export interface ManifestBase {
  format: typeof BACKUP_FORMAT;
  formatVersion: number;
  parts: PartRecord[];
}

/**
 * The seal at the end of a backup (backupArchive.ts): the last entry, then tar's two zero blocks.
 *
 * - The plain seal (`vop-backup.seal`) holds the SHA-256 of every byte before it. It proves the
 *   file is whole and unchanged since it was sealed, not who sealed it: anyone can recompute it.
 * - The keyed seal (`vop-backup.keyed-seal`) holds the same SHA-256 and then an HMAC-SHA256 of
 *   the same bytes under a key the admin keeps (`--seal-key-file`, `backups.sealKeyFile`). Only a
 *   holder of the key can make it, so a backup checked with the key comes from an installation
 *   that holds it. Without the key, its SHA-256 half is checked as a plain seal's is.
 *
 * Both are written with fixed fields (no time, no owner), so a reader checks the whole tail byte
 * for byte against what this module makes for the digests it computed.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Transform } from 'node:stream';
import tar from 'tar-stream';

export const SEAL_NAME = 'vop-backup.seal';
export const KEYED_SEAL_NAME = 'vop-backup.keyed-seal';

/** tar's block: every header and every part's padded length is a whole number of them. */
export const BLOCK = 512;
/** The seal's entry (its header, its digits padded to a block) and tar's two zero blocks. */
export const TAIL_BYTES = 4 * BLOCK;
/** A seal key shorter than this is refused: 32 characters, the hex of 16 random bytes, at least. */
export const MIN_SEAL_KEY_CHARS = 32;

/** The digests of everything before a seal: the SHA-256, and the HMAC when a key was given. */
export interface BodyDigests {
  sha256: string;
  hmac?: string;
}

/** What the tail of a backup is, once checked. */
export interface TailCheck {
  /** Undefined when the tail is a sound seal of the digests. */
  problem?: string;
  /** The kind of seal found. */
  seal?: 'plain' | 'keyed';
}

/** Hashes the bytes before a seal: always SHA-256, and an HMAC under `key` when there is one. */
export class BodyHasher {
  private readonly sha = crypto.createHash('sha256');
  private readonly mac: crypto.Hmac | undefined;
  private done: BodyDigests | undefined;

  constructor(key?: Buffer) {
    this.mac = key ? crypto.createHmac('sha256', key) : undefined;
  }

  /** Hashes `chunk`; bytes given after digests() (the seal itself, passing the writer's counter) are not hashed. */
  update(chunk: Uint8Array): void {
    if (this.done) return;
    this.sha.update(chunk);
    this.mac?.update(chunk);
  }

  /** The digests of every byte given before the first call. */
  digests(): BodyDigests {
    if (!this.done) {
      const sha256 = this.sha.digest('hex');
      this.done = this.mac ? { sha256, hmac: this.mac.digest('hex') } : { sha256 };
    }
    return this.done;
  }
}

/**
 * The seal's entry for `digests`: a keyed seal when they hold an HMAC, else a plain one. Fixed in
 * every field of its header (no time, no owner), so that its bytes depend on the digests alone.
 */
export function sealEntry(digests: BodyDigests): { header: tar.Headers; content: string } {
  const content = digests.hmac !== undefined ? digests.sha256 + digests.hmac : digests.sha256;
  const name = digests.hmac !== undefined ? KEYED_SEAL_NAME : SEAL_NAME;
  return { header: { name, size: content.length, mode: 0o600, mtime: new Date(0), uid: 0, gid: 0, uname: '', gname: '', type: 'file' }, content };
}

/** The tail (seal entry and end of archive) a writer makes for `digests`: tar-stream's own bytes. */
export async function sealTail(digests: BodyDigests): Promise<Buffer> {
  const seal = sealEntry(digests);
  const pack = tar.pack();
  pack.entry(seal.header, seal.content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  const tail = Buffer.concat(chunks);
  if (tail.length !== TAIL_BYTES) throw new Error(`tar-stream wrote a seal of ${tail.length} bytes, not ${TAIL_BYTES}`);
  return tail;
}

/**
 * Checks the last {@link TAIL_BYTES} of a backup against the digests of everything before them.
 * A keyed seal's HMAC is compared only when `body.hmac` is there (the reader had the key); the
 * caller decides what a plain seal means when a key was given.
 * (The seal's header checksum covers its digits, so changed digits also change the header.)
 */
export async function checkTail(tail: Buffer, body: BodyDigests): Promise<TailCheck> {
  if (tail.length !== TAIL_BYTES) return { problem: 'it is too short to hold a seal: it was cut off' };
  const named = (name: string) => tail.subarray(0, name.length + 1).toString('latin1') === `${name}\0`;
  const seal = named(SEAL_NAME) ? 'plain' : named(KEYED_SEAL_NAME) ? 'keyed' : undefined;
  if (!seal) return { problem: 'it does not end with a seal: it was cut off, or is not a vop backup' };
  const written = tail.subarray(BLOCK, BLOCK + (seal === 'keyed' ? 128 : 64)).toString('latin1');
  if (!(seal === 'keyed' ? /^[0-9a-f]{128}$/ : /^[0-9a-f]{64}$/).test(written)) return { seal, problem: 'its seal is damaged' };
  const sha256 = written.slice(0, 64);
  const hmac = seal === 'keyed' ? written.slice(64) : undefined;
  if (sha256 !== body.sha256) return { seal, problem: 'its bytes differ from what the seal says they were (the file is damaged)' };
  if (!tail.equals(await sealTail({ sha256, ...(hmac !== undefined ? { hmac } : {}) }))) return { seal, problem: 'its seal or its end is damaged' };
  if (hmac !== undefined && body.hmac !== undefined && !crypto.timingSafeEqual(Buffer.from(hmac), Buffer.from(body.hmac))) {
    return { seal, problem: 'its keyed seal was not made with this key: it comes from an installation with another key, or was changed by someone without the key' };
  }
  return { seal };
}

/**
 * Passes a whole backup through and puts a keyed seal under `key` in place of its seal (plain, or
 * keyed under any key): the CLI's backup through a server. The seal it replaces must be a sound
 * seal of the bytes before it (its SHA-256), or the stream fails: a backup cut off or damaged on
 * the way is never given a keyed seal.
 */
export function resealWithKey(key: Buffer): Transform {
  const hasher = new BodyHasher(key);
  let held: Buffer = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      if (held.length > TAIL_BYTES) {
        const out = held.subarray(0, held.length - TAIL_BYTES);
        held = Buffer.from(held.subarray(held.length - TAIL_BYTES));
        hasher.update(out);
        cb(null, out);
      } else cb();
    },
    flush(cb) {
      const body = hasher.digests();
      checkTail(held, { sha256: body.sha256 }).then(
        async (check) => {
          if (check.problem) return cb(new Error(`The backup received is not whole: ${check.problem}`));
          cb(null, await sealTail(body));
        },
        (err: Error) => cb(err),
      );
    },
  });
}

/**
 * The key in `file`: its text without surrounding white space (so `openssl rand -hex 32 > file`
 * makes one), at least {@link MIN_SEAL_KEY_CHARS} characters.
 */
export function readSealKey(file: string): Buffer {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new Error(`Cannot read the seal key file ${file}: ${(err as Error).message}`);
  }
  if (text.length < MIN_SEAL_KEY_CHARS) {
    throw new Error(`The seal key file ${file} holds ${text.length} characters; a seal key needs ${MIN_SEAL_KEY_CHARS} at least (make one with: openssl rand -hex 32 > ${file})`);
  }
  return Buffer.from(text, 'utf8');
}

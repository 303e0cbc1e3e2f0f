/** The keyed seal of a backup (server/backup/backupSeal.ts), on small archives. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { BackupWriter } from '../../server/backup/backupArchive.js';
import { readBackup } from '../../server/backup/backupReader.js';
import { KEYED_SEAL_NAME, readSealKey, resealWithKey, SEAL_NAME, TAIL_BYTES } from '../../server/backup/backupSeal.js';
import { tempDataDir } from '../helpers/server.js';

const keyA = Buffer.from(crypto.randomBytes(32).toString('hex'));
const keyB = Buffer.from(crypto.randomBytes(32).toString('hex'));

async function archive(file: string, sealKey?: Buffer): Promise<Buffer> {
  const w = new BackupWriter(fs.createWriteStream(file), { sealKey });
  await w.add({ name: 'database/vop.db', data: Buffer.from('a database') });
  await w.add({ name: 'media/play/a.mp4', size: 70_000, stream: Readable.from([Buffer.alloc(30_000, 1), Buffer.alloc(40_000, 2)]) });
  await w.finish({ vopVersion: 'test' });
  return fs.readFileSync(file);
}

/** The name of the archive's last entry, as tar lists it. */
function lastEntryName(bytes: Buffer): string {
  const header = bytes.subarray(bytes.length - TAIL_BYTES, bytes.length - TAIL_BYTES + 100);
  return header.subarray(0, header.indexOf(0)).toString('latin1');
}

describe('a keyed seal', () => {
  const dir = tempDataDir('vop-seal-');

  it('verifies under its key, fails under another, and is checked as a plain seal without one', async () => {
    const file = path.join(dir, 'keyed.tar');
    const bytes = await archive(file, keyA);
    expect(lastEntryName(bytes)).toBe(KEYED_SEAL_NAME);
    const withA = await readBackup(file, { sealKey: keyA });
    expect(withA.problems).toEqual([]);
    expect(withA.seal).toBe('keyed');
    const withB = await readBackup(file, { sealKey: keyB });
    expect(withB.problems.join('\n')).toMatch(/not made with this key/);
    const without = await readBackup(file);
    expect(without.problems).toEqual([]);
    expect(without.seal).toBe('keyed');
  });

  it('is required when a key is given: a plain seal, which anyone can make, fails', async () => {
    const file = path.join(dir, 'plain.tar');
    const bytes = await archive(file);
    expect(lastEntryName(bytes)).toBe(SEAL_NAME);
    expect((await readBackup(file)).problems).toEqual([]);
    expect((await readBackup(file, { sealKey: keyA })).problems.join('\n')).toMatch(/no keyed seal/);
  });

  it('finds a flipped byte of the body or of the seal, with the key', async () => {
    const file = path.join(dir, 'flip.tar');
    const bytes = await archive(file, keyA);
    const damaged = path.join(dir, 'flip-damaged.tar');
    const missed: number[] = [];
    // Every byte of the seal's digits, every third of its header, every 1999th elsewhere
    // (backup-archive.test.ts flips every byte of a plain-sealed archive).
    const tailAt = bytes.length - TAIL_BYTES;
    const offsets = new Set<number>();
    for (let i = tailAt + 512; i < tailAt + 512 + 128; i++) offsets.add(i);
    for (let i = tailAt; i < tailAt + 512; i += 3) offsets.add(i);
    for (let i = 0; i < bytes.length; i += 1999) offsets.add(i);
    for (const at of offsets) {
      const copy = Buffer.from(bytes);
      copy[at]! ^= 0x01;
      fs.writeFileSync(damaged, copy);
      if ((await readBackup(damaged, { sealKey: keyA })).problems.length === 0) missed.push(at);
    }
    expect(missed).toEqual([]);
  }, 30_000);

  it('is put in place of a plain seal by resealWithKey, and only on a whole archive', async () => {
    const plain = path.join(dir, 'to-reseal.tar');
    const bytes = await archive(plain);
    const resealed = path.join(dir, 'resealed.tar');
    // In small chunks, so that the held tail crosses chunk boundaries.
    const chunks = Array.from({ length: Math.ceil(bytes.length / 700) }, (_, i) => bytes.subarray(i * 700, (i + 1) * 700));
    await pipeline(Readable.from(chunks), resealWithKey(keyA), fs.createWriteStream(resealed));
    const r = await readBackup(resealed, { sealKey: keyA });
    expect(r.problems).toEqual([]);
    expect(r.seal).toBe('keyed');
    expect(fs.readFileSync(resealed).subarray(0, bytes.length - TAIL_BYTES).equals(bytes.subarray(0, bytes.length - TAIL_BYTES))).toBe(true);

    // A keyed archive under another key is resealed under this one.
    const other = path.join(dir, 'keyed-b.tar');
    await archive(other, keyB);
    const again = path.join(dir, 'resealed-b.tar');
    await pipeline(fs.createReadStream(other), resealWithKey(keyA), fs.createWriteStream(again));
    expect((await readBackup(again, { sealKey: keyA })).problems).toEqual([]);

    // Cut off, or damaged on the way: never given a keyed seal.
    for (const broken of [bytes.subarray(0, bytes.length - 1024), Buffer.concat([bytes.subarray(0, 600), Buffer.from('x'), bytes.subarray(601)])]) {
      await expect(pipeline(Readable.from([broken]), resealWithKey(keyA), fs.createWriteStream(path.join(dir, 'broken.tar')))).rejects.toThrow(/not whole/);
    }
  });

  it('key files: text trimmed, at least 32 characters', () => {
    const good = path.join(dir, 'good.key');
    fs.writeFileSync(good, `${'ab'.repeat(32)}\n`);
    expect(readSealKey(good).toString()).toBe('ab'.repeat(32));
    const short = path.join(dir, 'short.key');
    fs.writeFileSync(short, 'secret\n');
    expect(() => readSealKey(short)).toThrow(/6 characters; a seal key needs 32 at least/);
    expect(() => readSealKey(path.join(dir, 'absent.key'))).toThrow(/Cannot read the seal key file/);
  });
});

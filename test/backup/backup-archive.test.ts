/** The backup file's own checks (server/backup/backupArchive.ts, backupReader.ts), on small archives. */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BackupWriter } from '../../server/backup/backupArchive.js';
import { TAIL_BYTES } from '../../server/backup/backupSeal.js';
import { readBackup } from '../../server/backup/backupReader.js';
import { tempDataDir } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

async function archive(file: string, small = false): Promise<Buffer> {
  const w = new BackupWriter(fs.createWriteStream(file));
  await w.add({ name: 'database/vop.db', data: Buffer.from('a database of 27 bytes.....') });
  if (small) {
    await w.add({ name: 'media/play/20261127/a.mp4', size: 3000, stream: Readable.from([Buffer.alloc(1000, 1), Buffer.alloc(2000, 2)]) });
    await w.finish({ vopVersion: 'test' });
    return fs.readFileSync(file);
  }
  const big = Buffer.alloc(300_000, 7);
  await w.add({ name: 'media/play/20261127/a.mp4', size: big.length, stream: Readable.from([big.subarray(0, 100_000), big.subarray(100_000)]) });
  // Over the slice size: given in memory, written in slices.
  await w.add({ name: 'media/covers/b.jpg', data: Buffer.alloc(600_000, 3) });
  await w.finish({ vopVersion: 'test' });
  return fs.readFileSync(file);
}

describe('the backup archive', () => {
  const dir = tempDataDir('vop-archive-');

  it('reads back whole, with every part as written, and tar can list it', async () => {
    const file = path.join(dir, 'whole.tar');
    await archive(file);
    const seen: string[] = [];
    const r = await readBackup<{ vopVersion: string }>(file, {
      onPart: async (part, stream) => {
        let n = 0;
        for await (const c of stream) n += (c as Buffer).length;
        seen.push(`${part.name} ${n}`);
      },
    });
    expect(r.problems).toEqual([]);
    expect(r.manifest?.vopVersion).toBe('test');
    expect(seen).toEqual(['database/vop.db 27', 'media/play/20261127/a.mp4 300000', 'media/covers/b.jpg 600000']);
  });

  it('finds one flipped byte anywhere: headers, data, padding, manifest, seal and tar\'s end', async () => {
    const file = path.join(dir, 'flip.tar');
    const bytes = await archive(file, true);
    const damaged = path.join(dir, 'damaged.tar');
    // Every byte of the first part's header and data block, of the manifest's and the seal's
    // entries and the end; every 7th elsewhere.
    const manifestAt = bytes.lastIndexOf(Buffer.from('manifest.json'));
    const offsets = new Set<number>();
    for (let i = 0; i < 1024; i++) offsets.add(i);
    for (let i = manifestAt; i < bytes.length; i++) offsets.add(i);
    for (let i = 0; i < bytes.length; i += 7) offsets.add(i);
    expect(bytes.length - manifestAt).toBeGreaterThan(TAIL_BYTES);
    const missed: number[] = [];
    for (const at of offsets) {
      const copy = Buffer.from(bytes);
      copy[at]! ^= 0x20;
      fs.writeFileSync(damaged, copy);
      if ((await readBackup(damaged)).problems.length === 0) missed.push(at);
    }
    expect(missed).toEqual([]);
  }, 120_000);

  it('finds a file cut off anywhere, and bytes added at its end', async () => {
    const file = path.join(dir, 'cut.tar');
    const bytes = await archive(file);
    const damaged = path.join(dir, 'cut-damaged.tar');
    for (const length of [0, 511, 512, 1024, 50_000, bytes.length - TAIL_BYTES, bytes.length - 1024, bytes.length - 1]) {
      fs.writeFileSync(damaged, bytes.subarray(0, length));
      expect((await readBackup(damaged)).problems.length, `cut at ${length}`).toBeGreaterThan(0);
    }
    fs.writeFileSync(damaged, Buffer.concat([bytes, Buffer.alloc(512)]));
    expect((await readBackup(damaged)).problems.length).toBeGreaterThan(0);
  });

  it('ends the archive without a seal when a part fails', async () => {
    const file = path.join(dir, 'failed.tar');
    const out = fs.createWriteStream(file);
    const w = new BackupWriter(out);
    await w.add({ name: 'database/vop.db', data: Buffer.from('x') });
    const failing = new Readable({
      read() {
        this.destroy(new Error('disk gone'));
      },
    });
    await expect(w.add({ name: 'media/play/x.mp4', size: 10, stream: failing })).rejects.toThrow(/disk gone/);
    await expect(w.finish({})).rejects.toThrow();
    // What was written is on disk: the file stream holds nothing more (or has closed).
    await waitUntil("the archive's bytes written to the file", () => out.closed || out.writableLength === 0 || notYet({ buffered: out.writableLength }), { timeoutMs: 5_000 });
    expect((await readBackup(file)).problems.length).toBeGreaterThan(0);
  });
});

/**
 * A backup as anyone can make one (the seal is a plain SHA-256): an empty database of vop's
 * schema and the media parts given, whole and sealed, so that only its media are hostile.
 */
async function craftedBackup(dir: string, media: Array<{ name: string; key?: string; data: Buffer }>): Promise<string> {
  const { default: initSqlJs } = await import('sql.js');
  const { referenceDatabase } = await import('../../server/storage/sqljs/imageCheck.js');
  const { MIGRATIONS } = await import('../../server/storage/sqljs/migrations.js');
  const db = referenceDatabase(await initSqlJs(), MIGRATIONS.length);
  const image = db.export();
  db.close();
  const file = path.join(dir, 'crafted.tar');
  const w = new BackupWriter(fs.createWriteStream(file));
  await w.add({ name: 'database/vop.db', data: image });
  for (const part of media) await w.add(part);
  await w.finish({ vopVersion: 'test', mode: 'embedded', database: { engine: 'sqlite', schemaVersion: MIGRATIONS.length }, media: 'include', mediaStore: 'local', counts: {} });
  expect((await readBackup(file)).problems).toEqual([]);
  return file;
}

describe('a crafted backup', () => {
  it('whose media part would land outside the media folder is refused before anything is written', async () => {
    const dir = tempDataDir('vop-crafted-');
    const file = await craftedBackup(dir, [{ name: 'media/play/x.mp4', key: 'play/../../../escaped', data: Buffer.from('not yours') }]);
    const { restoreIntoDataDir } = await import('../../server/backup/restoreBackup.js');
    const into = path.join(dir, 'into');
    await expect(restoreIntoDataDir(file, into)).rejects.toThrow(/not a media file/);
    expect(fs.existsSync(into)).toBe(false);
    expect(fs.existsSync(path.join(dir, 'escaped'))).toBe(false);
  });
});

describe('a crafted backup with uploads under way', () => {
  it('is refused, naming the part, before anything is written: a backup never holds incoming', async () => {
    const dir = tempDataDir('vop-crafted-incoming-');
    const file = await craftedBackup(dir, [
      { name: 'media/covers/v/cover.jpg', data: Buffer.from('a cover') },
      { name: 'media/incoming/tus/abc', data: Buffer.from('an upload nobody made') },
    ]);
    const { restoreIntoDataDir } = await import('../../server/backup/restoreBackup.js');
    const into = path.join(dir, 'into');
    await expect(restoreIntoDataDir(file, into)).rejects.toThrow(/holds media outside the areas a backup holds \("media\/incoming\/tus\/abc"\)/);
    expect(fs.existsSync(into)).toBe(false);
  });
});

describe('a paced read (a serving server checking its own backup)', () => {
  it('reads the whole archive, its manifest last, however long it rests between pieces', async () => {
    const dir = tempDataDir('vop-paced-');
    const file = path.join(dir, 'paced.tar');
    await archive(file);
    for (const threadShare of [0.5, 0.1, 0.02]) {
      const r = await readBackup<{ vopVersion: string }>(file, { threadShare });
      expect(r.problems, `share ${threadShare}`).toEqual([]);
      expect(r.manifest?.vopVersion).toBe('test');
    }
  }, 60_000);
});

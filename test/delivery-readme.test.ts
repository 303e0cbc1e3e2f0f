/**
 * The README's figures on media delivery (Media URLs, Capacity and performance) are the code's
 * defaults: the open-file cache's bounds and check window, the block cache, the S3 object info's
 * lifetime and the hot paths' requests per turn. The behaviour at each bound is tested elsewhere
 * with small values (delivery-caches.test.ts, hot-turns.test.ts); this keeps the words in step.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CACHED_READ_MAX_BYTES } from '../server/http/fileResponse.js';
import { REQUESTS_PER_TURN } from '../server/http/hotPaths.js';
import { DEFAULT_OBJECT_INFO_CACHE } from '../server/storage/media/objectInfoCache.js';
import { BLOCK_BYTES, DEFAULT_OPEN_FILE_CACHE } from '../server/storage/media/openFileCache.js';
import { ROOT } from './helpers/server.js';

// Lines folded in the file are joined, so that a phrase may cross a line break.
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').replace(/\s*\n\s*/g, ' ');
const KIB = 1024;
const MIB = 1024 * 1024;

/** Every number `pattern` (with one group, the number) finds in the README, as written. */
function said(pattern: RegExp): string[] {
  return [...readme.matchAll(new RegExp(pattern, 'g'))].map((m) => m[1]!.replace(/,/g, ''));
}

describe('the README on media delivery', () => {
  it('gives the open-file cache’s bounds and check window as the code has them', () => {
    const o = DEFAULT_OPEN_FILE_CACHE;
    expect(said(/at most (\S+) files, closed after/)).toEqual([String(o.maxFiles)]);
    // Unused files are swept every inactiveMs: closed between one and two of them after their last use.
    expect(said(/closed after (\d+) to \d+ s unused/)).toEqual([String(o.inactiveMs / 1000)]);
    expect(said(/closed after \d+ to (\d+) s unused/)).toEqual([String((2 * o.inactiveMs) / 1000)]);
    expect(said(/checked with `stat` \([^)]*\) at most every (\d+) ms/)).toEqual([String(o.validMs)]);
    expect(said(/A use more than (\d+) ms after the last check/)).toEqual([String(o.validMs)]);
  });

  it('gives the block cache’s sizes and the largest body read whole as the code has them', () => {
    const blocks = said(/recently read (\d+) KiB blocks/);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    expect(new Set(blocks)).toEqual(new Set([String(BLOCK_BYTES / KIB)]));
    const total = said(/\((\d+) MiB in all/);
    expect(total.length).toBeGreaterThanOrEqual(2);
    expect(new Set(total)).toEqual(new Set([String(DEFAULT_OPEN_FILE_CACHE.blockCacheBytes / MIB)]));
    expect(said(/A body up to (\d+) MiB \(a Range/)).toEqual([String(CACHED_READ_MAX_BYTES / MIB)]);
    expect(said(/Bodies up to (\d+) MiB \(HLS segments\)/)).toEqual([String(CACHED_READ_MAX_BYTES / MIB)]);
  });

  it('gives how long an S3 object’s info is kept as the code has it', () => {
    const kept = said(/info[^.]{0,40}kept for up to (\d+) s/);
    expect(kept.length).toBeGreaterThanOrEqual(2);
    expect(new Set(kept)).toEqual(new Set([String(DEFAULT_OBJECT_INFO_CACHE.ttlMs / 1000)]));
  });

  it('gives the hot paths’ requests per turn as the code has it', () => {
    const perTurn = said(/at most (\d+) (?:hot requests )?a turn/);
    expect(perTurn.length).toBeGreaterThanOrEqual(2);
    expect(new Set(perTurn)).toEqual(new Set([String(REQUESTS_PER_TURN)]));
  });
});

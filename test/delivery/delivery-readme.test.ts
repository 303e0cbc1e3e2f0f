/**
 * The figures of media delivery that docs/processing.md gives (the open-file cache's bounds and
 * stat window, the block cache, the largest body read whole, how long an S3 object's info is kept,
 * the hot paths' requests per turn) are the code's defaults. The page keeps them in one table,
 * marked `<!-- table: delivery -->`, each row naming its constant; this reads the rows, never the
 * sentences. The behaviour at each bound is tested elsewhere with small values
 * (delivery-caches.test.ts, hot-turns.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { CACHED_READ_MAX_BYTES } from '../../server/http/fileResponse.js';
import { REQUESTS_PER_TURN } from '../../server/http/hotPaths.js';
import { DEFAULT_OBJECT_INFO_CACHE } from '../../server/storage/media/objectInfoCache.js';
import { BLOCK_BYTES, DEFAULT_OPEN_FILE_CACHE } from '../../server/storage/media/openFileCache.js';
import { code, markedTable, quantity, readDoc } from '../docTables.js';

/** Every constant the table must give, by the name its `in the code` column uses. */
const CONSTANTS: Record<string, number> = {
  'DEFAULT_OPEN_FILE_CACHE.maxFiles': DEFAULT_OPEN_FILE_CACHE.maxFiles,
  'DEFAULT_OPEN_FILE_CACHE.inactiveMs': DEFAULT_OPEN_FILE_CACHE.inactiveMs,
  'DEFAULT_OPEN_FILE_CACHE.validMs': DEFAULT_OPEN_FILE_CACHE.validMs,
  'DEFAULT_OPEN_FILE_CACHE.blockCacheBytes': DEFAULT_OPEN_FILE_CACHE.blockCacheBytes,
  BLOCK_BYTES,
  CACHED_READ_MAX_BYTES,
  'DEFAULT_OBJECT_INFO_CACHE.ttlMs': DEFAULT_OBJECT_INFO_CACHE.ttlMs,
  REQUESTS_PER_TURN,
};

describe('docs/processing.md on media delivery', () => {
  const rows = markedTable(readDoc('docs/processing.md'), 'delivery', 'docs/processing.md');

  it('gives every delivery constant once', () => {
    const names = rows.map((r) => code(r['in the code']!));
    expect([...names].sort()).toEqual(Object.keys(CONSTANTS).sort());
  });

  it('gives each the value the code has', () => {
    for (const row of rows) {
      const name = code(row['in the code']!);
      expect(quantity(row.value!), name).toBe(CONSTANTS[name]);
    }
  });
});

/** ReadBatcher (storage/postgres/readBatcher.ts): reads asked for in one turn become one read. */
import { describe, expect, it } from 'vitest';
import { ReadBatcher } from '../../server/storage/postgres/readBatcher.js';

describe('ReadBatcher', () => {
  it('makes one read of the keys asked for in one turn, each key once, and answers each caller', async () => {
    const reads: string[][] = [];
    const b = new ReadBatcher<number>(async (keys) => (reads.push(keys), new Map(keys.filter((k) => k !== 'none').map((k) => [k, k.length]))));
    const got = await Promise.all(['a', 'bb', 'a', 'none', 'ccc'].map((k) => b.load(k)));
    expect(got).toEqual([1, 2, 1, undefined, 3]);
    expect(reads).toEqual([['a', 'bb', 'none', 'ccc']]);
    // A later turn is a read of its own: nothing is answered from the earlier one.
    expect(await b.load('a')).toBe(1);
    expect(reads).toHaveLength(2);
  });

  it('sends a batch as soon as it holds its most keys', async () => {
    const reads: string[][] = [];
    const b = new ReadBatcher<string>(async (keys) => (reads.push(keys), new Map(keys.map((k) => [k, k]))), 2);
    await Promise.all(['a', 'b', 'c'].map((k) => b.load(k)));
    expect(reads).toEqual([['a', 'b'], ['c']]);
  });

  it('gives every caller of a failed read its error', async () => {
    const b = new ReadBatcher<string>(async () => {
      throw new Error('down');
    });
    const got = await Promise.allSettled([b.load('a'), b.load('b')]);
    expect(got.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});

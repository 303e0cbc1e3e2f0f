import { describe, expect, it } from 'vitest';
import { InTurn } from '../../server/core/inTurn.js';

describe('InTurn', () => {
  it('runs each step once the one before has settled, a failure included, and answers each as it ends', async () => {
    const turns = new InTurn();
    const seen: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const first = turns.run(async () => {
      seen.push('first starts');
      await held;
      seen.push('first ends');
      return 1;
    });
    const second = turns.run(async () => {
      seen.push('second');
      throw new Error('second fails');
    });
    const third = turns.run(async () => {
      seen.push('third');
      return 3;
    });
    await Promise.resolve();
    expect(seen).toEqual(['first starts']);
    release();
    expect(await first).toBe(1);
    await expect(second).rejects.toThrow('second fails');
    expect(await third).toBe(3);
    expect(seen).toEqual(['first starts', 'first ends', 'second', 'third']);
  });
});

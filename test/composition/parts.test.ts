/**
 * The one list a server starts and stops by (server/composition/parts.ts): started first first,
 * stopped last first, every part stopped though one fails, the first failure reported.
 */
import { describe, expect, it } from 'vitest';
import { Parts } from '../../server/composition/parts.js';

function recorder() {
  const seen: string[] = [];
  const part = (name: string, o: { failStop?: boolean } = {}) => ({
    name,
    start: () => {
      seen.push(`start ${name}`);
    },
    stop: async (graceMs: number) => {
      seen.push(`stop ${name} ${graceMs}`);
      if (o.failStop) throw new Error(`${name} would not stop`);
    },
  });
  return { seen, part };
}

describe('the parts of a server', () => {
  it('start in the order they were added and stop in reverse, with the grace given', async () => {
    const { seen, part } = recorder();
    const parts = new Parts();
    parts.add(part('database'), undefined, part('jobs'));
    parts.add({ name: 'stop only', stop: () => void seen.push('stop only') }, part('http'));
    await parts.start();
    await parts.stop(500);
    expect(seen).toEqual(['start database', 'start jobs', 'start http', 'stop http 500', 'stop only', 'stop jobs 500', 'stop database 500']);
  });

  it('all stop though one fails, and the stop rejects with the first failure, named', async () => {
    const { seen, part } = recorder();
    const parts = new Parts();
    parts.add(part('database'), part('jobs', { failStop: true }), part('http', { failStop: true }));
    await expect(parts.stop(0)).rejects.toThrow('Stopping http: http would not stop');
    expect(seen).toEqual(['stop http 0', 'stop jobs 0', 'stop database 0']);
  });

  it('a start that fails stops starting the rest', async () => {
    const { seen, part } = recorder();
    const parts = new Parts();
    parts.add(part('database'), { name: 'port', start: () => Promise.reject(new Error('port taken')) }, part('http'));
    await expect(parts.start()).rejects.toThrow('port taken');
    expect(seen).toEqual(['start database']);
  });
});

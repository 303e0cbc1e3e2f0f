/** PauseGroup: the ladder's runs stop while any first rendition holds the group, and go on once none does. */
import { describe, expect, it } from 'vitest';
import { PauseGroup } from '../../server/media/pauseGroup.js';

function child() {
  const signals: string[] = [];
  return { signals, kill: (s: NodeJS.Signals) => (signals.push(s), true) };
}

describe('PauseGroup', () => {
  it('stops every run while held, by any number of holders, and continues them once the last lets go', () => {
    const group = new PauseGroup();
    const a = child();
    const leaveA = group.add(a);
    expect(a.signals).toEqual([]);
    const first = group.hold();
    const second = group.hold();
    expect(group.paused).toBe(true);
    expect(a.signals).toEqual(['SIGSTOP']);
    first();
    first(); // a release counts once
    expect(a.signals).toEqual(['SIGSTOP']);
    second();
    expect(group.paused).toBe(false);
    expect(a.signals).toEqual(['SIGSTOP', 'SIGCONT']);
    leaveA();
    group.hold()();
    expect(a.signals).toEqual(['SIGSTOP', 'SIGCONT']);
  });

  it('stops a run that starts while the group is held', () => {
    const group = new PauseGroup();
    const release = group.hold();
    const b = child();
    group.add(b);
    expect(b.signals).toEqual(['SIGSTOP']);
    release();
    expect(b.signals).toEqual(['SIGSTOP', 'SIGCONT']);
  });
});

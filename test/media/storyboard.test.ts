/** How a storyboard is cut (server/media/storyboard.ts): tiles 2 to 5 s apart, at most 600, cues into ten-by-ten sprites. */
import { describe, expect, it } from 'vitest';
import { MAX_TILES, spriteCount, storyboardPlan, storyboardVtt } from '../../server/media/storyboard.js';

describe('a storyboard', () => {
  it('takes a tile every 2 s up to 5 minutes, then further apart up to 5 s, then at most 600 tiles', () => {
    expect(storyboardPlan(8, 426, 240)).toEqual({ interval: 2, tiles: 4, tileWidth: 160, tileHeight: 90 });
    expect(storyboardPlan(300, 640, 360).interval).toBe(2);
    expect(storyboardPlan(600, 640, 360).interval).toBe(4);
    expect(storyboardPlan(1500, 640, 360).interval).toBe(5);
    const long = storyboardPlan(7200, 640, 360);
    expect(long.tiles).toBeLessThanOrEqual(MAX_TILES);
    expect(long.interval).toBe(12);
    // A portrait picture keeps its aspect; heights are even.
    expect(storyboardPlan(10, 240, 426)).toMatchObject({ tileWidth: 160, tileHeight: 284 });
  });

  it('points each cue into its sprite, the last cut at the end, 100 tiles a sprite', () => {
    const plan = storyboardPlan(250, 640, 360);
    expect(plan.tiles).toBe(125);
    expect(spriteCount(plan)).toBe(2);
    const vtt = storyboardVtt(plan, 249.5, 'abcd0123');
    const cues = vtt.split('\n\n').slice(1).map((c) => c.trim()).filter(Boolean);
    expect(cues).toHaveLength(125);
    expect(cues[0]).toBe('00:00:00.000 --> 00:00:02.000\nabcd0123/0.jpg#xywh=0,0,160,90');
    expect(cues[11]).toBe('00:00:22.000 --> 00:00:24.000\nabcd0123/0.jpg#xywh=160,90,160,90');
    expect(cues[100]).toBe('00:03:20.000 --> 00:03:22.000\nabcd0123/1.jpg#xywh=0,0,160,90');
    expect(cues[124]).toBe('00:04:08.000 --> 00:04:09.500\nabcd0123/1.jpg#xywh=640,180,160,90');
  });
});

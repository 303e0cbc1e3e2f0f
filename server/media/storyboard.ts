/**
 * Seek previews (docs/watch.md, "Seek previews"): a storyboard is a few sprite images of small
 * tiles, one tile every few seconds of the video, and a WebVTT file whose cues point into them
 * (`<sprite>#xywh=x,y,w,h`, the "thumbnails track" Video.js, Mux, Bunny and PeerTube use). Made
 * from the smallest rendition, which decodes fastest: a 240p or 360p MP4 decodes at hundreds of
 * times its speed, so a storyboard costs a small part of the ladder (npm run bench -- playable).
 */

/** Tile width in pixels; the height keeps the picture's aspect. */
export const TILE_WIDTH = 160;
/** Tiles across and down one sprite image. */
export const SPRITE_COLUMNS = 10;
export const SPRITE_ROWS = 10;
/** The most tiles a storyboard has: a longer video gets a tile further apart. */
export const MAX_TILES = 600;

/** How a video's storyboard is cut. */
export interface StoryboardPlan {
  /** Seconds between two tiles. */
  interval: number;
  tiles: number;
  tileWidth: number;
  tileHeight: number;
}

/**
 * A tile every 2 s for a video of up to 5 minutes, then further apart up to one every 5 s (at
 * 25 minutes), then as far apart as {@link MAX_TILES} needs.
 */
export function storyboardPlan(durationSeconds: number, width: number, height: number): StoryboardPlan {
  const duration = Math.max(0.1, durationSeconds);
  let interval = Math.min(5, Math.max(2, duration / 150));
  if (duration / interval > MAX_TILES) interval = duration / MAX_TILES;
  interval = Math.round(interval * 1000) / 1000;
  const tileHeight = Math.max(2, Math.round((TILE_WIDTH * height) / Math.max(1, width) / 2) * 2);
  return { interval, tiles: Math.max(1, Math.ceil(duration / interval)), tileWidth: TILE_WIDTH, tileHeight };
}

/**
 * ffmpeg's arguments making the sprites of `input` as `<outPattern>` (`…/%d.jpg`, numbered from
 * 0): the frame at each interval (the one showing then), scaled to a tile, tiled ten by ten.
 */
export function storyboardArgs(input: string, plan: StoryboardPlan, outPattern: string): string[] {
  return [
    '-hide_banner', '-nostdin', '-v', 'error', '-threads', '1',
    '-i', input,
    '-map', '0:v:0', '-an', '-sn', '-dn',
    '-vf', `fps=1/${plan.interval}:round=down,scale=${plan.tileWidth}:${plan.tileHeight}:flags=bilinear,tile=${SPRITE_COLUMNS}x${SPRITE_ROWS}`,
    '-q:v', '5', '-start_number', '0', '-f', 'image2',
    '-y', outPattern,
  ];
}

/**
 * The storyboard's WebVTT: one cue a tile, each pointing into its sprite by a path relative to
 * the WebVTT file (`<folder>/<n>.jpg#xywh=…`), so that a signed address's token carries over.
 */
export function storyboardVtt(plan: StoryboardPlan, durationSeconds: number, folder: string): string {
  const perSprite = SPRITE_COLUMNS * SPRITE_ROWS;
  const lines = ['WEBVTT', ''];
  for (let i = 0; i < plan.tiles; i++) {
    const start = i * plan.interval;
    const end = Math.min(durationSeconds, (i + 1) * plan.interval);
    if (end <= start) break;
    const n = i % perSprite;
    const x = (n % SPRITE_COLUMNS) * plan.tileWidth;
    const y = Math.floor(n / SPRITE_COLUMNS) * plan.tileHeight;
    lines.push(`${stamp(start)} --> ${stamp(end)}`, `${folder}/${Math.floor(i / perSprite)}.jpg#xywh=${x},${y},${plan.tileWidth},${plan.tileHeight}`, '');
  }
  return lines.join('\n');
}

/** How many sprite images `plan` makes. */
export function spriteCount(plan: StoryboardPlan): number {
  return Math.ceil(plan.tiles / (SPRITE_COLUMNS * SPRITE_ROWS));
}

function stamp(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(ms % 1000).padStart(3, '0')}`;
}

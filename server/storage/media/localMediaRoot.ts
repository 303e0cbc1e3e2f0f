import fs from 'node:fs';
import path from 'node:path';

/**
 * True if `candidate` is `dir` itself or lies beneath it, after resolving `.` and `..`
 * (tus-node-server's isPathInsideDirectory). Every id-to-path lookup ends here.
 */
export function isPathInsideDirectory(dir: string, candidate: string): boolean {
  const rel = path.relative(path.resolve(dir), path.resolve(candidate));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** One path segment we build from ids and labels: no separators, no dot-only names. */
const SAFE_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

/** The areas of the media root. */
export type MediaArea =
  /** Uploads and downloads in progress. */
  | 'incoming'
  /** Complete source files, one folder per video. */
  | 'sources'
  /** Playable MP4 renditions, `<date_folder>/<file>` (spec 2.5 VideoURL). */
  | 'play'
  /** HLS playlists and segments, one folder per video. */
  | 'hls'
  /** Cover pictures, one folder per video. */
  | 'covers'
  /** WebVTT text tracks (captions, chapters), one folder per video. */
  | 'text';

const AREAS: readonly MediaArea[] = ['incoming', 'sources', 'play', 'hls', 'covers', 'text'];

/**
 * Media on local disk under `<dataDir>/media`. Paths are built only from ids and names we
 * made, each segment checked, and the result checked to be inside its area: no path ever comes
 * from raw request text. The media store on local disk (storage/media/localObjectMediaStore.ts)
 * is built on it; other code reaches media through that store, this class only for its own scratch
 * (uploads in progress), disk space and the paths the local store maps keys to.
 */
export class LocalMediaRoot {
  readonly root: string;

  constructor(dataDir: string) {
    this.root = path.join(path.resolve(dataDir), 'media');
    for (const area of AREAS) fs.mkdirSync(path.join(this.root, area), { recursive: true });
  }

  /** Absolute path of `segments` inside `area`; throws if a segment is unsafe or it escapes. */
  path(area: MediaArea, ...segments: string[]): string {
    for (const s of segments) {
      if (!SAFE_SEGMENT.test(s)) throw new Error(`Unsafe media path segment: ${JSON.stringify(s)}`);
    }
    const base = path.join(this.root, area);
    const full = path.join(base, ...segments);
    if (!isPathInsideDirectory(base, full)) throw new Error(`Media path escapes ${area}: ${JSON.stringify(segments)}`);
    return full;
  }

  /**
   * Resolves a relative path as stored or as asked for (`20261121/<file>.mp4`), or undefined if
   * it is not a safe path inside the area. Used by delivery for the spec's VideoURL form.
   */
  resolveRelative(area: MediaArea, relative: string): string | undefined {
    const parts = relative.split('/');
    if (parts.length === 0 || parts.some((p) => !SAFE_SEGMENT.test(p))) return undefined;
    try {
      return this.path(area, ...parts);
    } catch {
      return undefined;
    }
  }

  /** Free bytes on the disk that holds the media root. */
  async freeBytes(): Promise<number> {
    const s = await fs.promises.statfs(this.root);
    return s.bavail * s.bsize;
  }

  /** Bytes used and free, for /healthz and the console. */
  async diskUsage(): Promise<{ freeBytes: number; totalBytes: number }> {
    const s = await fs.promises.statfs(this.root);
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  }
}

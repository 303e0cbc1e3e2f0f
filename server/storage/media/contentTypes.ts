import path from 'node:path';

const TYPES: Record<string, string> = { mp4: 'video/mp4', m4s: 'video/mp4', ts: 'video/mp2t', m3u8: 'application/vnd.apple.mpegurl', jpg: 'image/jpeg', webm: 'video/webm', vtt: 'text/vtt' };

/**
 * The Content-Type object storage answers a presigned GET of an object with, from its name
 * (delivery sets its own): what processing stores its outputs with, and what a restore puts them
 * back with.
 */
export function mediaContentType(name: string): string {
  return TYPES[path.extname(name).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * The names processing writes and delivery accepts, and the clean-up of an attempt that did not
 * finish (what `recover` runs before a job cut off by a crash runs again). No ffmpeg here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeAttemptOutputs } from '../../server/processing/attemptOutputs.js';
import { makeDateFolder, sourceExtension, videoIdOfPlayFile } from '../../server/processing/mediaNames.js';
import { Readable } from 'node:stream';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';
import { Scratch } from '../../server/storage/scratch.js';
import { makeTempDir } from '../helpers/clips.js';

const ID = '0b5e7a0e-3c1f-4f4e-9d7a-2b6c8e1f5a90';
const OTHER = '7d1f3c2a-9e8b-4a6d-8c5f-1e2d3c4b5a69';

describe('media names', () => {
  it('reads the video id from a play file name only when the name is one vop makes', () => {
    expect(videoIdOfPlayFile('20260115', `${ID}_720p.mp4`)).toBe(ID);
    expect(videoIdOfPlayFile('20260115', `${ID}_source.webm`)).toBe(ID);
    for (const [date, file] of [
      ['2026-01-15', `${ID}_720p.mp4`],
      ['..', `${ID}_720p.mp4`],
      ['20260115', `.${ID}_720p.mp4.partial-0a1b2c.mp4`],
      ['20260115', `${ID}_720p.mp4/..`],
      ['20260115', `${ID.toUpperCase()}_720p.mp4`],
      ['20260115', `${ID}_.mp4`],
      ['20260115', `${ID}_720p`],
      ['20260115', `x${ID}_720p.mp4`],
      ['20260115', '../vop.db'],
    ]) {
      expect(videoIdOfPlayFile(date!, file!), `${date}/${file}`).toBeUndefined();
    }
  });

  it('names the date folder in the configured zone', () => {
    const at = Date.UTC(2026, 0, 15, 20, 30); // 15 Jan 20:30 UTC is already 16 Jan in Shanghai
    expect(makeDateFolder('UTC')(at)).toBe('20260115');
    expect(makeDateFolder('Asia/Shanghai')(at)).toBe('20260116');
    expect(makeDateFolder()(at)).toMatch(/^202601(15|16)$/);
  });

  it('gives a kept source the extension of its container', () => {
    expect(sourceExtension('mov,mp4,m4a,3gp,3g2,mj2', 'h264')).toBe('mp4');
    expect(sourceExtension('matroska,webm', 'vp9')).toBe('webm');
    expect(sourceExtension('matroska,webm', 'h264')).toBe('mkv');
    expect(sourceExtension('avi', 'mpeg4')).toBe('avi');
    expect(sourceExtension('mpegts', 'h264')).toBe('ts');
    expect(sourceExtension('something', 'x')).toBe('bin');
  });
});

describe('clean-up of an unfinished attempt', () => {
  it('removes its stored but unlisted renditions, and nothing of other videos or other days', async () => {
    const objects = new LocalObjectMediaStore(new LocalMediaRoot(makeTempDir()));
    const put = (key: string) => objects.put(key, { stream: Readable.from([Buffer.from('x')]) });
    // This video: a listed rendition (kept), a complete but unlisted one (removed).
    await put(`play/20260115/${ID}_720p.mp4`);
    await put(`play/20260115/${ID}_480p.mp4`);
    await put(`covers/${ID}/cover.jpg`);
    await put(`hls/${ID}/master.m3u8`);
    // Another video's outputs, and this video's files of another day: untouched.
    await put(`play/20260115/${OTHER}_720p.mp4`);
    await put(`play/20260114/${ID}_720p.mp4`);
    await put(`hls/${OTHER}/master.m3u8`);

    const removed = await removeAttemptOutputs(objects, ID, '20260115', new Set([`20260115/${ID}_720p.mp4`]));
    expect(removed).toEqual([`play/20260115/${ID}_480p.mp4`]);
    expect((await objects.list('play')).map((o) => o.key)).toEqual(
      [`play/20260114/${ID}_720p.mp4`, `play/20260115/${ID}_720p.mp4`, `play/20260115/${OTHER}_720p.mp4`].sort(),
    );
    // HLS and covers stay while rows may name them; with none, they go too (the other video's stay).
    expect((await objects.list(`covers/${ID}`)).map((o) => o.key)).toEqual([`covers/${ID}/cover.jpg`]);
    expect((await removeAttemptOutputs(objects, ID, '20260115', new Set(), { unnamed: true })).sort()).toEqual([`covers/${ID}/cover.jpg`, `hls/${ID}/master.m3u8`, `play/20260115/${ID}_720p.mp4`]);
    expect((await objects.list('hls')).map((o) => o.key)).toEqual([`hls/${OTHER}/master.m3u8`]);
    // Nothing there at all (a date folder never made): nothing to do.
    expect(await removeAttemptOutputs(objects, ID, '20260101', new Set())).toEqual([]);
  });
});

describe('scratch', () => {
  it('gives each attempt its own folder, removes the attempts of one video, and clears everything at start', async () => {
    const scratch = new Scratch(makeTempDir());
    const a = await scratch.fresh('transcode', `${ID}.aaaa`);
    const b = await scratch.fresh('transcode', `${ID}.bbbb`);
    const other = await scratch.fresh('transcode', `${OTHER}.cccc`);
    for (const dir of [a, b, other]) fs.writeFileSync(path.join(dir, 'x.mp4'), 'x');
    await scratch.removeStartingWith('transcode', `${ID}.`);
    expect(fs.readdirSync(scratch.kindPath('transcode'))).toEqual([`${OTHER}.cccc`]);
    expect(() => scratch.path('transcode', '../x')).toThrow(/Unsafe scratch name/);
    fs.mkdirSync(scratch.kindPath('s3'), { recursive: true });
    scratch.clearAll();
    expect(fs.existsSync(scratch.root)).toBe(false);
  });
});

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { interpretProbe, ProbeError } from '../../server/media/probe.js';
import { probe } from '../helpers/probe.js';
import { makeAudioFile, makeClip, makeImage, makeTempDir, testBinaries } from '../helpers/clips.js';

describe('probe', () => {
  const dir = makeTempDir();

  it('reads duration, size, codecs and bitrate of a generated clip', async () => {
    const clip = await makeClip({ seconds: 2, width: 320, height: 180 });
    const info = await probe(clip);
    expect(info.isVideo).toBe(true);
    if (!info.isVideo) return;
    expect(Math.abs(info.durationSeconds - 2)).toBeLessThan(0.1);
    expect(info).toMatchObject({ width: 320, height: 180, storedWidth: 320, storedHeight: 180, rotation: 0, videoCodec: 'h264', audioCodec: 'aac' });
    expect(info.formatName).toContain('mp4');
    expect(info.frameRate).toBe(25);
    expect(info.bitrateKbps).toBeGreaterThan(0);
  });

  it('reports the displayed size of a rotated clip', async () => {
    const clip = await makeClip({ seconds: 1, width: 320, height: 180, rotate: 90 });
    const info = await probe(clip);
    if (!info.isVideo) throw new Error(info.reason);
    expect([90, 270]).toContain(info.rotation);
    expect(info).toMatchObject({ width: 180, height: 320, storedWidth: 320, storedHeight: 180 });
  });

  it('handles odd sizes and clips without sound', async () => {
    const info = await probe(await makeClip({ seconds: 1, width: 427, height: 241, audio: false }));
    if (!info.isVideo) throw new Error(info.reason);
    expect(info).toMatchObject({ width: 427, height: 241, audioCodec: null });
  });

  it('reads the playing time of a recording whose header has none (a browser MediaRecorder WebM) from its last packet', async () => {
    // Written to a pipe, as a recorder writes while it records: the muxer cannot go back to set a duration.
    const file = path.join(dir, 'recorded.webm');
    const { ffmpeg } = await testBinaries();
    const out = execFileSync(ffmpeg.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=30:d=2', '-f', 'lavfi', '-i', 'sine=d=2', '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus', '-f', 'webm', 'pipe:1'], { maxBuffer: 64 * 1024 * 1024 });
    fs.writeFileSync(file, out);
    const info = await probe(file);
    if (!info.isVideo) throw new Error(info.reason);
    expect(Math.abs(info.durationSeconds - 2)).toBeLessThan(0.1);
    expect(info.videoCodec).toBe('vp8');
  });

  it('judges by content, not by name: a text file called .mp4 is not a video', async () => {
    const fake = path.join(dir, 'notes.mp4');
    fs.writeFileSync(fake, 'This is a text file pretending to be a video.\n'.repeat(20));
    const info = await probe(fake);
    expect(info.isVideo).toBe(false);
    if (!info.isVideo) expect(info.reason).toMatch(/not a media file/);
  });

  it('rejects an audio-only file, even one named .mp4', async () => {
    const info = await probe(await makeAudioFile(path.join(dir, 'song.mp4')));
    expect(info).toMatchObject({ isVideo: false, reason: 'no video stream (audio only)' });
  });

  it('rejects still images (png and jpeg), whatever their name', async () => {
    const png = await probe(await makeImage(path.join(dir, 'still.png')));
    expect(png).toMatchObject({ isVideo: false });
    if (!png.isVideo) expect(png.reason).toMatch(/still image/);
    const jpg = await makeImage(path.join(dir, 'still.jpg'));
    const renamed = path.join(dir, 'still-as-video.mp4');
    fs.copyFileSync(jpg, renamed);
    const info = await probe(renamed);
    expect(info.isVideo).toBe(false);
  });

  it('says an empty file is not a video, and throws when there is no file to judge', async () => {
    const empty = path.join(dir, 'empty.mp4');
    fs.writeFileSync(empty, '');
    expect(await probe(empty)).toMatchObject({ isVideo: false, reason: 'the file is empty' });
    await expect(probe(path.join(dir, 'missing.mp4'))).rejects.toThrow(ProbeError);
  });

  it('refuses playlists that would make ffmpeg read other files', async () => {
    const m3u8 = path.join(dir, 'evil.mp4');
    fs.writeFileSync(m3u8, '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n');
    const info = await probe(m3u8);
    expect(info.isVideo).toBe(false);
  });
});

describe('interpretProbe (pure)', () => {
  const base = {
    format: { format_name: 'mov,mp4,m4a,3gp,3g2,mj2', duration: '10.0', bit_rate: '1000000' },
  };
  const video = { codec_type: 'video', codec_name: 'h264', width: 1920, height: 1080, avg_frame_rate: '30000/1001' };

  it('reads rotation from the display matrix (counter-clockwise) or the old rotate tag (clockwise)', () => {
    const fromMatrix = interpretProbe({ ...base, streams: [{ ...video, side_data_list: [{ side_data_type: 'Display Matrix', rotation: -90 }] }] });
    expect(fromMatrix).toMatchObject({ rotation: 90, width: 1080, height: 1920 });
    const fromTag = interpretProbe({ ...base, streams: [{ ...video, tags: { rotate: '270' } }] });
    expect(fromTag).toMatchObject({ rotation: 270, width: 1080, height: 1920 });
    const upsideDown = interpretProbe({ ...base, streams: [{ ...video, tags: { rotate: '180' } }] });
    expect(upsideDown).toMatchObject({ rotation: 180, width: 1920, height: 1080 });
  });

  it('stretches non-square pixels to the displayed width', () => {
    const pal = interpretProbe({ ...base, streams: [{ ...video, width: 720, height: 576, sample_aspect_ratio: '16:15' }] });
    expect(pal).toMatchObject({ width: 768, height: 576, storedWidth: 720 });
  });

  it('does not count cover art in a music file as video', () => {
    const mp3 = interpretProbe({
      format: { format_name: 'mp3', duration: '200' },
      streams: [{ codec_type: 'audio', codec_name: 'mp3' }, { ...video, codec_name: 'mjpeg', disposition: { attached_pic: 1 } }],
    });
    expect(mp3).toMatchObject({ isVideo: false, reason: 'no video stream (audio only)' });
  });

  it('rejects a video stream without playing time', () => {
    expect(interpretProbe({ format: { format_name: 'matroska,webm' }, streams: [video] }).isVideo).toBe(false);
    expect(interpretProbe({ ...base, streams: [{ ...video, nb_frames: '1' }] }).isVideo).toBe(false);
  });

  it('computes the frame rate and bitrate', () => {
    expect(interpretProbe({ ...base, streams: [video] })).toMatchObject({ frameRate: 29.97, bitrateKbps: 1000, audioCodec: null });
  });

  it('reads the field order: interlaced, progressive, or not said (the decoder then flags each frame)', () => {
    const order = (field_order?: string) => (interpretProbe({ ...base, streams: [{ ...video, field_order }] }) as { interlaced: boolean | null }).interlaced;
    expect([order('tt'), order('bb'), order('tb'), order('bt')]).toEqual([true, true, true, true]);
    expect(order('progressive')).toBe(false);
    expect([order('unknown'), order(undefined)]).toEqual([null, null]);
  });
});

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VopEventBus } from '../../server/core/events.js';
import { HlsPresence } from '../../server/processing/playbackView.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';

describe('HlsPresence: which videos have an HLS master playlist, from one listing', () => {
  let dir: string;
  let media: LocalMediaRoot;
  let events: VopEventBus;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-hls-'));
    media = new LocalMediaRoot(dir);
    events = new VopEventBus();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const writePlaylist = (id: string) => {
    fs.mkdirSync(media.path('hls', id), { recursive: true });
    fs.writeFileSync(media.path('hls', id, 'master.m3u8'), '#EXTM3U\n');
  };
  const statusChange = (id: string) => events.emit('video.status', { videoId: id, appId: 'a', from: 6, to: 1, reason: '', at: Date.now() });

  it('asks the disk until the listing is done', async () => {
    const hls = new HlsPresence(new LocalObjectMediaStore(media), events);
    const id = crypto.randomUUID();
    expect(await hls.has(id)).toBe(false);
    writePlaylist(id);
    expect(await hls.has(id)).toBe(true);
  });

  it('answers from the listing, ignoring folders that are not video ids', async () => {
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    writePlaylist(a);
    fs.mkdirSync(path.join(media.path('hls'), `.tmp-${b}`), { recursive: true });
    const hls = new HlsPresence(new LocalObjectMediaStore(media), events);
    await hls.load();
    expect(await hls.has(a)).toBe(true);
    expect(await hls.has(b)).toBe(false);
    // A folder appearing without a status change is not looked for: the listing answers.
    writePlaylist(b);
    expect(await hls.has(b)).toBe(false);
    // A status change makes it ask the disk again, once.
    statusChange(b);
    expect(await hls.has(b)).toBe(true);
    fs.rmSync(media.path('hls', b), { recursive: true });
    expect(await hls.has(b)).toBe(true);
    statusChange(b);
    expect(await hls.has(b)).toBe(false);
  });

  it('asks the disk for a video whose status changed while the area was being listed', async () => {
    const id = crypto.randomUUID();
    const hls = new HlsPresence(new LocalObjectMediaStore(media), events);
    const loading = hls.load();
    statusChange(id);
    writePlaylist(id);
    await loading;
    expect(await hls.has(id)).toBe(true);
  });

  it('works without an HLS folder at all', async () => {
    fs.rmSync(media.path('hls'), { recursive: true, force: true });
    const hls = new HlsPresence(new LocalObjectMediaStore(media), events);
    await hls.load();
    expect(await hls.has(crypto.randomUUID())).toBe(false);
  });

  it('asks the disk for a video whose folder the transcode wrote, before its status event comes', async () => {
    const hls = new HlsPresence(new LocalObjectMediaStore(media), events);
    await hls.load();
    const id = crypto.randomUUID();
    writePlaylist(id);
    // The transcode says so itself: its move to 1 is visible to readers before the event.
    hls.folderChanged(id);
    expect(await hls.has(id)).toBe(true);
  });

  it('forgets a video moved to 0 (deletion)', async () => {
    const id = crypto.randomUUID();
    writePlaylist(id);
    const hls = new HlsPresence(new LocalObjectMediaStore(media), events);
    await hls.load();
    expect(await hls.has(id)).toBe(true);
    events.emit('video.status', { videoId: id, appId: 'a', from: 1, to: 0, reason: '', at: Date.now() });
    expect(await hls.has(id)).toBe(false); // its files go next; nothing is asked of the disk
  });
});

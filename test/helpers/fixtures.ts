import crypto from 'node:crypto';
import type { VideoInfo } from '../../server/media/probe.js';
import type { VideoRecord } from '../../server/storage/types.js';

/** A stored video with every field set, for tests that need exact times or states. */
export function videoRecord(appId: string, overrides: Partial<VideoRecord> = {}): VideoRecord {
  const now = Date.now();
  return {
    id: crypto.randomUUID(),
    appId,
    title: 'fixture',
    description: '',
    tags: '',
    actors: '',
    createUser: '',
    status: 8,
    statusReason: '',
    sourceType: 1,
    sourceUrl: '',
    duration: 0,
    coverFile: '',
    sourceFile: '',
    keepSource: false,
    ladder: '',
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
}

/** The 9 fields of spec 2.2, in the spec's order. */
export const VIDEO_FIELDS = ['Id', 'VideoTitle', 'Description', 'Tags', 'Actors', 'Status', 'CreateDate', 'CreateUser', 'PicSavePath'];

/** `YYYY-MM-DDThh:mm:ss`, as spec 2.2 shapes CreateDate (we send no fraction). */
export const CREATE_DATE_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

/** A random UUID of version 4 (spec 2.2: "a hyphenated 36-character identifier"). */
export const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A probe of a 640x360 H.264/AAC MP4 at 25 fps, SDR, that a first rendition copies; change what a test is about. */
export function videoInfo(overrides: Partial<VideoInfo> = {}): VideoInfo {
  return {
    isVideo: true,
    durationSeconds: 3,
    width: 640,
    height: 360,
    storedWidth: 640,
    storedHeight: 360,
    rotation: 0,
    videoCodec: 'h264',
    videoProfile: 'High',
    videoLevel: 30,
    pixelFormat: 'yuv420p',
    frameRate: 25,
    averageFrameRate: 25,
    nominalFrameRate: 25,
    reorderedFrames: 0,
    interlaced: false,
    audioCodec: 'aac',
    audioChannels: 2,
    bitrateKbps: 900,
    formatName: 'mov,mp4,m4a,3gp,3g2,mj2',
    ...overrides,
  };
}

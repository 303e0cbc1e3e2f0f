/**
 * A master playlist plays to its end in Chromium's own HLS and in hls.js, across a switch and a
 * seek (test/helpers/hlsPlayers.ts), for sources at the frame rates people's uploads have: a
 * screen recording's variable rate, ffmpeg's variable rate with B-frames, OBS's 60 fps. Sources
 * with one keyframe, or one a second, are test/media/hls-players-keyframes.test.ts's.
 */
import { describeMasterPlayback, source } from '../helpers/hlsPlayers.js';

describeMasterPlayback({
  // Screen recorders write no B-frames.
  'a keyframe every 10 s at a variable frame rate (screen recording)': {
    make: () => source('screen', { seconds: 16, fps: 30, vfr: true, keys: ['-bf', '0', '-force_key_frames', 'expr:gte(t,n_forced*10)', '-g', '100000', '-sc_threshold', '0'] }),
    copyListed: true,
  },
  // ffmpeg's own variable-rate encodes have B-frames, which Chromium's HLS stalls on in a copy's
  // MPEG-TS: such a source is encoded, not copied.
  'a variable frame rate with B-frames': { make: () => source('vfr-bframes', { seconds: 8, fps: 30, vfr: true, keys: ['-g', '60'] }), copyListed: false },
  'a keyframe every 2 s at 60 fps (OBS)': { make: () => source('obs', { seconds: 8, fps: 60, keys: ['-g', '120', '-sc_threshold', '0'] }), copyListed: true },
});

/**
 * A master playlist plays to its end in Chromium's own HLS and in hls.js, across a switch and a
 * seek (test/helpers/hlsPlayers.ts), for sources with one keyframe, or one a second (phones).
 * The frame rates people's uploads have are test/media/hls-players-rates.test.ts's.
 */
import { describeMasterPlayback, source } from '../helpers/hlsPlayers.js';

describeMasterPlayback({
  // The clip: one segment a variant, which every variant shares.
  'one keyframe in 6 s': { make: () => source('one-keyframe-6', { seconds: 6, fps: 30, keys: ['-g', '100000', '-keyint_min', '100000', '-sc_threshold', '0'] }), copyListed: true },
  // One 14 s segment is over MAX_ALIGNED_SEGMENT_SECONDS: the copy plays as an MP4 and leaves the
  // adaptive set once the ladder lands, whose rungs are cut at their own keyframes.
  'one keyframe in 14 s': { make: () => source('one-keyframe-14', { seconds: 14, fps: 30, keys: ['-g', '100000', '-keyint_min', '100000', '-sc_threshold', '0'] }), copyListed: false },
  'a keyframe a second (phone)': { make: () => source('phone', { seconds: 8, fps: 30, keys: ['-g', '30'] }), copyListed: true },
});

// hls.js ships no types for its `light` build (no subtitles, alternate audio or DRM: what the
// console's player does not use); its API is the full build's.
declare module 'hls.js/light' {
  export { default } from 'hls.js';
  export * from 'hls.js';
}

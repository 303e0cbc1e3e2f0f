/**
 * The demuxers vop lets ffprobe and ffmpeg open (ffmpeg's names), in one place: the containers
 * people upload, which the source policy takes on (sourcePolicy.ts), and the few formats ffprobe
 * may open only to say what a file is instead (a still image, a song). Nothing else is opened:
 * auto-detection would otherwise let the HLS, DASH, concat or image-sequence demuxers open other
 * files named inside an upload (probe.ts passes these as `-format_whitelist`).
 */

/**
 * The built-in containers: what phones, cameras, screen recorders, browsers, editors, DVDs,
 * camcorders and the usual downloads produce (the sources of test/media/media-sources.test.ts and a few
 * more of their kind).
 */
export const BUILT_IN_CONTAINERS: readonly string[] = Object.freeze([
  'mov', // MP4, MOV, M4V, 3GP, 3G2 (one demuxer)
  'matroska', // MKV, WebM
  'avi',
  'asf', // WMV
  'mpegts', // TS, M2TS, MTS (AVCHD)
  'mpeg', // MPEG-PS: DVD VOB, MPG
  'flv',
  'dv',
  'ogg', // OGV (Theora)
  'mxf', // professional cameras (XDCAM, Canon XF)
]);

/**
 * Single-file formats ffprobe may open to give a clearer refusal ("a still image", "no video
 * stream (audio only)") than "not a media file": none of them reads another file.
 */
export const VERDICT_FORMATS: readonly string[] = Object.freeze(['png_pipe', 'jpeg_pipe', 'bmp_pipe', 'webp_pipe', 'tiff_pipe', 'gif', 'mp3', 'wav', 'aac', 'flac']);

/** A video id as registration makes them (crypto.randomUUID: lowercase, v4-shaped). */
export const VIDEO_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Spec section 3: the values of a video's Status. */
export const VideoStatus = {
  WaitingForDeletion: 0,
  Normal: 1,
  WaitingForDownload: 2,
  Downloading: 3,
  DownloadFailed: 4,
  WaitingForTranscoding: 5,
  Transcoding: 6,
  TranscodingFailed: 7,
  NotUploaded: 8,
} as const;

export type VideoStatusValue = (typeof VideoStatus)[keyof typeof VideoStatus];

/** Spec 4.2: SourceFileGetType. */
export const SourceFileGetType = {
  /** The user uploads the file through a widget; the video starts in status 8. */
  Upload: 1,
  /** The platform downloads SourceFilePath; the video starts in status 2. */
  Download: 2,
} as const;

/**
 * How a video's statusReason starts when its file was found not to be a video (status 7). Intake
 * and transcoding both judge files and write it; intake reads it back, since such an upload may
 * be replaced by another (the video takes a new file), unlike any other failure.
 */
export const NOT_A_VIDEO_REASON = 'not a video: ';

/**
 * The one catalogue of result codes. Every failure the server reports is one of these, thrown as
 * an {@link ApiError} and turned into a response by the error middleware (server/http/errorResponses.ts).
 *
 * The spec fixes only "1"/"OK" (success) and 104 "App SecretKey Error" (section 7); the rest is
 * our decision, published in docs/interface.md (a test checks its table against this file).
 *
 * `httpStatus` is what the admin API answers, and what the spec API answers for transport-level
 * failures (`transport: true`). Application-level failures on the spec API answer HTTP 200: the
 * spec's clients read `AuthMsg.ResultCode`, and its sample calls all answer 200.
 */
export const RESULT_CODES = {
  /** Success. */
  OK: { code: '1', message: 'OK', httpStatus: 200, transport: false },

  // 1xx: authentication (spec section 5)
  /** A required parameter (AppId, Timestamp, Token, or an endpoint's own) is absent or empty. */
  MISSING_PARAMETER: { code: '100', message: 'Missing parameter', httpStatus: 400, transport: false },
  /** No application has this AppId. */
  APP_NOT_FOUND: { code: '101', message: 'App Not Found', httpStatus: 404, transport: false },
  /** The application exists but the admin disabled it. */
  APP_DISABLED: { code: '102', message: 'App Disabled', httpStatus: 403, transport: false },
  /** Timestamp is not a whole number of Unix seconds. */
  TIMESTAMP_MALFORMED: { code: '103', message: 'Timestamp Malformed', httpStatus: 400, transport: false },
  /** The token does not match MD5(Timestamp + AppSecret): the secret as used is wrong (spec 5.6). */
  SECRET_KEY_ERROR: { code: '104', message: 'App SecretKey Error', httpStatus: 401, transport: false },
  /** Timestamp differs from server time by more than 600 seconds (spec 5.2). */
  TIMESTAMP_EXPIRED: { code: '105', message: 'Timestamp Expired', httpStatus: 401, transport: false },
  /** Too many failed authentications from this address or for this AppId; wait and retry. */
  TOO_MANY_AUTH_FAILURES: { code: '106', message: 'Too Many Failed Authentications', httpStatus: 429, transport: false },
  /** An upload credential (from the upload page) is malformed, forged or expired; open the upload page again. */
  UPLOAD_CREDENTIAL_INVALID: { code: '107', message: 'Upload Credential Invalid', httpStatus: 401, transport: false },

  // 2xx: request values
  /** A parameter has a value outside what the endpoint accepts (the message names it). */
  INVALID_PARAMETER: { code: '201', message: 'Invalid Parameter', httpStatus: 400, transport: false },
  /** PageIndex or PageSize is not a whole number in range. */
  INVALID_PAGING: { code: '202', message: 'Invalid Paging', httpStatus: 400, transport: false },

  // 3xx: resources
  /** No video with this Id belongs to the calling application. */
  VIDEO_NOT_FOUND: { code: '301', message: 'Video Not Found', httpStatus: 404, transport: false },
  /**
   * The caller may not read what it asked for (another application's list without a grant), or
   * its API call came from outside the application's API networks (auth/apiNetworks.ts).
   */
  ACCESS_DENIED: { code: '302', message: 'Access Denied', httpStatus: 403, transport: false },
  /** The video is not in a state that allows this (for example, a file was already uploaded). */
  VIDEO_STATE_CONFLICT: { code: '303', message: 'Video State Conflict', httpStatus: 409, transport: false },
  /** Admin API: no status callback delivery has this id. */
  DELIVERY_NOT_FOUND: { code: '304', message: 'Delivery Not Found', httpStatus: 404, transport: false },
  /** Admin API: no job has this id. */
  JOB_NOT_FOUND: { code: '305', message: 'Job Not Found', httpStatus: 404, transport: false },
  /** Admin API: the job is not in a state that allows this (cancel a finished job, reprioritise a running one). */
  JOB_STATE_CONFLICT: { code: '306', message: 'Job State Conflict', httpStatus: 409, transport: false },
  /**
   * The file sent for a video is not a video vop can read (ffprobe's verdict on the stored file,
   * or the upload page's look at an obvious non-video). The file is dropped and the video, in 7,
   * takes another upload.
   */
  NOT_A_VIDEO: { code: '307', message: 'Not A Video', httpStatus: 422, transport: false },
  /** The application registered more videos in the last minute than its rate allows; wait and retry. */
  REGISTRATION_RATE_LIMITED: { code: '308', message: 'Too Many Registrations', httpStatus: 429, transport: false },
  /** The application has as many videos as its quota allows; delete some, or the admin raises it. */
  VIDEO_QUOTA_EXCEEDED: { code: '309', message: 'Video Quota Reached', httpStatus: 403, transport: false },
  /** Admin API: no backup in the backup folder has this name. */
  BACKUP_NOT_FOUND: { code: '310', message: 'Backup Not Found', httpStatus: 404, transport: false },
  /** Admin API: this node is making a backup already; one at a time. */
  BACKUP_IN_PROGRESS: { code: '311', message: 'Backup In Progress', httpStatus: 409, transport: false },
  /**
   * Admin API: a backup into the backup folder failed (the folder cannot be written, the disk is
   * full, the storage could not be read); the message says why, for the admin to fix.
   */
  BACKUP_FAILED: { code: '312', message: 'Backup Failed', httpStatus: 500, transport: false },
  /**
   * A caption file is not UTF-8 text (binary, UTF-16, Latin-1), or not SRT or WebVTT as a player
   * reads it (a malformed cue timing, cues out of order, no cue); the message names the line.
   */
  CAPTION_FILE_INVALID: { code: '313', message: 'Caption File Invalid', httpStatus: 422, transport: false },
  /** A caption file is over the size limit (2 MiB) or holds more cues than a file may (20,000). */
  CAPTION_FILE_TOO_LARGE: { code: '314', message: 'Caption File Too Large', httpStatus: 413, transport: false },
  /** `Language` is not a BCP-47 tag of a known language ("en", "pt-BR", "zh-Hans"). */
  LANGUAGE_INVALID: { code: '315', message: 'Language Tag Invalid', httpStatus: 400, transport: false },
  /** The video has as many caption tracks as it may (20); remove one first. */
  CAPTION_LIMIT_REACHED: { code: '316', message: 'Caption Limit Reached', httpStatus: 409, transport: false },
  /** The video has no caption track with this Id. */
  CAPTION_NOT_FOUND: { code: '317', message: 'Caption Not Found', httpStatus: 404, transport: false },

  // 4xx: transport (these keep their HTTP status on the spec API too)
  /** The request body is over the size limit. */
  PAYLOAD_TOO_LARGE: { code: '401', message: 'Request Body Too Large', httpStatus: 413, transport: true },
  /** The request could not be parsed (bad encoding, broken multipart). */
  MALFORMED_REQUEST: { code: '402', message: 'Malformed Request', httpStatus: 400, transport: true },
  /** The body's content type is not one this endpoint reads. */
  UNSUPPORTED_MEDIA_TYPE: { code: '403', message: 'Unsupported Media Type', httpStatus: 415, transport: true },
  /** No endpoint at this path. */
  NOT_FOUND: { code: '404', message: 'Not Found', httpStatus: 404, transport: true },
  /** The path exists but not with this HTTP method. */
  METHOD_NOT_ALLOWED: { code: '405', message: 'Method Not Allowed', httpStatus: 405, transport: true },
  /** A format this endpoint does not answer in (oEmbed's `format=xml`: oEmbed asks for 501). */
  FORMAT_NOT_SUPPORTED: { code: '406', message: 'Format Not Supported', httpStatus: 501, transport: true },
  /** Admin API: the bearer token is missing or wrong. */
  ADMIN_UNAUTHORIZED: { code: '410', message: 'Admin Token Required', httpStatus: 401, transport: true },
  /** Admin API: called from an address it does not answer (loopback only by default). */
  ADMIN_FORBIDDEN: { code: '411', message: 'Admin API Not Available From This Address', httpStatus: 403, transport: true },
  /**
   * Admin API: a request authorised by the console's session cookie lacks the session's secret
   * (`X-Vop-Console`, handed out at login) or carries another one. The cookie alone reaches every
   * port of the host, so it is never enough; the console logs in again.
   */
  CONSOLE_SECRET_REQUIRED: { code: '412', message: 'Console Session Secret Required', httpStatus: 401, transport: true },
  /**
   * Admin API: a console request came from another origin (`Origin`), or the browser says another
   * site or another port of this host sent it (`Sec-Fetch-Site: cross-site` or `same-site`).
   */
  CROSS_ORIGIN_REFUSED: { code: '413', message: 'Cross-Origin Request Refused', httpStatus: 403, transport: true },

  /**
   * Media: a signed address that is altered, malformed or expired, or a signed application's video
   * asked for at its public address (services/mediaDelivery.ts).
   */
  MEDIA_ADDRESS_REFUSED: { code: '420', message: 'Media Address Refused', httpStatus: 403, transport: true },

  /** Views: more reports from one address in a minute than a player sends (services/viewCounter.ts). */
  TOO_MANY_REPORTS: { code: '421', message: 'Too Many Reports', httpStatus: 429, transport: true },

  // 5xx: server
  /** An unexpected failure; details go to the server log, never to the client. */
  SERVER_ERROR: { code: '500', message: 'Server Error', httpStatus: 500, transport: true },
  /** The server cannot take writes now (shutting down, or its storage failed). */
  SERVICE_UNAVAILABLE: { code: '503', message: 'Service Unavailable', httpStatus: 503, transport: true },
  /**
   * Not enough free disk space to take this upload or download now (the admin must free some),
   * or the caller's application or address already holds its share of it in uploads under way.
   */
  INSUFFICIENT_STORAGE: { code: '507', message: 'Insufficient Storage', httpStatus: 507, transport: true },
} as const satisfies Record<string, ResultCodeDef>;

export interface ResultCodeDef {
  code: string;
  message: string;
  httpStatus: number;
  transport: boolean;
}

export type ResultCodeName = keyof typeof RESULT_CODES;
/** A result code as the wire carries it ("1", "410"…). */
export type ResultCode = (typeof RESULT_CODES)[ResultCodeName]['code'];

/** The one error class every service throws; `detail` refines the catalogue message for people. */
export class ApiError extends Error {
  readonly def: ResultCodeDef;
  readonly detail: string | undefined;

  constructor(name: ResultCodeName, detail?: string) {
    const def = RESULT_CODES[name];
    super(detail ? `${def.message}: ${detail}` : def.message);
    this.name = 'ApiError';
    this.def = def;
    this.detail = detail;
  }

  get code(): string {
    return this.def.code;
  }
}

/**
 * The client went away before its request's body ended (a closed tab, a lost connection): no
 * answer reaches it, and nothing it sent was refused. Logged as cut off, not as a malformed
 * request; answered (to nobody) as one.
 */
export class ClientWentAwayError extends ApiError {
  constructor() {
    super('MALFORMED_REQUEST', 'the client went away before the request ended');
    this.name = 'ClientWentAwayError';
  }
}

// @ts-check
/**
 * vop upload widgets (spec 4.5): the code both forms share. It checks a host page's options,
 * builds the upload page's address, and reads the page's `postMessage` results; window.js and
 * overlay.js each add their own `openUpload`.
 *
 * Why JavaScript when the rest of vop is TypeScript: host pages load the widgets with a plain
 * `<script src>` from vop, on any origin, with no bundler of theirs involved. Spec 4.5 wants each
 * form a self-contained script at its own address, so the server assembles the two it serves at
 * start-up (server/routes/widget.ts): this file, then the form's file, inside one function scope,
 * untouched otherwise. What is reviewed is what runs. `// @ts-check` and the JSDoc types keep the
 * compiler's eye on them (`npx tsc -p widget`): the three files are global scripts to the
 * compiler, so the forms see this file's names, and their own top-level names must differ.
 *
 * Security: results come back by `postMessage`. A form accepts a message only if it comes from
 * the vop origin (the origin the script was loaded from) and from the window or frame it opened
 * (readMessage); the page posts only to the host origin the form passes to it.
 */

/**
 * The options of spec 4.5, as a host page passes them.
 * @typedef {object} UploadOptions
 * @property {string} appId Application id.
 * @property {string | number} timestamp Unix seconds, as used for the token.
 * @property {string} token MD5 of timestamp + secret, computed by the application's server.
 * @property {string} videoId The id registration returned (SourceFileGetType 1).
 * @property {string} [uploadType] `flash` (up to 2 GB, the default) or `silverlight` (up to 6 GB).
 * @property {boolean | string} [needHandleSepcial] True: keep the source file as it is. Default false.
 * @property {boolean | string} [isTop] Overlay form: cover the top-most window. Default true.
 * @property {string | number} [left] Overlay form: distance from the left edge, a CSS length.
 * @property {string | number} [top] Overlay form: distance from the top edge, a CSS length.
 * @property {(videoId: string) => void} [onSuccess] The file is stored and is a video (vop's probe
 *   passed; transcoding follows).
 * @property {(reason: string, detail: FailureDetail) => void} [onFailure] No file became the video's:
 *   the page showed an error (detail.code and detail.message are what it showed), or the user
 *   closed it (detail.cancelled).
 * @property {(reason: string) => void} [onError] A network problem stopped the upload.
 */

/**
 * onFailure's second argument (the first, `reason`, is one line of text, as before).
 * @typedef {object} FailureDetail
 * @property {string} code vop's result code of the error the page showed ("104", "105", "301",
 *   "307" not a video, …); empty for a cancel and for a problem found before the page opened.
 * @property {string} message The error's text as the page showed it after "ErrorMessage : ".
 * @property {boolean} cancelled True when the user closed the upload without a file and the page
 *   had shown no error: a choice, not a failure to report.
 */

/**
 * Options once checked and defaulted.
 * @typedef {object} Settings
 * @property {string} appId
 * @property {string} timestamp
 * @property {string} token
 * @property {string} videoId
 * @property {'flash' | 'silverlight'} uploadType
 * @property {boolean} needHandleSepcial
 * @property {boolean} isTop
 * @property {string | undefined} left
 * @property {string | undefined} top
 */

/**
 * A message from the upload page. `failure`: the page can do nothing more (its error has `code`
 * and `message`); `refused`: a file was refused (not a video) and the page takes another, so the
 * opening is not over; `closed`: the user closed the page.
 * @typedef {{ type: 'success' | 'failure' | 'refused' | 'error' | 'closed', videoId: string, reason: string, code: string, message: string }} PageMessage
 */

/**
 * The callbacks of one opening: success and failure settle it (at most one of them fires),
 * error may fire before either (the user can resume after a network failure). `refused`
 * remembers the page's last refusal, which a later close reports instead of a cancel.
 * @typedef {object} Outcome
 * @property {(videoId: string) => void} success
 * @property {(reason: string, detail: FailureDetail) => void} failure
 * @property {(reason: string, detail: FailureDetail) => void} refused
 * @property {() => void} closed
 * @property {(reason: string) => void} error
 * @property {() => boolean} settled
 */

/** Marks vop's messages among whatever else the window receives. */
const MESSAGE_TAG = 'vop-upload';

/**
 * The address of this script, from which the upload page's address follows. Read at load
 * time: `document.currentScript` is set only while the script first runs.
 * @param {string} fileName
 * @returns {URL | undefined}
 */
function findScriptUrl(fileName) {
  const current = document.currentScript;
  if (current instanceof HTMLScriptElement && current.src) return new URL(current.src);
  const scripts = document.getElementsByTagName('script');
  for (let i = scripts.length - 1; i >= 0; i--) {
    const src = scripts[i]?.src;
    if (src && new URL(src).pathname.endsWith('/' + fileName)) return new URL(src);
  }
  return undefined;
}

/**
 * Calls a host callback; an exception in it is reported as uncaught, not swallowed, and does
 * not stop the widget from cleaning up.
 * @param {((...args: any[]) => void) | undefined} fn
 * @param {unknown[]} args
 */
function callHost(fn, ...args) {
  if (typeof fn !== 'function') return;
  try {
    fn(...args);
  } catch (err) {
    setTimeout(() => {
      throw err;
    });
  }
}

/**
 * @param {UploadOptions} options
 * @returns {Outcome}
 */
function makeOutcome(options) {
  let settled = false;
  /** @type {{ reason: string, detail: FailureDetail } | undefined} */
  let lastRefusal;
  /** @type {Outcome['failure']} */
  const failure = (reason, detail) => {
    if (settled) return;
    settled = true;
    callHost(options.onFailure, reason, detail);
  };
  return {
    success(videoId) {
      if (settled) return;
      settled = true;
      callHost(options.onSuccess, videoId);
    },
    failure,
    refused(reason, detail) {
      lastRefusal = { reason, detail };
    },
    closed() {
      if (lastRefusal) failure(lastRefusal.reason, lastRefusal.detail);
      else failure(CLOSED_WITHOUT_FILE, { code: '', message: CLOSED_WITHOUT_FILE, cancelled: true });
    },
    error(reason) {
      if (!settled) callHost(options.onError, reason);
    },
    settled: () => settled,
  };
}

/**
 * Reports a problem found before anything opened: on the console, and to onFailure (later, so
 * that callbacks always run after openUpload has returned).
 * @param {unknown} options
 * @param {string} reason
 */
function failEarly(options, reason) {
  console.error(`vop openUpload: ${reason}`);
  const onFailure = options && typeof options === 'object' ? /** @type {UploadOptions} */ (options).onFailure : undefined;
  setTimeout(() => callHost(onFailure, reason, { code: '', message: reason, cancelled: false }));
}

/**
 * Spec 4.5's bool options; servers that render their values often write "True" or "False".
 * @param {unknown} value
 * @param {boolean} fallback
 * @returns {boolean | undefined} undefined when the value is not a bool
 */
function readBool(value, fallback) {
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  return undefined;
}

/**
 * A CSS length (`120px`, `10%`, `2rem`); a bare number means pixels.
 * @param {unknown} value
 * @returns {string | null | undefined} undefined when absent, null when not a length
 */
function readLength(value) {
  if (value === undefined || value === null || value === '') return undefined;
  let text = typeof value === 'number' && Number.isFinite(value) ? `${value}px` : typeof value === 'string' ? value.trim() : '';
  if (/^\d+(\.\d+)?$/.test(text)) text += 'px'; // "120", as older integrations write it
  if (!text) return null;
  if (typeof CSS !== 'undefined' && typeof CSS.supports === 'function' && !CSS.supports('left', text)) return null;
  return text;
}

/**
 * Checks the options of spec 4.5 and fills the defaults. The overlay's own options (isTop,
 * left, top) are checked only for the overlay: the window form ignores them, as the spec says.
 * @param {unknown} options
 * @param {'window' | 'overlay'} form
 * @returns {{ settings: Settings } | { problem: string }}
 */
function readOptions(options, form) {
  if (!options || typeof options !== 'object') return { problem: 'openUpload takes one options object' };
  const o = /** @type {Record<string, unknown>} */ (options);
  /** @type {Record<string, string>} */
  const required = {};
  for (const name of ['appId', 'timestamp', 'token', 'videoId']) {
    const v = o[name];
    const text = typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
    if (!text) return { problem: `option ${name} is required (a non-empty string)` };
    required[name] = text;
  }
  for (const name of ['onSuccess', 'onFailure', 'onError']) {
    if (o[name] !== undefined && o[name] !== null && typeof o[name] !== 'function') return { problem: `option ${name} must be a function` };
  }
  const uploadType = o.uploadType === undefined || o.uploadType === null || o.uploadType === '' ? 'flash' : String(o.uploadType).trim().toLowerCase();
  if (uploadType !== 'flash' && uploadType !== 'silverlight') return { problem: `option uploadType must be "flash" or "silverlight", not ${JSON.stringify(o.uploadType)}` };
  const needHandleSepcial = readBool(o.needHandleSepcial, false);
  if (needHandleSepcial === undefined) return { problem: 'option needHandleSepcial must be true or false' };
  const overlay = form === 'overlay';
  const isTop = overlay ? readBool(o.isTop, true) : true;
  if (isTop === undefined) return { problem: 'option isTop must be true or false' };
  const left = overlay ? readLength(o.left) : undefined;
  if (left === null) return { problem: `option left must be a CSS length such as "120px", not ${JSON.stringify(o.left)}` };
  const top = overlay ? readLength(o.top) : undefined;
  if (top === null) return { problem: `option top must be a CSS length such as "80px", not ${JSON.stringify(o.top)}` };
  return {
    settings: {
      appId: /** @type {string} */ (required.appId),
      timestamp: /** @type {string} */ (required.timestamp),
      token: /** @type {string} */ (required.token),
      videoId: /** @type {string} */ (required.videoId),
      uploadType,
      needHandleSepcial,
      isTop,
      left,
      top,
    },
  };
}

/**
 * The first checks of an openUpload call, the same in both forms: the options, then where this
 * script was loaded from. A problem goes to failEarly, and the answer is undefined.
 * @param {unknown} options
 * @param {'window' | 'overlay'} form
 * @param {URL | undefined} scriptUrl what findScriptUrl found when the script loaded
 * @param {string} scriptFile the file name the script is served under
 * @returns {{ settings: Settings, scriptUrl: URL } | undefined}
 */
function checkOpening(options, form, scriptUrl, scriptFile) {
  const read = readOptions(options, form);
  if ('problem' in read) {
    failEarly(options, read.problem);
    return undefined;
  }
  if (!scriptUrl) {
    failEarly(options, `cannot tell where ${scriptFile} was loaded from; load it with <script src="…/${scriptFile}">`);
    return undefined;
  }
  return { settings: read.settings, scriptUrl };
}

/**
 * The upload page's address: `upload`, next to this script, with the spec's values, the form
 * and the origin the page may post its results to.
 * @param {URL} scriptUrl
 * @param {Settings} s
 * @param {'window' | 'overlay'} mode
 * @param {string} hostOrigin
 */
function uploadPageUrl(scriptUrl, s, mode, hostOrigin) {
  const url = new URL('upload', scriptUrl);
  url.search = new URLSearchParams({
    appId: s.appId,
    timestamp: s.timestamp,
    token: s.token,
    videoId: s.videoId,
    uploadType: s.uploadType,
    needHandleSepcial: String(s.needHandleSepcial),
    mode,
    origin: hostOrigin,
  }).toString();
  return url.toString();
}

/**
 * The page's message if `event` comes from the vop origin, from the window we opened, and has
 * the expected shape; otherwise undefined (ignored).
 * @param {MessageEvent} event
 * @param {string} vopOrigin
 * @param {unknown} source the pop-up, or the layer's iframe window
 * @returns {PageMessage | undefined}
 */
function readMessage(event, vopOrigin, source) {
  if (event.origin !== vopOrigin || !source || event.source !== source) return undefined;
  const d = event.data;
  if (!d || typeof d !== 'object' || d.tag !== MESSAGE_TAG) return undefined;
  if (!['success', 'failure', 'refused', 'error', 'closed'].includes(d.type)) return undefined;
  /** @param {unknown} v */
  const text = (v) => (typeof v === 'string' ? v.slice(0, 1000) : '');
  return { type: d.type, videoId: text(d.videoId), reason: text(d.reason), code: /^\d{1,4}$/.test(d.code) ? d.code : '', message: text(d.message) };
}

/**
 * Acts on one page message; true when the opening is over (the page asked to be closed).
 * @param {PageMessage} message
 * @param {Settings} s
 * @param {Outcome} outcome
 */
function dispatch(message, s, outcome) {
  const reason = message.reason || 'the upload failed';
  const detail = { code: message.code, message: message.message || reason, cancelled: false };
  if (message.type === 'success' && message.videoId === s.videoId) outcome.success(s.videoId);
  else if (message.type === 'failure') outcome.failure(reason, detail);
  else if (message.type === 'refused') outcome.refused(reason, detail);
  else if (message.type === 'error') outcome.error(message.reason || 'network error');
  return message.type === 'closed';
}

/** The reason onFailure gets when the user closes before a file was stored, and no error showed. */
const CLOSED_WITHOUT_FILE = 'the upload was closed before a file was uploaded';

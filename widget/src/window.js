// @ts-check
/**
 * vop upload widget, window form (spec 4.5, served as `initUploadWidget.js` after shared.js, in
 * one function scope): `openUpload(options)` opens vop's upload page in a pop-up window; the page
 * reports back by `postMessage`, which this form accepts only from that pop-up.
 */

/** The file name this script is served under (used when `document.currentScript` is unset). */
const WINDOW_SCRIPT_FILE = 'initUploadWidget.js';
/** How often to look whether the user closed the pop-up (a cross-origin window sends no event). */
const CLOSED_POLL_MS = 400;

const windowScriptUrl = findScriptUrl(WINDOW_SCRIPT_FILE);

/** @type {{ popup: Window, close: () => void } | undefined} */
let currentPopup;

/**
 * Spec 4.5, window form: opens the upload page in a pop-up. Call it from a click handler, or
 * the browser's pop-up blocker may refuse (onFailure then says so).
 * @param {UploadOptions} options
 * @returns {{ close(): void }} closes the pop-up (onFailure fires if no file was stored)
 */
function openUploadWindow(options) {
  const noop = { close() {} };
  const checked = checkOpening(options, 'window', windowScriptUrl, WINDOW_SCRIPT_FILE);
  if (!checked) return noop;
  const { settings: s, scriptUrl } = checked;
  const hostOrigin = window.location.origin;
  if (!/^https?:\/\//.test(hostOrigin)) {
    failEarly(options, 'the host page must be served over http or https (its origin receives the results)');
    return noop;
  }
  if (currentPopup) {
    currentPopup.popup.focus();
    failEarly(options, 'an upload window is already open');
    return noop;
  }

  const width = 640;
  const height = 600;
  const left = Math.max(0, Math.round(window.screenX + (window.outerWidth - width) / 2));
  const top = Math.max(0, Math.round(window.screenY + (window.outerHeight - height) / 2));
  // No `noopener`: the page needs window.opener to post its results here.
  const popup = window.open(uploadPageUrl(scriptUrl, s, 'window', hostOrigin), '_blank', `popup=yes,width=${width},height=${height},left=${left},top=${top}`);
  if (!popup) {
    failEarly(options, 'the browser blocked the upload pop-up; call openUpload from a click handler');
    return noop;
  }

  const vopOrigin = scriptUrl.origin;
  const outcome = makeOutcome(options);

  /** @param {MessageEvent} event */
  const onMessage = (event) => {
    const message = readMessage(event, vopOrigin, popup);
    if (message && dispatch(message, s, outcome)) close();
  };
  const timer = setInterval(() => {
    if (popup.closed) close();
  }, CLOSED_POLL_MS);

  /** Stops listening, closes the pop-up if still open, and settles as failure if no file came. */
  const close = () => {
    if (currentPopup?.popup !== popup) return;
    currentPopup = undefined;
    clearInterval(timer);
    window.removeEventListener('message', onMessage);
    if (!popup.closed) popup.close();
    // The page's last refusal (not a video), if any; otherwise the user's cancel.
    outcome.closed();
  };

  window.addEventListener('message', onMessage);
  currentPopup = { popup, close };
  return { close: () => close() };
}

/** @type {any} */ (window).openUpload = openUploadWindow;

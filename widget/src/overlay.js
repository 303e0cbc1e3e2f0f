// @ts-check
/**
 * vop upload widget, overlay form (spec 4.5, served as `initUploadABoxWidget.js` after shared.js,
 * in one function scope): `openUpload(options)` opens vop's upload page in an iframe on a layer
 * over the current page; the page reports back by `postMessage`, which this form accepts only
 * from that iframe, and posts only to the origin of the window that holds the layer. The layer
 * honours isTop, left and top, closes with its close button or Escape, and leaves no element or
 * listener behind, so it can be opened again.
 *
 * The layer's elements are styled through the CSSOM (no <style>, no style attribute markup), so a
 * host page's Content-Security-Policy without 'unsafe-inline' styles does not break it.
 */

/** The file name this script is served under (used when `document.currentScript` is unset). */
const OVERLAY_SCRIPT_FILE = 'initUploadABoxWidget.js';
/** Above anything a host page is likely to stack. */
const LAYER_Z_INDEX = '2147483647';

const overlayScriptUrl = findScriptUrl(OVERLAY_SCRIPT_FILE);

/** @type {{ close: () => void, frame: HTMLIFrameElement } | undefined} */
let currentLayer;

/**
 * Spec 4.5 isTop: the window whose page the layer covers. The top-most window when asked and
 * reachable (same origin); otherwise, or when the top is on another origin, this frame.
 * @param {boolean} isTop
 * @returns {Window}
 */
function layerWindow(isTop) {
  if (!isTop || window.top === window || !window.top) return window;
  try {
    const top = window.top;
    // Reading another origin's location throws a SecurityError: then cover this frame.
    if (top.location.origin === window.location.origin && top.document.body) return top;
  } catch {
    // cross-origin top
  }
  return window;
}

/**
 * Sets inline styles through the CSSOM, with !important so that host style sheets do not leak in.
 * @param {HTMLElement} el
 * @param {Record<string, string>} styles property names in CSS (kebab-case) form
 */
function style(el, styles) {
  for (const [name, value] of Object.entries(styles)) el.style.setProperty(name, value, 'important');
}

/**
 * Spec 4.5, overlay form: opens the upload page in a layer over the current page (or over the
 * top-most window, see isTop).
 * @param {UploadOptions} options
 * @returns {{ close(): void }} closes the layer (onFailure fires if no file was stored)
 */
function openUploadOverlay(options) {
  const noop = { close() {} };
  const checked = checkOpening(options, 'overlay', overlayScriptUrl, OVERLAY_SCRIPT_FILE);
  if (!checked) return noop;
  const { settings: s, scriptUrl } = checked;
  if (currentLayer) {
    currentLayer.frame.focus();
    failEarly(options, 'an upload layer is already open');
    return noop;
  }
  const host = layerWindow(s.isTop);
  const hostOrigin = host.location.origin;
  if (!/^https?:\/\//.test(hostOrigin)) {
    failEarly(options, 'the host page must be served over http or https (its origin receives the results)');
    return noop;
  }

  const doc = host.document;
  const previousFocus = doc.activeElement;
  const vopOrigin = scriptUrl.origin;
  const outcome = makeOutcome(options);

  const layer = doc.createElement('div');
  layer.setAttribute('data-vop-upload-layer', '');
  style(layer, { position: 'fixed', inset: '0', margin: '0', padding: '0', 'z-index': LAYER_Z_INDEX, background: 'rgba(15, 23, 42, 0.55)' });

  const box = doc.createElement('div');
  box.setAttribute('role', 'dialog');
  box.setAttribute('aria-modal', 'true');
  box.setAttribute('aria-label', 'Upload a video');
  box.setAttribute('data-vop-upload-box', '');
  // Spec 4.5 left/top: the box's distance from the window's edges; centred when absent.
  const shift = `translate(${s.left === undefined ? '-50%' : '0'}, ${s.top === undefined ? '-50%' : '0'})`;
  style(box, {
    position: 'fixed',
    left: s.left ?? '50%',
    top: s.top ?? '50%',
    transform: shift,
    width: 'min(640px, calc(100vw - 16px))',
    height: 'min(560px, calc(100vh - 16px))',
    margin: '0',
    padding: '0',
    'box-sizing': 'border-box',
    background: '#ffffff',
    'border-radius': '10px',
    'box-shadow': '0 20px 60px rgba(0, 0, 0, 0.35)',
    overflow: 'hidden',
  });

  const frame = doc.createElement('iframe');
  frame.title = 'Upload a video';
  frame.src = uploadPageUrl(scriptUrl, s, 'overlay', hostOrigin);
  style(frame, { display: 'block', width: '100%', height: '100%', border: '0', margin: '0', padding: '0', background: '#ffffff' });

  const closeButton = doc.createElement('button');
  closeButton.type = 'button';
  closeButton.textContent = '\u00d7';
  closeButton.setAttribute('aria-label', 'Close');
  closeButton.setAttribute('data-vop-upload-close', '');
  style(closeButton, {
    position: 'absolute',
    top: '8px',
    right: '8px',
    width: '32px',
    height: '32px',
    margin: '0',
    padding: '0',
    border: '0',
    'border-radius': '16px',
    background: 'rgba(15, 23, 42, 0.08)',
    color: '#0f172a',
    font: '22px/32px system-ui, sans-serif',
    'text-align': 'center',
    cursor: 'pointer',
  });

  /** @param {MessageEvent} event */
  const onMessage = (event) => {
    const message = readMessage(event, vopOrigin, frame.contentWindow);
    if (message && dispatch(message, s, outcome)) close();
  };
  /** @param {KeyboardEvent} event */
  const onKeyDown = (event) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    event.stopPropagation();
    close();
  };
  const onClick = () => close();
  // If this frame goes away while its layer covers the top window, take the layer with it.
  const onLeave = () => close();

  /** Removes the layer and every listener, gives focus back, settles as failure if no file came. */
  const close = () => {
    if (currentLayer?.frame !== frame) return;
    currentLayer = undefined;
    host.removeEventListener('message', onMessage);
    doc.removeEventListener('keydown', onKeyDown, true);
    closeButton.removeEventListener('click', onClick);
    if (host !== window) window.removeEventListener('pagehide', onLeave);
    layer.remove();
    if (previousFocus && 'focus' in previousFocus && typeof previousFocus.focus === 'function') previousFocus.focus();
    // The page's last refusal (not a video), if any; otherwise the user's cancel.
    outcome.closed();
  };

  host.addEventListener('message', onMessage);
  doc.addEventListener('keydown', onKeyDown, true);
  closeButton.addEventListener('click', onClick);
  if (host !== window) window.addEventListener('pagehide', onLeave);

  box.append(frame, closeButton);
  layer.append(box);
  (doc.body ?? doc.documentElement).append(layer);
  frame.focus();
  currentLayer = { close, frame };
  return { close: () => close() };
}

/** @type {any} */ (window).openUpload = openUploadOverlay;

// @ts-check
/**
 * The widget's error page (spec 4.5: `ErrorCode : <code>, ErrorMessage : <message>`), as a
 * browser gets it: the page shows the line, and this script posts its code and message to the
 * host page, to the host origin only, so that onFailure says why (server/widget/uploadPage.ts).
 * Posted once, as soon as the page shows: there is nothing more it can do.
 */
(function () {
  'use strict';

  const block = document.getElementById('vop-error');
  if (!block) return;
  /** @type {{ code: string, message: string, hostOrigin: string, mode: 'window' | 'overlay' }} */
  const data = JSON.parse(block.textContent ?? '{}');
  // The window the widget opened can be closed from here (the overlay has its own close button).
  const close = document.getElementById('close');
  if (close && data.mode === 'window' && window.opener) {
    close.hidden = false;
    close.addEventListener('click', () => window.close());
  }
  const target = data.mode === 'overlay' ? (window.parent !== window ? window.parent : null) : window.opener;
  if (!target || !data.hostOrigin) return;
  const reason = `ErrorCode : ${data.code}, ErrorMessage : ${data.message}`;
  try {
    target.postMessage({ tag: 'vop-upload', type: 'failure', videoId: '', reason, code: data.code, message: data.message }, data.hostOrigin);
  } catch {
    // The host navigated away: nobody is listening any more.
  }
})();

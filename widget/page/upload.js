// @ts-check
/**
 * The upload page behind both widgets (spec 4.5): pick or drop a file, upload it with tus
 * (tus-js-client) on the session credential the server embedded, show progress, and report the
 * outcome to the host page by `postMessage`, to the host origin only.
 *
 * Plain JavaScript for the same reason as the widget scripts: it is served as it is, with no build
 * step, and checked by `npx tsc -p widget`.
 *
 * Outcome messages (`{ tag: 'vop-upload', type, videoId, reason, code, message }`; reason is the
 * line the page showed, code and message its `ErrorCode` and `ErrorMessage` when it had them):
 * - success: the server answered the last PATCH: the whole file is stored and its probe found a
 *   video (the server answers that PATCH only after the probe).
 * - refused: the file is not a video: the page's quick look said so before uploading (a name
 *   such as .txt or .pdf, or text bytes), or the server's probe did on the last PATCH (422, code
 *   307). The page takes another file; the host hears of the refusal only if the user closes.
 * - failure: the server refused the upload for good (a 4xx other than 409/423: the credential
 *   expired, the file is too large, the video already has a file). The page offers nothing more.
 * - error: the network (or the server, 5xx) failed and tus-js-client's retries ran out. The upload
 *   stays resumable: Resume, or coming back online, carries on from the server's offset.
 * - closed: the user closed the page (Close, or Escape in the overlay).
 */
(function () {
  'use strict';

  /**
   * What the server embedded in `#vop-session`.
   * @typedef {object} Session
   * @property {string} videoId
   * @property {string} credential Sent as X-Upload-Credential: scoped to this video, expiring.
   * @property {number} expiresAt
   * @property {number} maxBytes Largest file for this uploadType.
   * @property {'flash' | 'silverlight'} uploadType
   * @property {boolean} needHandleSepcial
   * @property {string} hostOrigin The only origin this page posts its results to.
   * @property {'window' | 'overlay'} mode
   * @property {string} endpoint The tus creation URL, relative to this page.
   * @property {number} chunkSize Bytes per PATCH.
   * @property {number[]} retryDelays Milliseconds before each retry of a failed request.
   * @property {{ code: string, message: string }} notAVideo vop's result code for a file that is
   *   not a video (the page uses it for its own quick refusals too).
   */

  const MESSAGE_TAG = 'vop-upload';

  /** @param {string} id */
  function $(id) {
    const el = document.getElementById(id);
    if (!el) throw new Error(`upload page: #${id} is missing`);
    return el;
  }

  /** @type {Session} */
  const session = JSON.parse($('vop-session').textContent ?? '{}');
  // Once open, the page's address carries the scoped credential instead of the spec's token: a
  // reload then reopens this page (and resumes the upload) for as long as the credential lasts,
  // not just the timestamp's 10 minutes, and the token no longer sits in the address bar.
  {
    const here = new URL(window.location.href);
    const kept = new URLSearchParams();
    for (const name of ['mode', 'origin', 'chunkSize']) {
      const value = here.searchParams.get(name);
      if (value !== null) kept.set(name, value);
    }
    kept.set('session', session.credential);
    window.history.replaceState(null, '', `${here.pathname}?${kept}`);
  }

  /** The tus endpoint as an absolute URL (tus-js-client resolves upload URLs against it). */
  const endpoint = new URL(session.endpoint, window.location.href).href;

  const ui = {
    limit: $('limit'),
    drop: $('drop'),
    input: /** @type {HTMLInputElement} */ ($('file')),
    transfer: $('transfer'),
    fileName: $('file-name'),
    fileSize: $('file-size'),
    bar: $('bar'),
    fill: $('fill'),
    percent: $('percent'),
    speed: $('speed'),
    eta: $('eta'),
    message: $('message'),
    pause: /** @type {HTMLButtonElement} */ ($('pause')),
    resume: /** @type {HTMLButtonElement} */ ($('resume')),
    cancel: /** @type {HTMLButtonElement} */ ($('cancel')),
    close: /** @type {HTMLButtonElement} */ ($('close')),
  };

  /**
   * idle: no file yet (or cancelled); preparing: looking for a previous upload of the file;
   * uploading; paused; stalled: retries ran out, resumable; done; failed: refused for good.
   * @typedef {'idle' | 'preparing' | 'uploading' | 'paused' | 'stalled' | 'done' | 'failed'} State
   */
  /** @type {State} */
  let state = 'idle';
  /** @type {import('tus-js-client').Upload | undefined} */
  let upload;
  /** Progress samples of the last few seconds, for the speed and the time left. */
  /** @type {Array<{ t: number, bytes: number }>} */
  let samples = [];

  // ---- results to the host page ----

  /**
   * Posts to the host page, to its origin only (never '*'): the opener in the window form, the
   * parent in the overlay form.
   * @param {'success' | 'failure' | 'refused' | 'error' | 'closed'} type
   * @param {string} [reason]
   * @param {{ code: string, message: string }} [error] the ErrorCode and ErrorMessage shown
   */
  function notify(type, reason = '', error = { code: '', message: '' }) {
    const target = session.mode === 'overlay' ? (window.parent !== window ? window.parent : null) : window.opener;
    if (!target || !session.hostOrigin) return;
    try {
      target.postMessage({ tag: MESSAGE_TAG, type, videoId: session.videoId, reason, code: error.code, message: error.message }, session.hostOrigin);
    } catch {
      // The host navigated away: nobody is listening any more.
    }
  }

  // ---- display ----

  /** @param {number} n */
  function formatBytes(n) {
    const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return i === 0 ? `${n} bytes` : `${n.toFixed(n >= 100 ? 0 : 1)} ${units[i]}`;
  }

  /** @param {number} seconds */
  function formatDuration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  }

  /**
   * @param {string} text
   * @param {'' | 'ok' | 'warn' | 'bad'} [tone]
   */
  function say(text, tone = '') {
    ui.message.textContent = text;
    ui.message.className = `message ${tone}`.trim();
  }

  /** @param {State} next */
  function setState(next) {
    state = next;
    document.body.dataset.state = next;
    const busy = next === 'preparing' || next === 'uploading' || next === 'paused' || next === 'stalled';
    ui.pause.hidden = next !== 'uploading';
    ui.resume.hidden = next !== 'paused' && next !== 'stalled';
    ui.cancel.hidden = !busy;
    const locked = busy || next === 'done' || next === 'failed';
    ui.input.disabled = locked;
    ui.drop.classList.toggle('disabled', locked);
    ui.transfer.classList.toggle('done', next === 'done');
  }

  /**
   * @param {number} sent
   * @param {number} total
   */
  function showProgress(sent, total) {
    const pct = total > 0 ? Math.floor((sent / total) * 100) : 0;
    ui.fill.style.width = `${pct}%`;
    ui.bar.setAttribute('aria-valuenow', String(pct));
    ui.percent.textContent = `${pct}%`;
    const now = performance.now();
    samples.push({ t: now, bytes: sent });
    while (samples.length > 2 && now - (samples[0]?.t ?? now) > 5000) samples.shift();
    const first = samples[0];
    const elapsed = first ? (now - first.t) / 1000 : 0;
    if (first && elapsed >= 0.5 && sent > first.bytes) {
      const speed = (sent - first.bytes) / elapsed;
      ui.speed.textContent = `${formatBytes(Math.round(speed))}/s`;
      ui.eta.textContent = sent < total ? `${formatDuration((total - sent) / speed)} left` : '';
    }
  }

  function clearFigures() {
    samples = [];
    ui.speed.textContent = '';
    ui.eta.textContent = '';
  }

  // ---- files that are not videos ----

  /**
   * Names that are never videos: documents, archives, programs, still images, sound. Refused
   * before a byte is sent (the server would refuse them after the whole upload). Names that
   * could be either (.ts is also TypeScript, .ogg may hold video, .gif moves) are left to the
   * server's probe.
   */
  const NOT_VIDEO_EXTENSIONS = new Set(
    ('txt md csv tsv json xml html htm log ini yaml yml pdf doc docx xls xlsx ppt pptx odt ods odp rtf epub ' +
      'zip rar 7z gz bz2 xz tar tgz exe msi dmg apk deb rpm iso jpg jpeg png bmp heic heif webp tif tiff svg psd ' +
      'mp3 wav flac m4a aac wma opus').split(' '),
  );

  /**
   * A quick look at a file the user chose: why it is obviously not a video, or '' (then the
   * server's probe decides). By its name, or by its first 4 KiB being text: every video
   * container has binary bytes in its first 4 KiB (box sizes, sync words, NUL bytes).
   * @param {File} file
   * @returns {Promise<string>}
   */
  async function obviousNonVideo(file) {
    const ext = (/\.([^./\\]+)$/.exec(file.name)?.[1] ?? '').toLowerCase();
    if (NOT_VIDEO_EXTENSIONS.has(ext)) return `"${file.name}" is a .${ext} file`;
    let head;
    try {
      head = new Uint8Array(await file.slice(0, 4096).arrayBuffer());
    } catch {
      return ''; // unreadable here: let the server judge
    }
    return looksLikeText(head) ? `"${file.name}" is a text file` : '';
  }

  /** @param {Uint8Array} bytes */
  function looksLikeText(bytes) {
    if (bytes.length === 0) return false;
    for (const b of bytes) {
      // Tab, line feed, form feed, carriage return and escape are text; other controls and NUL are not.
      if (b < 0x20 && b !== 9 && b !== 10 && b !== 12 && b !== 13 && b !== 27) return false;
    }
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: true }); // the cut may split a character
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The spec's error line (`ErrorCode : <code>, ErrorMessage : <message>`) split, or undefined.
   * @param {string} text
   */
  function readErrorText(text) {
    const m = /^ErrorCode : (\d{1,4}), ErrorMessage : (.*)$/s.exec(text.trim());
    return m && text.length <= 1000 ? { code: /** @type {string} */ (m[1]), message: /** @type {string} */ (m[2]) } : undefined;
  }

  /**
   * The chosen file is not a video: say so with vop's error line, tell the host (it reports this
   * if the user then closes), and take another file for the same video.
   * @param {File} file
   * @param {{ code: string, message: string }} error
   */
  function refuseFile(file, error) {
    upload = undefined;
    clearFigures();
    setState('idle');
    ui.transfer.hidden = true;
    ui.input.value = '';
    const line = `ErrorCode : ${error.code}, ErrorMessage : ${error.message}`;
    say(`"${file.name}" was not accepted: ${line}. Choose a video file.`, 'bad');
    notify('refused', line, error);
  }

  // ---- the upload ----

  /**
   * Keys the resumable state in localStorage: the same file for the same video and endpoint
   * resumes after a reload; another video never picks up this one's upload.
   * @param {File} file
   */
  function fingerprint(file) {
    return Promise.resolve(['vop', session.videoId, file.name, file.type, file.size, file.lastModified, endpoint].join('::'));
  }

  /**
   * tus-js-client's own rule (retry unless a 4xx other than 409/423, and only while online), plus
   * a message so that the user sees why nothing moves.
   * @param {import('tus-js-client').DetailedError} err
   * @param {number} attempt
   */
  function shouldRetry(err, attempt) {
    const status = err.originalResponse ? err.originalResponse.getStatus() : 0;
    const retry = (status < 400 || status >= 500 || status === 409 || status === 423) && navigator.onLine !== false;
    if (retry) {
      clearFigures();
      say(status === 0 ? `Connection lost; retrying (attempt ${attempt + 1})…` : `The server is busy; retrying (attempt ${attempt + 1})…`, 'warn');
    }
    return retry;
  }

  /**
   * @param {Error} err
   * @param {File} file
   */
  function onUploadError(err, file) {
    const response = /** @type {import('tus-js-client').DetailedError} */ (err).originalResponse;
    const status = response ? response.getStatus() : 0;
    clearFigures();
    if (status === 0 || status >= 500 || status === 409 || status === 423) {
      setState('stalled');
      const reason = status === 0 ? 'network error: the connection to the server was lost' : `the server failed (HTTP ${status})`;
      say(`The upload stopped: ${reason}. It resumes where it stopped when you press Resume${status === 0 ? ' or the connection comes back' : ''}.`, 'bad');
      notify('error', reason);
      return;
    }
    // vop's tus endpoint answers a refusal with the spec's text (`ErrorCode : …, ErrorMessage : …`).
    const body = response?.getBody()?.trim() ?? '';
    const error = readErrorText(body);
    // The server's probe found no video in the stored file (the last PATCH): another file may do.
    if (error && error.code === session.notAVideo.code) return refuseFile(file, error);
    setState('failed');
    const reason =
      (error && body) ||
      (status === 401 || status === 403
        ? 'the upload session is no longer valid; close this window and open the upload again'
        : status === 413
          ? `the file is larger than the server accepts for ${session.uploadType} uploads`
          : `the server refused the upload (HTTP ${status})`);
    say(`Upload failed: ${reason}.`, 'bad');
    notify('failure', reason, error);
  }

  /** @param {File} file */
  async function startFile(file) {
    if (state !== 'idle') {
      say('An upload is already under way; cancel it first to choose another file.', 'warn');
      return;
    }
    if (file.size === 0) return refuseFile(file, { ...session.notAVideo, message: `${session.notAVideo.message}: "${file.name}" is empty` });
    if (file.size > session.maxBytes) {
      say(`"${file.name}" is ${formatBytes(file.size)}; ${session.uploadType} uploads take at most ${formatBytes(session.maxBytes)}. Choose a smaller file.`, 'bad');
      return;
    }
    setState('preparing');
    say('Checking the file…');
    const why = await obviousNonVideo(file);
    if (/** @type {State} */ (state) !== 'preparing') return; // cancelled or closed meanwhile (the await let them run)
    if (why) return refuseFile(file, { ...session.notAVideo, message: `${session.notAVideo.message}: ${why}` });
    ui.fileName.textContent = file.name;
    ui.fileSize.textContent = formatBytes(file.size);
    ui.transfer.hidden = false;
    showProgress(0, file.size);
    clearFigures();

    const current = new tus.Upload(file, {
      endpoint,
      chunkSize: session.chunkSize,
      retryDelays: session.retryDelays,
      headers: { 'X-Upload-Credential': session.credential },
      metadata: {
        filename: file.name,
        videoId: session.videoId,
        uploadType: session.uploadType,
        needHandleSepcial: String(session.needHandleSepcial),
      },
      fingerprint,
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onShouldRetry: shouldRetry,
      onAfterResponse(req, res) {
        // The server's offset when an interrupted upload is found again: say so, and keep it for tests.
        if (req.getMethod() === 'HEAD' && res.getStatus() === 200) {
          const offset = Number(res.getHeader('Upload-Offset'));
          if (offset > 0 && offset < file.size) {
            document.body.dataset.resumedFrom = String(offset);
            say(`Resuming: the server already has ${formatBytes(offset)} of ${formatBytes(file.size)}.`);
          }
        }
      },
      onProgress(sent, total) {
        if (state === 'stalled' || state === 'preparing') setState('uploading');
        if (state === 'uploading' && ui.message.classList.contains('warn')) say('Uploading…');
        showProgress(sent, total);
      },
      onSuccess({ lastResponse }) {
        if (upload !== current) return;
        // The server answers the last PATCH once its probe has judged the stored file: a file
        // that is not a video gets 422 (onError). A server that still answered 204 with status 7
        // is taken at its word too.
        if (lastResponse.getHeader('X-Video-Status') === '7') return refuseFile(file, session.notAVideo);
        showProgress(file.size, file.size);
        ui.eta.textContent = '';
        setState('done');
        say('Upload complete. The video is stored and will be processed now.', 'ok');
        notify('success');
      },
      onError(err) {
        if (upload === current) onUploadError(err, file);
      },
    });
    upload = current;

    try {
      const previous = await current.findPreviousUploads();
      // The newest record first: an older one may point at an upload the server has expired.
      previous.sort((a, b) => Date.parse(b.creationTime) - Date.parse(a.creationTime));
      if (previous[0]) current.resumeFromPreviousUpload(previous[0]);
    } catch {
      // No usable storage (private mode): upload from the start.
    }
    if (upload !== current) return; // cancelled meanwhile
    setState('uploading');
    say('Uploading…');
    current.start();
  }

  function pause() {
    if (state !== 'uploading' || !upload) return;
    void upload.abort(false);
    clearFigures();
    setState('paused');
    say('Paused. Resume carries on where it stopped.');
  }

  function resume() {
    if ((state !== 'paused' && state !== 'stalled') || !upload) return;
    clearFigures();
    setState('uploading');
    say('Uploading…');
    upload.start();
  }

  async function cancel() {
    const current = upload;
    if (!current) return;
    upload = undefined;
    setState('idle');
    ui.transfer.hidden = true;
    ui.input.value = '';
    say('Cancelling…');
    try {
      // Termination (tus): the server deletes what it received, and the resume record goes.
      await current.abort(true);
    } catch {
      // The server may already have dropped it.
    }
    if (state === 'idle') say('Upload cancelled. Choose a file to start again.');
  }

  /** Stops any transfer (it stays resumable on the server), tells the host, and closes. */
  function closePage() {
    if (upload && state !== 'done') void upload.abort(false);
    notify('closed');
    if (session.mode === 'window') window.close();
  }

  // ---- wiring ----

  ui.limit.textContent = `${session.uploadType === 'silverlight' ? 'Resumable upload' : 'Upload'} of up to ${formatBytes(session.maxBytes)}`;
  document.documentElement.classList.add(`mode-${session.mode}`);
  setState('idle');

  ui.input.addEventListener('change', () => {
    const file = ui.input.files?.[0];
    if (file) void startFile(file);
  });
  ui.pause.addEventListener('click', pause);
  ui.resume.addEventListener('click', resume);
  ui.cancel.addEventListener('click', () => void cancel());
  ui.close.addEventListener('click', closePage);

  // Drops anywhere on the page; without preventDefault the browser would open the file instead.
  /** @param {DragEvent} e */
  const onDragOver = (e) => {
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = state === 'idle' ? 'copy' : 'none';
    ui.drop.classList.toggle('over', state === 'idle');
  };
  window.addEventListener('dragover', onDragOver);
  window.addEventListener('dragleave', () => ui.drop.classList.remove('over'));
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    ui.drop.classList.remove('over');
    const file = e.dataTransfer?.files[0];
    if (file) void startFile(file);
  });

  // Coming back online resumes a stalled upload by itself.
  window.addEventListener('online', () => {
    if (state === 'stalled') resume();
  });
  window.addEventListener('offline', () => {
    if (state === 'uploading') say('The connection is gone; the upload continues when it comes back.', 'warn');
  });

  if (session.mode === 'overlay') {
    window.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') closePage();
    });
  }
})();

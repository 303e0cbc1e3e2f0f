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
 * - refused: the file is not a video: the page's quick look said so before uploading (empty, a
 *   name such as .txt or .pdf, or text bytes; reported to the server, which records it as it
 *   records ffprobe's verdict), or the server's probe did on the last PATCH (422, code 307). The
 *   page takes another file; the host hears of the refusal only if the user closes.
 *
 * The person sees a sentence in the page's language with the result code in small print; the
 * `reason` posted to the host stays the spec's line (`ErrorCode : …, ErrorMessage : …`).
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
   * @property {{ extensions: string[], bytes: number, report: string }} quickLook The quick look at
   *   a chosen file (server/ingest/quickLook.ts): names that are never videos, how many first bytes
   *   to read, and where to report such a file (relative to this page) so that the server records it.
   */

  const MESSAGE_TAG = 'vop-upload';

  // ---- messages ----
  // Every text the page shows, in English and Simplified Chinese (the same keys: ZH_CN's type is
  // EN's, which `npx tsc -p widget` checks, and test/console/console-i18n.test.ts finds no sentence outside
  // this block). The page speaks the browser's language; what it posts to the host page (the
  // `reason` of onFailure and onError) stays English, as host pages may read it.

  const EN = {
    title: 'Upload a video',
    chooseFile: 'Choose a video file',
    orDrop: 'or drop it here',
    progress: 'Upload progress',
    pause: 'Pause',
    resume: 'Resume',
    cancel: 'Cancel',
    close: 'Close',
    /** @type {(resumable: boolean, max: string) => string} */
    limit: (resumable, max) => `${resumable ? 'Resumable upload' : 'Upload'} of up to ${max}`,
    bytes: 'bytes',
    /** @type {(h: number, m: number, s: number) => string} */
    duration: (h, m, s) => (h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${s} s` : `${s} s`),
    /** @type {(d: string) => string} */
    left: (d) => `${d} left`,
    /** @type {(name: string) => string} */
    notAVideo: (name) => `"${name}" is not a video the server can take. Choose a video file.`,
    /** @type {(code: string) => string} */
    code: (code) => `code ${code}`,
    /** What each result code the server may answer an upload with means to the person uploading. */
    codes: {
      requestRefused: 'The server did not understand this upload page. Close it and open the upload again.',
      101: 'This application no longer exists on the video server.',
      102: 'This application is disabled on the video server, so it takes no uploads.',
      106: 'Too many failed attempts from this network. Wait a minute, then open the upload again.',
      107: 'This upload page has expired. Close it and open the upload again.',
      301: 'This video no longer exists on the video server.',
      302: 'This upload page is for another video. Close it and open the upload again.',
      303: 'This video already has its file, or another upload of it is under way.',
      401: 'The file is larger than the server accepts.',
      500: 'The video server failed. Try again later.',
      503: 'The video server cannot take uploads now. Try again later.',
      507: 'The video server is short of disk space for this file now. Try again later.',
    },
    /** @type {(attempt: number) => string} */
    connectionRetry: (attempt) => `Connection lost; retrying (attempt ${attempt})…`,
    /** @type {(attempt: number) => string} */
    busyRetry: (attempt) => `The server is busy; retrying (attempt ${attempt})…`,
    networkLost: 'network error: the connection to the server was lost',
    /** @type {(status: number) => string} */
    serverFailed: (status) => `the server failed (HTTP ${status})`,
    noSpace: 'the video server is short of disk space',
    /** @type {(reason: string, network: boolean) => string} */
    stopped: (reason, network) => `The upload stopped: ${reason}. It resumes where it stopped when you press Resume${network ? ' or the connection comes back' : ''}.`,
    sessionInvalid: 'the upload session is no longer valid; close this window and open the upload again',
    /** @type {(type: string) => string} */
    tooLargeForType: (type) => `the file is larger than the server accepts for ${type} uploads`,
    /** @type {(status: number) => string} */
    refusedHttp: (status) => `the server refused the upload (HTTP ${status})`,
    /** @type {(reason: string) => string} */
    failed: (reason) => `Upload failed: ${reason}.`,
    underWay: 'An upload is already under way; cancel it first to choose another file.',
    /** @type {(name: string, size: string, type: string, max: string) => string} */
    tooLarge: (name, size, type, max) => `"${name}" is ${size}; ${type} uploads take at most ${max}. Choose a smaller file.`,
    checking: 'Checking the file…',
    /** @type {(has: string, total: string) => string} */
    resuming: (has, total) => `Resuming: the server already has ${has} of ${total}.`,
    uploading: 'Uploading…',
    complete: 'Upload complete. The video is stored and will be processed now.',
    paused: 'Paused. Resume carries on where it stopped.',
    cancelling: 'Cancelling…',
    cancelled: 'Upload cancelled. Choose a file to start again.',
    offline: 'The connection is gone; the upload continues when it comes back.',
  };

  /** @type {typeof EN} */
  const ZH_CN = {
    title: '上传视频',
    chooseFile: '选择视频文件',
    orDrop: '或拖放到这里',
    progress: '上传进度',
    pause: '暂停',
    resume: '继续',
    cancel: '取消',
    close: '关闭',
    limit: (resumable, max) => `${resumable ? '可续传上传' : '上传'}，最大 ${max}`,
    bytes: '字节',
    duration: (h, m, s) => (h > 0 ? `${h} 小时 ${m} 分` : m > 0 ? `${m} 分 ${s} 秒` : `${s} 秒`),
    left: (d) => `剩余 ${d}`,
    notAVideo: (name) => `“${name}”不是服务器能接受的视频。请选择视频文件。`,
    code: (code) => `错误代码 ${code}`,
    codes: {
      requestRefused: '服务器无法识别此上传页面。请关闭后重新打开上传。',
      101: '视频服务器上已没有此应用。',
      102: '此应用已在视频服务器上停用，不接受上传。',
      106: '来自此网络的失败尝试过多。请等一分钟后重新打开上传。',
      107: '此上传页面已过期。请关闭后重新打开上传。',
      301: '视频服务器上已没有此视频。',
      302: '此上传页面属于另一个视频。请关闭后重新打开上传。',
      303: '此视频已有文件，或它的另一次上传正在进行。',
      401: '文件超过服务器接受的大小。',
      500: '视频服务器出错。请稍后再试。',
      503: '视频服务器现在无法接受上传。请稍后再试。',
      507: '视频服务器现在没有足够的磁盘空间存放此文件。请稍后再试。',
    },
    connectionRetry: (attempt) => `连接中断；正在重试（第 ${attempt} 次）…`,
    busyRetry: (attempt) => `服务器繁忙；正在重试（第 ${attempt} 次）…`,
    networkLost: '网络错误：与服务器的连接已断开',
    serverFailed: (status) => `服务器出错（HTTP ${status}）`,
    noSpace: '视频服务器磁盘空间不足',
    stopped: (reason, network) => `上传已停止：${reason}。按“继续”${network ? '或连接恢复时' : ''}会从停止处接着上传。`,
    sessionInvalid: '上传会话已失效；请关闭此窗口并重新打开上传',
    tooLargeForType: (type) => `文件超过服务器对 ${type} 上传所接受的大小`,
    refusedHttp: (status) => `服务器拒绝了上传（HTTP ${status}）`,
    failed: (reason) => `上传失败：${reason}。`,
    underWay: '已有上传在进行；请先取消，再选择其他文件。',
    tooLarge: (name, size, type, max) => `“${name}”大小为 ${size}；${type} 上传最大 ${max}。请选择更小的文件。`,
    checking: '正在检查文件…',
    resuming: (has, total) => `正在续传：服务器已有 ${total} 中的 ${has}。`,
    uploading: '正在上传…',
    complete: '上传完成。视频已保存，现在开始处理。',
    paused: '已暂停。“继续”会从停止处接着上传。',
    cancelling: '正在取消…',
    cancelled: '上传已取消。选择一个文件重新开始。',
    offline: '网络已断开；恢复后上传会继续。',
  };

  /** The browser's first language we have: any Chinese is zh-CN, else English. */
  const lang = (navigator.languages?.length ? navigator.languages : [navigator.language]).map((l) => l.toLowerCase()).find((l) => l.startsWith('zh') || l.startsWith('en'))?.startsWith('zh') ? 'zh-CN' : 'en';
  /** What the page says, in its language. */
  const T = lang === 'zh-CN' ? ZH_CN : EN;
  // Both catalogues, for test/console/console-languages.test.ts to compare in a real page.
  Object.defineProperty(window, 'vopUploadMessages', { value: Object.freeze({ en: EN, 'zh-CN': ZH_CN }) });
  // ---- end of messages ----

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
    const units = [T.bytes, 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return `${n.toLocaleString(lang, { maximumFractionDigits: i === 0 || n >= 100 ? 0 : 1, minimumFractionDigits: i === 0 || n >= 100 ? 0 : 1 })} ${units[i]}`;
  }

  /** @param {number} seconds */
  function formatDuration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    return T.duration(Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60);
  }

  /**
   * @param {string} text
   * @param {'' | 'ok' | 'warn' | 'bad'} [tone]
   * @param {string} [code] vop's result code, shown in small print after the sentence
   */
  function say(text, tone = '', code = '') {
    ui.message.textContent = text;
    ui.message.className = `message ${tone}`.trim();
    if (code) {
      const small = document.createElement('small');
      small.className = 'code';
      small.textContent = T.code(code);
      ui.message.append(' ', small);
    }
  }

  /**
   * What a result code of the server means to the person uploading, in the page's language.
   * @param {string} code
   */
  function plainWords(code) {
    const known = /** @type {Record<string, string>} */ (T.codes)[code];
    return known ?? (Number(code) >= 500 ? T.codes[500] : T.codes.requestRefused);
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
      ui.eta.textContent = sent < total ? T.left(formatDuration((total - sent) / speed)) : '';
    }
  }

  function clearFigures() {
    samples = [];
    ui.speed.textContent = '';
    ui.eta.textContent = '';
  }

  // ---- files that are not videos ----

  /** Names that are never videos (the server's list, server/ingest/quickLook.ts). */
  const NOT_VIDEO_EXTENSIONS = new Set(session.quickLook.extensions);

  /**
   * A quick look at a file the user chose, by the server's rule (server/ingest/quickLook.ts): its
   * first bytes if it is obviously not a video (empty, a name that never is one, or text bytes),
   * to report to the server; undefined otherwise (then it is uploaded and ffprobe decides).
   * @param {File} file
   * @returns {Promise<ArrayBuffer | undefined>}
   */
  async function obviousNonVideo(file) {
    let head;
    try {
      head = await file.slice(0, session.quickLook.bytes).arrayBuffer();
    } catch {
      return undefined; // unreadable here: let the server judge
    }
    const ext = (/\.([^./\\]+)$/.exec(file.name)?.[1] ?? '').toLowerCase();
    return head.byteLength === 0 || NOT_VIDEO_EXTENSIONS.has(ext) || looksLikeText(new Uint8Array(head)) ? head : undefined;
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
   * Tells the server that `file` is not a video, with its first bytes, so that the video ends as
   * after any other verdict (7, its callback, 307). Resolves with the server's refusal to show;
   * `upload` when the server does not find it obviously not a video (it is then uploaded for
   * ffprobe to judge); a refusal of the upload itself (an expired page, a video that has its
   * file) as `failed`; undefined when the server could not be reached (the page refuses the file
   * on its own: it is no video either way).
   * @param {File} file
   * @param {ArrayBuffer} head
   * @returns {Promise<{ refused: { code: string, message: string } } | { failed: { code: string, message: string }, status: number } | 'upload' | undefined>}
   */
  async function reportNonVideo(file, head) {
    let res;
    try {
      res = await fetch(new URL(session.quickLook.report, window.location.href), {
        method: 'POST',
        headers: { 'X-Upload-Credential': session.credential, 'X-File-Name': encodeURIComponent(file.name), 'Content-Type': 'application/octet-stream' },
        body: head,
      });
    } catch {
      return undefined;
    }
    const error = readErrorText(await res.text().catch(() => ''));
    if (!error) return undefined;
    if (error.code === session.notAVideo.code) return { refused: error };
    if (res.status === 400) return 'upload';
    return { failed: error, status: res.status };
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
    // The person sees a sentence in the page's language and the code; the host's developer gets the spec's line.
    say(T.notAVideo(file.name), 'bad', error.code);
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
      say(status === 0 ? T.connectionRetry(attempt + 1) : T.busyRetry(attempt + 1), 'warn');
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
    // vop's tus endpoint answers a refusal with the spec's text (`ErrorCode : …, ErrorMessage : …`).
    const body = response?.getBody()?.trim() ?? '';
    const error = readErrorText(body);
    if (status === 0 || status >= 500 || status === 409 || status === 423) {
      setState('stalled');
      const reason = status === 0 ? EN.networkLost : EN.serverFailed(status);
      /** @param {typeof EN} m */
      const said = (m) => (status === 0 ? m.networkLost : status === 507 ? m.noSpace : m.serverFailed(status));
      say(T.stopped(said(T), status === 0), 'bad', error?.code);
      notify('error', reason);
      return;
    }
    // The server's probe found no video in the stored file (the last PATCH): another file may do.
    if (error && error.code === session.notAVideo.code) return refuseFile(file, error);
    showFailure(error, status, body);
  }

  /**
   * The server refused the upload for good: a sentence in the page's language (the code in small
   * print); the host gets the spec's line, or the English sentence when there was none.
   * @param {{ code: string, message: string } | undefined} error
   * @param {number} status
   * @param {string} body
   */
  function showFailure(error, status, body) {
    setState('failed');
    /** @param {typeof EN} m */
    const withoutCode = (m) => (status === 401 || status === 403 ? m.sessionInvalid : status === 413 ? m.tooLargeForType(session.uploadType) : m.refusedHttp(status));
    if (error) say(plainWords(error.code), 'bad', error.code);
    else say(T.failed(withoutCode(T)), 'bad');
    notify('failure', (error && body) || withoutCode(EN), error);
  }

  /** @param {File} file */
  async function startFile(file) {
    if (state !== 'idle') {
      say(T.underWay, 'warn');
      return;
    }
    if (file.size > session.maxBytes) {
      say(T.tooLarge(file.name, formatBytes(file.size), session.uploadType, formatBytes(session.maxBytes)), 'bad');
      return;
    }
    setState('preparing');
    say(T.checking);
    const head = await obviousNonVideo(file);
    if (/** @type {State} */ (state) !== 'preparing') return; // cancelled or closed meanwhile (the await let them run)
    if (head) {
      // Not a video, by the server's quick rule: the server records it as it records ffprobe's
      // verdict on an uploaded file (one rule for a file that is not a video), without the upload.
      const verdict = await reportNonVideo(file, head);
      if (/** @type {State} */ (state) !== 'preparing') return;
      if (verdict === undefined) return refuseFile(file, session.notAVideo);
      if (verdict !== 'upload') {
        if ('refused' in verdict) return refuseFile(file, verdict.refused);
        const { failed, status } = verdict;
        return showFailure(failed, status, `ErrorCode : ${failed.code}, ErrorMessage : ${failed.message}`);
      }
    }
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
            say(T.resuming(formatBytes(offset), formatBytes(file.size)));
          }
        }
      },
      onProgress(sent, total) {
        if (state === 'stalled' || state === 'preparing') setState('uploading');
        if (state === 'uploading' && ui.message.classList.contains('warn')) say(T.uploading);
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
        say(T.complete, 'ok');
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
    say(T.uploading);
    current.start();
  }

  function pause() {
    if (state !== 'uploading' || !upload) return;
    void upload.abort(false);
    clearFigures();
    setState('paused');
    say(T.paused);
  }

  function resume() {
    if ((state !== 'paused' && state !== 'stalled') || !upload) return;
    clearFigures();
    setState('uploading');
    say(T.uploading);
    upload.start();
  }

  async function cancel() {
    const current = upload;
    if (!current) return;
    upload = undefined;
    setState('idle');
    ui.transfer.hidden = true;
    ui.input.value = '';
    say(T.cancelling);
    try {
      // Termination (tus): the server deletes what it received, and the resume record goes.
      await current.abort(true);
    } catch {
      // The server may already have dropped it.
    }
    if (state === 'idle') say(T.cancelled);
  }

  /** Stops any transfer (it stays resumable on the server), tells the host, and closes. */
  function closePage() {
    if (upload && state !== 'done') void upload.abort(false);
    notify('closed');
    if (session.mode === 'window') window.close();
  }

  // ---- wiring ----

  // The page's own text, in its language (upload.html marks each place with data-i18n).
  document.documentElement.lang = lang;
  document.title = T.title;
  for (const el of document.querySelectorAll('[data-i18n]')) {
    const key = /** @type {keyof typeof EN} */ (el.getAttribute('data-i18n'));
    const text = T[key];
    if (typeof text === 'string') el.textContent = text;
  }
  for (const el of document.querySelectorAll('[data-i18n-aria-label]')) {
    const text = T[/** @type {keyof typeof EN} */ (el.getAttribute('data-i18n-aria-label'))];
    if (typeof text === 'string') el.setAttribute('aria-label', text);
  }
  ui.limit.textContent = T.limit(session.uploadType === 'silverlight', formatBytes(session.maxBytes));
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
    if (state === 'uploading') say(T.offline, 'warn');
  });

  if (session.mode === 'overlay') {
    window.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') closePage();
    });
  }
})();

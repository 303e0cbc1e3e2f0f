import { VideoStatus } from '../../../server/core/videoStatus.js';
import { useEffect, useState } from 'react';
import { api } from '../api.js';
import { ErrorMessage, Notice, PageHeader, StatusBadge } from '../components/Feedback.js';
import { useServerEvent } from '../events.js';
import { formatTime, statusName } from '../format.js';
import { useT } from '../i18n.js';
import { Link } from '../router.js';
import type { AppView, TryUploadValues, VideoDetail } from '../types.js';
import { useAction } from '../useAction.js';
import { useResource } from '../useResource.js';

/** The widget's two forms (spec 4.5), as the scripts at /widget/ offer them. */
type WidgetForm = 'window' | 'overlay';

/** `openUpload` as both widget scripts define it (widget/src/shared.js UploadOptions). */
type OpenUpload = (options: Record<string, unknown>) => { close(): void };

/**
 * Each form's `openUpload`, once its script has run. Both scripts define the same global (a host
 * page loads one of them): each is taken as soon as its script has run, and one load at a time,
 * so the other script's later run cannot swap it.
 */
const loaded = new Map<WidgetForm, OpenUpload>();
let loading: Promise<unknown> = Promise.resolve();

function loadWidget(form: WidgetForm, src: string): Promise<OpenUpload> {
  const next = loading.then(
    () =>
      loaded.get(form) ??
      new Promise<OpenUpload>((resolve, reject) => {
        const script = document.createElement('script');
        script.src = src;
        script.dataset.vopWidget = form;
        script.onload = () => {
          const open = (window as unknown as { openUpload?: OpenUpload }).openUpload;
          if (typeof open !== 'function') return reject(new Error(src));
          loaded.set(form, open);
          resolve(open);
        };
        script.onerror = () => reject(new Error(src));
        document.head.append(script);
      }),
  );
  loading = next.catch(() => undefined);
  return next;
}

/** What an application's page would learn from the widget's callbacks. */
interface Outcome {
  kind: 'success' | 'failure' | 'error';
  text: string;
}

/** Statuses after which nothing more happens by itself: playable, failed, deleted. */
const SETTLED = new Set<number>([VideoStatus.WaitingForDeletion, VideoStatus.Normal, VideoStatus.DownloadFailed, VideoStatus.TranscodingFailed]);
/** Fresh values are asked for this long before the old ones expire. */
const RENEW_BEFORE_MS = 60_000;

/**
 * Try the upload widget (one application's): a video registered for it as its server would,
 * the real widget opened on it in either form, and the video followed through its statuses to
 * playable. The widget's values come from the server, which holds the application's secret.
 */
export function TryUploadPage({ appId }: { appId: string }) {
  const t = useT();
  const app = useResource(() => api<AppView>('GET', `/apps/${encodeURIComponent(appId)}`), [appId]);
  const [form, setForm] = useState<WidgetForm>('overlay');
  const [values, setValues] = useState<TryUploadValues>();
  const [openers, setOpeners] = useState<Partial<Record<WidgetForm, OpenUpload>>>({});
  const [outcomes, setOutcomes] = useState<Outcome[]>([]);
  const [detail, setDetail] = useState<VideoDetail>();
  const { run, busy, error, notice, setError } = useAction();
  const videoId = values?.videoId;

  const register = () =>
    run(async () => {
      const v = await api<TryUploadValues>('POST', `/apps/${encodeURIComponent(appId)}/try-upload`);
      setValues(v);
      setOutcomes([]);
      setDetail(undefined);
      // Both forms' scripts, now: openUpload must then run straight from the click (a pop-up
      // opened after a wait is blocked by browsers).
      const [w, o] = await Promise.all([loadWidget('window', v.scripts.window), loadWidget('overlay', v.scripts.overlay)]);
      setOpeners({ window: w, overlay: o });
      return t.tryUpload.registered;
    });

  // The video's record and history: now, on each of its status changes, and every few seconds
  // until it settles (the event stream may be reconnecting).
  const refresh = async () => {
    if (!videoId) return;
    try {
      setDetail(await api<VideoDetail>('GET', `/videos/${videoId}`));
    } catch {
      // The next tick tries again.
    }
  };
  useServerEvent('video.status', (e) => {
    if (e.videoId === videoId) void refresh();
  });
  const status = detail?.video.status ?? values?.video.status;
  useEffect(() => {
    if (!videoId) return;
    void refresh();
    const timer = window.setInterval(() => {
      if (status === undefined || !SETTLED.has(status)) void refresh();
    }, 3000);
    return () => window.clearInterval(timer);
  }, [videoId, status]);

  // The values open the upload page only so long (the spec's timestamp window): while the video
  // still waits for its file, fresh ones are asked for the same video before they expire.
  useEffect(() => {
    if (!values) return;
    const wait = Math.max(0, Date.parse(values.expiresAt) - Date.now() - RENEW_BEFORE_MS);
    const timer = window.setTimeout(() => {
      if (status !== VideoStatus.NotUploaded && status !== VideoStatus.TranscodingFailed) return;
      api<TryUploadValues>('POST', `/apps/${encodeURIComponent(appId)}/try-upload`, { videoId: values.videoId }).then(setValues, () => undefined);
    }, wait);
    return () => window.clearTimeout(timer);
  }, [values, status, appId]);

  const open = () => {
    const openUpload = openers[form];
    if (!values || !openUpload) return;
    setError('');
    const add = (o: Outcome) => setOutcomes((l) => [...l, o]);
    openUpload({
      appId: values.appId,
      timestamp: values.timestamp,
      token: values.token,
      videoId: values.videoId,
      onSuccess: (id: string) => add({ kind: 'success', text: t.tryUpload.onSuccess(id) }),
      onFailure: (reason: string, d?: { code?: string; cancelled?: boolean }) =>
        add({ kind: 'failure', text: d?.cancelled ? t.tryUpload.onCancel : t.tryUpload.onFailure(d?.code ?? '', reason) }),
      onError: (reason: string) => add({ kind: 'error', text: t.tryUpload.onError(reason) }),
    });
  };

  const a = app.data;
  // The desktop app opens no pop-up of its own (links go to the system browser): the overlay it is.
  const windowFormOk = !window.vopDesktop;
  const chosen = windowFormOk ? form : 'overlay';
  return (
    <>
      <p className="crumbs">
        <Link to="/apps">{t.app.crumb}</Link> / {a ? <Link to={`/apps/${appId}`}>{a.name}</Link> : null} /
      </p>
      <PageHeader title={t.tryUpload.title} />
      <p className="muted">{t.tryUpload.intro}</p>
      <ErrorMessage error={app.error || error} />
      {a?.disabled ? <p className="info">{t.tryUpload.disabled}</p> : null}
      <section className="card try-upload" aria-labelledby="try-form-title">
        <h2 id="try-form-title">{t.tryUpload.formTitle}</h2>
        <fieldset className="plain-fieldset">
          <legend className="label">{t.tryUpload.formLegend}</legend>
          <label className="choice">
            <input type="radio" name="widget-form" value="overlay" checked={chosen === 'overlay'} onChange={() => setForm('overlay')} /> {t.tryUpload.overlay}
          </label>
          <label className="choice">
            <input type="radio" name="widget-form" value="window" checked={chosen === 'window'} disabled={!windowFormOk} onChange={() => setForm('window')} /> {t.tryUpload.window}
          </label>
          {windowFormOk ? null : <p className="muted small-text">{t.tryUpload.noWindowOnDesktop}</p>}
        </fieldset>
        <div className="row">
          <button type="button" className={values ? undefined : 'primary'} disabled={busy || !a || a.disabled} onClick={() => void register()}>
            {values ? t.tryUpload.registerAnother : t.tryUpload.register}
          </button>
          {values ? (
            <button type="button" className="primary" disabled={!openers[chosen]} onClick={open} data-testid="open-widget">
              {chosen === 'window' ? t.tryUpload.openWindow : t.tryUpload.openOverlay}
            </button>
          ) : null}
        </div>
        <Notice>{notice}</Notice>
      </section>
      {values ? (
        <section className="card try-upload" aria-labelledby="try-video-title" data-testid="try-video" data-video={values.videoId}>
          <h2 id="try-video-title">{t.tryUpload.videoTitle}</h2>
          <dl className="facts">
            <dt>{t.tryUpload.video}</dt>
            <dd>
              <Link to={`/videos/${values.videoId}`}>{values.video.title}</Link>
            </dd>
            <dt>
              <code>VideoId</code>
            </dt>
            <dd>
              <code className="break">{values.videoId}</code>
            </dd>
            <dt>{t.tryUpload.status}</dt>
            <dd data-testid="try-status">{status !== undefined ? <StatusBadge status={status} /> : null}</dd>
            <dt>{t.tryUpload.valuesUntil}</dt>
            <dd>{formatTime(values.expiresAt)}</dd>
          </dl>
          {status === VideoStatus.Normal ? (
            <p className="notice" data-testid="try-playable">
              {t.tryUpload.playable} <Link to={`/videos/${values.videoId}`}>{t.tryUpload.playIt}</Link>
            </p>
          ) : null}
          {detail && detail.statusHistory.length > 0 ? (
            <ol className="plain status-steps" data-testid="try-history">
              {detail.statusHistory.map((h, i) => (
                <li key={i} data-to={h.to}>
                  <span className="muted small-text">{formatTime(h.at)}</span> {h.to} · {statusName(h.to)}
                  {h.reason ? <span className="muted small-text"> · {h.reason}</span> : null}
                </li>
              ))}
            </ol>
          ) : null}
          {outcomes.length > 0 ? (
            <>
              <h3>{t.tryUpload.callbacks}</h3>
              <ul className="plain" data-testid="try-outcomes">
                {outcomes.map((o, i) => (
                  <li key={i} data-outcome={o.kind} className={o.kind === 'success' ? undefined : 'error-text'}>
                    {o.text}
                  </li>
                ))}
              </ul>
            </>
          ) : null}
        </section>
      ) : null}
    </>
  );
}

import { useEffect, useState } from 'react';
import type { FirstRunInfo } from '../../../main/preloadApi.js';
import type { HousekeepingView, StalledUpload, StorageArea } from '../../../server/console/housekeepingViews.js';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { CopyValue } from '../components/CopyButton.js';
import { ErrorMessage, Notice, PageHeader } from '../components/Feedback.js';
import { useServerEvent } from '../events.js';
import { addressLabel, formatBytes, formatDuration, formatNumber, formatTime, STATUSES, statusName, statusTone } from '../format.js';
import { useT } from '../i18n.js';
import { Link } from '../router.js';
import type { Overview } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';
import { SecretOnce } from './Applications.js';

export function OverviewPage() {
  const t = useT();
  const { data, error, reload } = useResource(() => api<Overview>('GET', '/overview'), []);
  // Asked for with the overview, not once it is shown: the page's calls all start as it opens.
  const views = useResource(() => api<ViewDays>('GET', '/views?days=30'), []);
  const refresh = useDebounced(() => void reload(), 500);
  useServerEvent('video.status', refresh);
  useServerEvent('job.state', refresh);

  return (
    <>
      <PageHeader title={t.overview.title}>
        <button type="button" onClick={() => void reload()}>
          {t.common.refresh}
        </button>
      </PageHeader>
      <FirstRunWelcome />
      <ErrorMessage error={error} />
      {data ? <OverviewBody o={data} views={views.data} /> : error ? null : <p className="muted">{t.common.loading}</p>}
      <Housekeeping />
    </>
  );
}

const AREAS: readonly StorageArea[] = ['sources', 'play', 'hls', 'covers', 'incoming'];

/**
 * Tidying up (issue 13, item 4): the storage vop uses by kind, the registrations never uploaded
 * and when the next expires, and the stalled uploads with a cancel each (GET /housekeeping).
 */
function Housekeeping() {
  const t = useT();
  const h = t.housekeeping;
  const { data, error, reload } = useResource(() => api<HousekeepingView>('GET', '/housekeeping'), []);
  const refresh = useDebounced(() => void reload(), 1000);
  useServerEvent('video.status', refresh);
  const action = useAction(() => reload());
  const cancel = (u: StalledUpload) =>
    action.run(async () => {
      await api('DELETE', `/uploads/${encodeURIComponent(u.id)}`);
      return h.uploadCancelled(u.title || u.filename || u.videoId);
    }, u.id);
  if (!data) return <ErrorMessage error={error} />;
  const { storage, registrations: r, stalledUploads: stalled } = data;
  return (
    <div className="grid">
      <section className="card" aria-labelledby="storage-title">
        <h2 id="storage-title">{h.storageTitle}</h2>
        <p className="muted small-text">{h.storageNote}</p>
        <table className="compact">
          <caption className="sr-only">{h.storageTitle}</caption>
          <tbody>
            {AREAS.map((a) => (
              <tr key={a} data-area={a}>
                <th scope="row">{h.storageAreas[a]}</th>
                <td className="num">{formatBytes(storage.areas[a].bytes)}</td>
                <td className="num muted">{h.storageFiles(storage.areas[a].files)}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr data-area="total">
              <th scope="row">{h.storageTotal}</th>
              <td className="num">{formatBytes(storage.totalBytes)}</td>
              <td />
            </tr>
          </tfoot>
        </table>
        <p className="muted small-text">{h.storageAsOf(formatTime(storage.countedAt))}</p>
      </section>

      <section className="card" aria-labelledby="expiry-title">
        <h2 id="expiry-title">{h.expiryTitle}</h2>
        {r.waiting === 0 ? (
          <p className="muted">{h.expiryNone}</p>
        ) : (
          <p>
            <Link to="/videos?status=8">{h.expiryWaiting(r.waiting)}</Link>
          </p>
        )}
        <p className="muted small-text">{r.days > 0 ? h.expiryRule(r.days) : h.expiryOff}</p>
        {r.nextExpiresAt ? <p>{h.expiryNext(formatTime(r.nextExpiresAt))}</p> : null}
      </section>

      <section className="card wide" aria-labelledby="stalled-title">
        <h2 id="stalled-title">{h.stalledTitle}</h2>
        <p className="muted small-text">{h.stalledNote(stalled.minutes)}</p>
        <ErrorMessage error={action.error} />
        <Notice>{action.notice}</Notice>
        {stalled.uploads.length === 0 ? <p className="muted">{h.stalledNone}</p> : null}
        <ul className="plain">
          {stalled.uploads.map((u) => {
            const name = u.title || u.filename || u.videoId;
            return (
              <li key={u.id} className="row between" data-upload={u.id}>
                <Link to={`/videos/${u.videoId}`}>{h.stalledItem(name, u.percent === null ? formatBytes(u.offset) : `${u.percent}%`, formatTime(u.lastWriteAt))}</Link>
                <ConfirmButton
                  label={h.cancelUpload}
                  ariaLabel={h.cancelUploadLabel(name)}
                  className="small danger"
                  disabled={action.busyKey === u.id}
                  title={h.cancelUploadTitle}
                  confirmLabel={h.cancelUploadConfirm}
                  danger
                  onConfirm={() => void cancel(u)}
                >
                  <p>{h.cancelUploadBody}</p>
                </ConfirmButton>
              </li>
            );
          })}
        </ul>
      </section>
    </div>
  );
}

/**
 * The desktop app's first run: the shell created a first application and hands its secret over
 * once (main/main.ts); it is shown here with the API address, like a secret made in Applications.
 */
function FirstRunWelcome() {
  const t = useT();
  const [info, setInfo] = useState<FirstRunInfo | null>(null);
  useEffect(() => {
    let live = true;
    void takeFirstRunOnce().then((v) => live && setInfo(v));
    return () => {
      live = false;
    };
  }, []);
  if (!info) return null;
  return (
    <>
      <Notice>
        {t.overview.welcome} <code>{info.apiAddress}</code>
      </Notice>
      <SecretOnce
        title={t.overview.firstApp(info.appName)}
        appId={info.appId}
        secret={info.appSecret}
        onDone={() => {
          firstRun = Promise.resolve(null);
          setInfo(null);
        }}
      />
    </>
  );
}

/**
 * The shell gives the welcome once; the page may mount the overview more than once while it
 * loads (logging in, routing), so the hand-over is taken once per page load and kept here.
 */
let firstRun: Promise<FirstRunInfo | null> | undefined;
function takeFirstRunOnce(): Promise<FirstRunInfo | null> {
  firstRun ??= window.vopDesktop?.takeFirstRun ? window.vopDesktop.takeFirstRun().catch(() => null) : Promise.resolve(null);
  return firstRun;
}

function OverviewBody({ o, views }: { o: Overview; views: ViewDays | undefined }) {
  const t = useT();
  const used = o.disk.totalBytes > 0 ? (o.disk.usedBytes / o.disk.totalBytes) * 100 : 0;
  const statusTotal = Object.values(o.videosByStatus).reduce((a, b) => a + b, 0);
  return (
    <div className="grid">
      <section className="card wide" aria-labelledby="addr-title">
        <h2 id="addr-title">{t.overview.apiTitle}</h2>
        <p className="muted small-text">{t.overview.apiHelp}</p>
        <ul className="plain">
          {o.addresses.map((a) => (
            <li key={a.apiUrl} className="addr">
              <span className="addr-label">
                {addressLabel(a.label)}
                {a.served ? '' : t.overview.notServed}
              </span>
              <CopyValue value={a.apiUrl} what={t.overview.apiWhat(addressLabel(a.label))} />
            </li>
          ))}
        </ul>
      </section>

      <section className="card wide" aria-labelledby="widget-title">
        <h2 id="widget-title">{t.overview.widgetTitle}</h2>
        <p className="muted small-text">
          {t.overview.widgetHelp1} <code>initUploadWidget.js</code> {t.overview.widgetHelp2} <code>initUploadABoxWidget.js</code> {t.overview.widgetHelp3}
        </p>
        <ul className="plain">
          {o.widgetScripts.flatMap((w) => [
            <li key={w.window} className="addr">
              <span className="addr-label">
                {addressLabel(w.label)} · {t.overview.window}
              </span>
              <CopyValue value={w.window} what={t.overview.widgetWhat(addressLabel(w.label), t.overview.window)} />
            </li>,
            <li key={w.overlay} className="addr">
              <span className="addr-label">
                {addressLabel(w.label)} · {t.overview.overlay}
              </span>
              <CopyValue value={w.overlay} what={t.overview.widgetWhat(addressLabel(w.label), t.overview.overlay)} />
            </li>,
          ])}
        </ul>
      </section>

      {views ? <ViewsByDay data={views} /> : null}

      <section className="card" aria-labelledby="videos-title">
        <h2 id="videos-title">{t.overview.byStatus}</h2>
        <table className="compact">
          <caption className="sr-only">{t.overview.byStatusCaption}</caption>
          <thead>
            <tr>
              <th scope="col">{t.overview.status}</th>
              <th scope="col" className="num">
                {t.overview.videos}
              </th>
            </tr>
          </thead>
          <tbody>
            {STATUSES.map((s) => (
              <tr key={s}>
                <td>
                  <span className={`dot ${statusTone(s)}`} aria-hidden="true" />
                  <Link to={`/videos?status=${s}`}>
                    {s} · {statusName(s)}
                  </Link>
                </td>
                <td className="num">{formatNumber(o.videosByStatus[s] ?? 0)}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">{t.overview.all}</th>
              <td className="num">{formatNumber(statusTotal)}</td>
            </tr>
          </tfoot>
        </table>
      </section>

      <section className="card" aria-labelledby="disk-title">
        <h2 id="disk-title">{t.overview.disk}</h2>
        <div className="meter" role="meter" aria-label={t.overview.diskUsed} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(used)}>
          <div className="meter-fill" style={{ width: `${used}%` }} />
        </div>
        <dl className="facts">
          <dt>{t.overview.used}</dt>
          <dd>{formatBytes(o.disk.usedBytes)}</dd>
          <dt>{t.overview.free}</dt>
          <dd>{formatBytes(o.disk.freeBytes)}</dd>
          <dt>{t.overview.size}</dt>
          <dd>{formatBytes(o.disk.totalBytes)}</dd>
        </dl>
        <h2>{t.overview.work}</h2>
        <dl className="facts">
          <dt>{t.overview.applications}</dt>
          <dd>
            <Link to="/apps">{o.apps.total}</Link>
            {o.apps.disabled ? t.overview.disabledCount(o.apps.disabled) : ''}
          </dd>
          {['transcode', 'download', 'callback'].map((type) => (
            <FactJobs key={type} type={type} counts={o.jobs[type]} />
          ))}
        </dl>
      </section>

      <section className="card" aria-labelledby="ffmpeg-title">
        <h2 id="ffmpeg-title">{t.overview.ffmpegTitle}</h2>
        {o.ffmpeg.ok ? (
          <>
            <dl className="facts">
              <BinaryFact name="ffmpeg" binary={o.ffmpeg.ffmpeg} />
              <BinaryFact name="ffprobe" binary={o.ffmpeg.ffprobe} />
              <dt>{t.overview.checkedOn}</dt>
              <dd>
                {o.ffmpeg.proof.containers.map((c, i) => (
                  <span key={c.container} className={c.ok ? undefined : 'error'} title={c.problem}>
                    {i > 0 ? ', ' : ''}
                    {c.container} {c.ok ? '✓' : '✗'}
                  </span>
                ))}
              </dd>
            </dl>
            {o.ffmpeg.proof.summary && <FfmpegAdvice summary={o.ffmpeg.proof.summary} />}
          </>
        ) : (
          <p className="error">{t.overview.noFfmpeg(o.ffmpeg.error)}</p>
        )}
      </section>
    </div>
  );
}

/**
 * What the admin has to do when the pair in use fails a container: uploads in it end in 7 with
 * the tool's failure (retryable), until a better ffmpeg is installed or pointed at.
 */
function FfmpegAdvice({ summary }: { summary: string }) {
  const t = useT();
  return (
    <div className="error" role="alert">
      <p>{t.overview.cannotProcess(summary)}</p>
      <p>
        {t.overview.advice1} <code>sudo apt-get install ffmpeg</code>
        {t.overview.advice2} <code>VOP_FFMPEG_PATH</code> {t.overview.advice3} <code>VOP_FFPROBE_PATH</code>
        {t.overview.advice4}
      </p>
    </div>
  );
}

function FactJobs({ type, counts }: { type: string; counts: { queued: number; running: number } | undefined }) {
  const t = useT();
  return (
    <>
      <dt>{t.overview.jobNames[type] ?? type}</dt>
      <dd>
        {counts ? t.overview.jobCounts(counts.running, counts.queued) : t.common.none}
      </dd>
    </>
  );
}

/** One binary in use: where it is, its version, which rule chose it. */
function BinaryFact({ name, binary }: { name: string; binary: { path: string; source: string; version: string } }) {
  const t = useT();
  return (
    <>
      <dt>{name}</dt>
      <dd>
        <code className="break">{binary.path}</code>
        <br />
        <span className="muted" title={binary.version}>
          {t.overview.version(shortVersion(binary.version), binary.source)}
        </span>
      </dd>
    </>
  );
}

/** "ffmpeg version 6.1.1-3 Copyright …" → "6.1.1-3" (the full line is in the title). */
function shortVersion(v: string): string {
  const m = /version\s+(\S+)/.exec(v);
  return m ? m[1]! : v;
}

/** Views and watch time per day (GET /views). */
interface ViewDays {
  days: Array<{ day: string; views: number; watchSeconds: number }>;
}

/**
 * Views and watch time of the last 30 days (GET /views; docs/watch.md): a bar a day, scaled to
 * the busiest, each with its figures as its title; the same figures as a table for screen readers.
 */
function ViewsByDay({ data }: { data: ViewDays }) {
  const t = useT();
  const most = Math.max(1, ...data.days.map((d) => d.views));
  const views = data.days.reduce((n, d) => n + d.views, 0);
  const watched = data.days.reduce((n, d) => n + d.watchSeconds, 0);
  return (
    <section className="card wide" aria-labelledby="views-title" data-testid="views-by-day">
      <h2 id="views-title">{t.overview.viewsTitle}</h2>
      <p className="muted">{t.overview.viewsTotal(formatNumber(views), formatDuration(watched))}</p>
      <div className="bars" aria-hidden="true">
        {data.days.map((d) => (
          <div key={d.day} className="bar" title={`${d.day}: ${formatNumber(d.views)} · ${formatDuration(d.watchSeconds)}`}>
            <div className="bar-fill" style={{ height: `${(d.views / most) * 100}%` }} />
          </div>
        ))}
      </div>
      <table className="sr-only">
        <caption>{t.overview.viewsCaption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.overview.viewsDay}</th>
            <th scope="col">{t.overview.viewsCount}</th>
            <th scope="col">{t.overview.viewsWatched}</th>
          </tr>
        </thead>
        <tbody>
          {data.days.map((d) => (
            <tr key={d.day}>
              <td>{d.day}</td>
              <td>{d.views}</td>
              <td>{formatDuration(d.watchSeconds)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

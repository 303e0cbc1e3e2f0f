import { useEffect, useState } from 'react';
import type { FirstRunInfo } from '../../../main/preloadApi.js';
import { api } from '../api.js';
import { CopyValue } from '../components/CopyButton.js';
import { ErrorMessage, Notice, PageHeader } from '../components/Feedback.js';
import { useServerEvent } from '../events.js';
import { formatBytes, STATUS_NAMES, statusTone } from '../format.js';
import { Link } from '../router.js';
import type { Overview } from '../types.js';
import { useDebounced, useResource } from '../useResource.js';
import { SecretOnce } from './Applications.js';

export function OverviewPage() {
  const { data, error, reload } = useResource(() => api<Overview>('GET', '/overview'), []);
  const refresh = useDebounced(() => void reload(), 500);
  useServerEvent('video.status', refresh);
  useServerEvent('job.state', refresh);

  return (
    <>
      <PageHeader title="Overview">
        <button type="button" onClick={() => void reload()}>
          Refresh
        </button>
      </PageHeader>
      <FirstRunWelcome />
      <ErrorMessage error={error} />
      {data ? <OverviewBody o={data} /> : error ? null : <p className="muted">Loading…</p>}
    </>
  );
}

/**
 * The desktop app's first run: the shell created a first application and hands its secret over
 * once (main/main.ts); it is shown here with the API address, like a secret made in Applications.
 */
function FirstRunWelcome() {
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
        Welcome to vop. Applications call the API at <code>{info.apiAddress}</code>.
      </Notice>
      <SecretOnce
        title={`Your first application, “${info.appName}”`}
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

function OverviewBody({ o }: { o: Overview }) {
  const used = o.disk.totalBytes > 0 ? (o.disk.usedBytes / o.disk.totalBytes) * 100 : 0;
  const statusTotal = Object.values(o.videosByStatus).reduce((a, b) => a + b, 0);
  return (
    <div className="grid">
      <section className="card wide" aria-labelledby="addr-title">
        <h2 id="addr-title">API base addresses</h2>
        <p className="muted small-text">Applications call the spec API here. LAN addresses reach this machine from other computers.</p>
        <ul className="plain">
          {o.addresses.map((a) => (
            <li key={a.apiUrl} className="addr">
              <span className="addr-label">
                {a.label}
                {a.served ? '' : ' (not served: vop listens on this machine only)'}
              </span>
              <CopyValue value={a.apiUrl} what={`${a.label} API address`} />
            </li>
          ))}
        </ul>
      </section>

      <section className="card wide" aria-labelledby="widget-title">
        <h2 id="widget-title">Widget script addresses</h2>
        <p className="muted small-text">
          Host pages load one of these (spec 4.5): <code>initUploadWidget.js</code> opens a window, <code>initUploadABoxWidget.js</code> an overlay.
        </p>
        <ul className="plain">
          {o.widgetScripts.flatMap((w) => [
            <li key={w.window} className="addr">
              <span className="addr-label">{w.label} · window</span>
              <CopyValue value={w.window} what={`${w.label} window widget address`} />
            </li>,
            <li key={w.overlay} className="addr">
              <span className="addr-label">{w.label} · overlay</span>
              <CopyValue value={w.overlay} what={`${w.label} overlay widget address`} />
            </li>,
          ])}
        </ul>
      </section>

      <section className="card" aria-labelledby="videos-title">
        <h2 id="videos-title">Videos by status</h2>
        <table className="compact">
          <caption className="sr-only">Number of videos in each status</caption>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Videos
              </th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(STATUS_NAMES).map(([s, name]) => (
              <tr key={s}>
                <td>
                  <span className={`dot ${statusTone(Number(s))}`} aria-hidden="true" />
                  <Link to={`/videos?status=${s}`}>
                    {s} · {name}
                  </Link>
                </td>
                <td className="num">{o.videosByStatus[s] ?? 0}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">All</th>
              <td className="num">{statusTotal}</td>
            </tr>
          </tfoot>
        </table>
      </section>

      <section className="card" aria-labelledby="disk-title">
        <h2 id="disk-title">Disk</h2>
        <div className="meter" role="meter" aria-label="Disk used" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(used)}>
          <div className="meter-fill" style={{ width: `${used}%` }} />
        </div>
        <dl className="facts">
          <dt>Used</dt>
          <dd>{formatBytes(o.disk.usedBytes)}</dd>
          <dt>Free</dt>
          <dd>{formatBytes(o.disk.freeBytes)}</dd>
          <dt>Size</dt>
          <dd>{formatBytes(o.disk.totalBytes)}</dd>
        </dl>
        <h2>Work in progress</h2>
        <dl className="facts">
          <dt>Applications</dt>
          <dd>
            <Link to="/apps">{o.apps.total}</Link>
            {o.apps.disabled ? ` (${o.apps.disabled} disabled)` : ''}
          </dd>
          {['transcode', 'download', 'callback'].map((t) => (
            <FactJobs key={t} type={t} counts={o.jobs[t]} />
          ))}
        </dl>
      </section>

      <section className="card" aria-labelledby="ffmpeg-title">
        <h2 id="ffmpeg-title">ffmpeg in use</h2>
        {o.ffmpeg.ok ? (
          <>
            <dl className="facts">
              <BinaryFact name="ffmpeg" binary={o.ffmpeg.ffmpeg} />
              <BinaryFact name="ffprobe" binary={o.ffmpeg.ffprobe} />
              <dt>Checked on</dt>
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
          <p className="error">No usable ffmpeg: {o.ffmpeg.error}</p>
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
  return (
    <div className="error" role="alert">
      <p>
        Videos in these formats cannot be processed with the ffmpeg in use: {summary}
      </p>
      <p>
        Install a newer ffmpeg (on Debian or Ubuntu: <code>sudo apt-get install ffmpeg</code>) and restart vop, or point vop at one
        with <code>VOP_FFMPEG_PATH</code> and <code>VOP_FFPROBE_PATH</code>. Videos that failed meanwhile can be retried from their page.
      </p>
    </div>
  );
}

function FactJobs({ type, counts }: { type: string; counts: { queued: number; running: number } | undefined }) {
  const names: Record<string, string> = { transcode: 'Transcodes', download: 'Downloads', callback: 'Callbacks' };
  return (
    <>
      <dt>{names[type] ?? type}</dt>
      <dd>
        {counts ? `${counts.running} running, ${counts.queued} queued` : 'none'}
      </dd>
    </>
  );
}

/** One binary in use: where it is, its version, which rule chose it. */
function BinaryFact({ name, binary }: { name: string; binary: { path: string; source: string; version: string } }) {
  return (
    <>
      <dt>{name}</dt>
      <dd>
        <code className="break">{binary.path}</code>
        <br />
        <span className="muted" title={binary.version}>
          version {shortVersion(binary.version)} · from {binary.source}
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

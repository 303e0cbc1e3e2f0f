import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { CopyValue } from '../components/CopyButton.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader, StateBadge, StatusBadge } from '../components/Feedback.js';
import { JobProgress, useJobProgress } from '../components/JobViews.js';
import { useServerEvent } from '../events.js';
import { formatBytes, formatDuration, formatTime, statusName } from '../format.js';
import { Link } from '../router.js';
import type { AppView, Playback, VideoDetail } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';

/** One video: fields, each rendition playing, covers, status history and errors; retry, delete. */
export function VideoPage({ id }: { id: string }) {
  const detail = useResource(() => api<VideoDetail>('GET', `/videos/${encodeURIComponent(id)}`), [id]);
  const playback = useResource(() => api<Playback>('GET', `/videos/${encodeURIComponent(id)}/playback`), [id]);
  const appId = detail.data?.video.appId;
  const app = useResource(() => (appId ? api<AppView>('GET', `/apps/${encodeURIComponent(appId)}`) : Promise.resolve(undefined)), [appId]);
  const figures = useJobProgress((e) => e.videoId === id);

  const reloadAll = useDebounced(() => {
    void detail.reload();
    void playback.reload();
  }, 300);
  useServerEvent('video.status', (e) => e.videoId === id && reloadAll());
  useServerEvent('job.state', (e) => e.videoId === id && reloadAll());
  const { run: act, busy, error, notice } = useAction(reloadAll);

  const v = detail.data?.video;
  const failed = v && (v.status === 4 || v.status === 7);
  return (
    <>
      <p className="crumbs">
        <Link to="/videos">Videos</Link> /
      </p>
      <PageHeader title={v ? v.title || '(no title)' : 'Video'}>
        {v && failed ? (
          <button
            type="button"
            className="primary"
            disabled={busy}
            onClick={() =>
              act(async () => {
                const r = await api<{ action: string }>('POST', `/videos/${id}/retry`);
                return r.action === 'download' ? 'The download starts again.' : 'The video is queued for transcoding again.';
              })
            }
          >
            Retry
          </button>
        ) : null}
        {v && v.status !== 0 ? (
          <ConfirmButton
            label="Delete"
            className="danger"
            disabled={busy}
            title="Delete this video?"
            confirmLabel="Delete the video"
            danger
            onConfirm={() =>
              void act(async () => {
                await api('DELETE', `/videos/${id}`);
                return 'Deleted: the video is in status 0 (waiting for deletion) and its files are gone.';
              })
            }
          >
            <p>
              Its source, renditions and covers are removed for good. The record stays in status 0 (waiting for deletion), so applications can see
              what became of it.
            </p>
          </ConfirmButton>
        ) : null}
      </PageHeader>
      <ErrorMessage error={detail.error || error} />
      <Notice>{notice}</Notice>
      {v && detail.data ? (
        <>
          {v.statusReason ? (
            <p className={failed ? 'error' : 'notice'} role={failed ? 'alert' : undefined}>
              {reasonSentence(v.statusReason)}
            </p>
          ) : null}
          <div className="grid">
            <section className="card" aria-labelledby="v-fields">
              <h2 id="v-fields">Fields</h2>
              <dl className="facts">
                <dt>Status</dt>
                <dd>
                  <StatusBadge status={v.status} />
                </dd>
                <dt>Id</dt>
                <dd>
                  <CopyValue value={v.id} what="video id" />
                </dd>
                <dt>Application</dt>
                <dd>
                  <Link to={`/apps/${v.appId}`}>{app.data?.name ?? v.appId}</Link>
                </dd>
                <dt>Uploader</dt>
                <dd>{v.createUser || '—'}</dd>
                <dt>Source</dt>
                <dd className="break">{sourceText(v)}</dd>
                <dt>Length</dt>
                <dd>{v.duration ? formatDuration(v.duration) : '—'}</dd>
                <dt>Registered</dt>
                <dd>{formatTime(v.createdAt)}</dd>
                {v.description ? (
                  <>
                    <dt>Description</dt>
                    <dd>{v.description}</dd>
                  </>
                ) : null}
                {v.tags ? (
                  <>
                    <dt>Tags</dt>
                    <dd>{v.tags}</dd>
                  </>
                ) : null}
                {v.actors ? (
                  <>
                    <dt>Actors</dt>
                    <dd>{v.actors}</dd>
                  </>
                ) : null}
              </dl>
            </section>
            <section className="card" aria-labelledby="v-covers">
              <h2 id="v-covers">Covers</h2>
              {playback.data && playback.data.coverUrl && playback.data.playable ? (
                <>
                  <img className="cover" src={playback.data.coverUrl} alt={`Cover of ${v.title}`} />
                  <ul className="plain covers">
                    {playback.data.covers.map((c) => (
                      <li key={c.t}>
                        <a href={c.url} target="_blank" rel="noreferrer">
                          t={c.t} ({c.width}×{c.height})
                        </a>
                      </li>
                    ))}
                  </ul>
                </>
              ) : (
                <p className="muted">No cover yet.</p>
              )}
            </section>
          </div>
          <section aria-labelledby="v-renditions" className="section">
            <h2 id="v-renditions">Renditions</h2>
            {playback.data && playback.data.renditions.length > 0 ? (
              <>
                {!playback.data.playable ? <p className="muted">Files are served only while the video is in status 1.</p> : null}
                <div className="renditions">
                  {playback.data.renditions.map((r) => (
                    <figure key={r.file} className="card rendition">
                      {playback.data!.playable ? (
                        <video controls preload="metadata" src={r.playUrl} aria-label={`Rendition ${r.label}`} data-label={r.label} />
                      ) : null}
                      <figcaption>
                        <strong>{r.label}</strong> · {r.width}×{r.height} · {r.bitrateKbps} kbps · {formatBytes(r.bytes)}
                        <br />
                        <span className="muted small-text break">
                          PlayURL + VideoURL: <code>{r.playUrl}</code>
                        </span>
                        {playback.data!.playable ? (
                          <>
                            {' '}
                            <a href={r.downloadUrl}>Download</a>
                          </>
                        ) : null}
                      </figcaption>
                    </figure>
                  ))}
                </div>
                {playback.data.hlsUrl ? (
                  <p className="small-text">
                    HLS: <CopyValue value={playback.data.hlsUrl} what="HLS address" />
                  </p>
                ) : null}
              </>
            ) : (
              <p className="muted">No rendition yet.</p>
            )}
          </section>
          <section aria-labelledby="v-jobs" className="section">
            <h2 id="v-jobs">Jobs</h2>
            {detail.data.jobs.length === 0 ? <p className="muted">No job.</p> : null}
            <ul className="plain jobs">
              {detail.data.jobs.map((j) => (
                <li key={j.id} className="job-line">
                  <strong>{j.type}</strong> <StateBadge state={j.state} />{' '}
                  <span className="muted small-text">
                    attempt {j.attempts} of {j.maxAttempts} · {formatTime(j.updatedAt)}
                  </span>
                  {j.state === 'running' ? <JobProgress figures={figures(j)} label={`${j.type} progress`} /> : null}
                  {j.error ? <div className="error-text">{j.error}</div> : null}
                </li>
              ))}
            </ul>
          </section>
          <section aria-labelledby="v-history" className="section">
            <h2 id="v-history">Status history</h2>
            <DataTable className="history" columns={['When', 'From', 'To', 'Reason']}>
              {detail.data.statusHistory.map((h, i) => (
                <tr key={i}>
                  <td>{formatTime(h.at)}</td>
                  <td>{h.from === null ? 'registered' : `${h.from} · ${statusName(h.from)}`}</td>
                  <td>
                    {h.to} · {statusName(h.to)}
                  </td>
                  <td className={h.to === 4 || h.to === 7 ? 'error-text' : ''}>{h.reason || '—'}</td>
                </tr>
              ))}
            </DataTable>
          </section>
        </>
      ) : null}
    </>
  );
}

/**
 * A status reason as a sentence. The server's reasons already say what failed ("download
 * failed: …", "transcoding failed: …", "not a video: …"), so the status name is not put before
 * them again (the badge shows the status).
 */
function reasonSentence(reason: string): string {
  return reason.charAt(0).toUpperCase() + reason.slice(1);
}

/**
 * How the file came, as far as the server records it: SourceFileGetType 2 is a pull from an
 * address; 1 is an upload, which the upload widget (tus) and a server-side
 * `POST /Api/Video/Upload` both give, and the record does not say which.
 */
function sourceText(v: { sourceType: number; sourceUrl: string; status: number }): string {
  if (v.sourceType === 2) return `pulled from ${v.sourceUrl}`;
  if (v.status === 8) return 'to be uploaded (nothing received yet)';
  return 'uploaded (through the upload widget or POST /Api/Video/Upload)';
}

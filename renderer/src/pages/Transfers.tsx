import { useState } from 'react';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { ErrorMessage, Notice, PageHeader, ProgressBar, StateBadge } from '../components/Feedback.js';
import { FinishedJobsTable, JobProgress, useJobProgress } from '../components/JobViews.js';
import { useServerEvent } from '../events.js';
import { formatBytes, formatEta, formatRate, formatTime, shortId } from '../format.js';
import { Link } from '../router.js';
import type { JobView, UploadInProgress } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';
import { useVideoTitles } from './jobTitles.js';

/** Uploads (tus) and downloads (pulls from a URL) in progress, pushed by the server. */
export function Transfers() {
  const initial = useResource(() => api<{ uploads: UploadInProgress[] }>('GET', '/uploads'), []);
  const [pushed, setPushed] = useState<UploadInProgress[]>();
  useServerEvent('uploads', (e) => setPushed(e.uploads));
  const uploads = pushed ?? initial.data?.uploads ?? [];

  const downloads = useResource(() => api<{ jobs: JobView[] }>('GET', '/jobs?type=download&state=queued,running&limit=200'), []);
  const recent = useResource(() => api<{ jobs: JobView[] }>('GET', '/jobs?type=download&state=succeeded,failed,cancelled&limit=10'), []);
  const figures = useJobProgress((e) => e.type === 'download');
  const reload = useDebounced(() => {
    void downloads.reload();
    void recent.reload();
  }, 200);
  useServerEvent('job.state', (e) => e.type === 'download' && reload());
  const titles = useVideoTitles([...(downloads.data?.jobs ?? []), ...(recent.data?.jobs ?? [])].map((j) => j.videoId));
  const { run, error, notice } = useAction(reload);

  return (
    <>
      <PageHeader title="Uploads and downloads" />
      <ErrorMessage error={initial.error || downloads.error || error} />
      <Notice>{notice}</Notice>
      <section aria-labelledby="up-title" className="section">
        <h2 id="up-title">Uploads in progress ({uploads.length})</h2>
        <p className="muted small-text">
          Files arriving through the upload widgets (tus). A server-side upload (<code>POST /Api/Video/Upload</code>) arrives within its one request and is
          not listed.
        </p>
        {uploads.length === 0 ? <p className="muted">No upload in progress.</p> : null}
        <ul className="plain jobs">
          {uploads.map((u) => (
            <li key={u.id} className="card job" data-upload={u.id}>
              <div className="row between">
                {u.videoId ? <Link to={`/videos/${u.videoId}`}>{u.title || shortId(u.videoId)}</Link> : <span>unknown video</span>}
                <span className="muted small-text">{u.filename}</span>
              </div>
              <ProgressBar percent={u.percent} label={`Upload of ${u.title || u.filename}`} />
              <div className="row between">
                <span className="muted small-text">
                  {formatBytes(u.offset)} of {formatBytes(u.size)} · {u.bytesPerSecond === null ? 'measuring speed' : formatRate(u.bytesPerSecond)} · {u.etaSeconds !== null ? `${formatEta(u.etaSeconds)} left` : 'time left unknown'}
                </span>
                <span className="muted small-text">last data {formatTime(u.lastWriteAt)}</span>
              </div>
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="down-title" className="section">
        <h2 id="down-title">Downloads ({downloads.data?.jobs.length ?? 0})</h2>
        <p className="muted small-text">Videos registered with SourceFileGetType 2: vop pulls the file from its address.</p>
        {downloads.data && downloads.data.jobs.length === 0 ? <p className="muted">No download queued or running.</p> : null}
        <ul className="plain jobs">
          {(downloads.data?.jobs ?? []).map((j) => (
            <li key={j.id} className="card job" data-job={j.id}>
              <div className="row between">
                <Link to={`/videos/${j.videoId}`}>{titles[j.videoId] || shortId(j.videoId)}</Link>
                <StateBadge state={j.state} />
              </div>
              {j.state === 'running' ? (
                <JobProgress figures={figures(j)} label={`Download of ${titles[j.videoId] || j.videoId}`} />
              ) : (
                <p className="muted small-text">
                  waiting{j.attempts > 0 ? ` to retry (attempt ${j.attempts} of ${j.maxAttempts}${j.runAfter > Date.now() ? `, at ${formatTime(j.runAfter)}` : ''})` : ''}
                  {j.error ? `: ${j.error}` : ''}
                </p>
              )}
              <ConfirmButton
                label="Cancel"
                ariaLabel={`Cancel the download of ${titles[j.videoId] || shortId(j.videoId)}`}
                className="small danger"
                title={`Cancel the download of “${titles[j.videoId] || shortId(j.videoId)}”?`}
                confirmLabel="Cancel the download"
                danger
                onConfirm={() => void run(async () => (await api('POST', `/jobs/${j.id}/cancel`), 'Download cancelled.'))}
              >
                <p>The video goes to 4 (download failed) and stays there until someone retries it.</p>
              </ConfirmButton>
            </li>
          ))}
        </ul>
      </section>
      {recent.data && recent.data.jobs.length > 0 ? (
        <section aria-labelledby="down-recent" className="section">
          <h2 id="down-recent">Recent downloads</h2>
          <FinishedJobsTable jobs={recent.data.jobs} titles={titles} />
        </section>
      ) : null}
    </>
  );
}

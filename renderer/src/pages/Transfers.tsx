import { useState } from 'react';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { ErrorMessage, Notice, PageHeader, ProgressBar, StateBadge } from '../components/Feedback.js';
import { FinishedJobsTable, JobProgress, useJobProgress } from '../components/JobViews.js';
import { useServerEvent } from '../events.js';
import { formatBytes, formatEta, formatRate, formatTime, shortId } from '../format.js';
import { useT } from '../i18n.js';
import { Link } from '../router.js';
import type { QueueView, UploadInProgress } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';

/** Uploads (tus) and downloads (pulls from a URL) in progress, pushed by the server. */
export function Transfers() {
  const t = useT();
  const initial = useResource(() => api<{ uploads: UploadInProgress[] }>('GET', '/uploads'), []);
  const [pushed, setPushed] = useState<UploadInProgress[]>();
  useServerEvent('uploads', (e) => setPushed(e.uploads));
  const uploads = pushed ?? initial.data?.uploads ?? [];

  // The downloads, their videos' titles and the last finished ones, in one request (as the transcode monitor).
  const q = useResource(() => api<QueueView>('GET', '/queue/download?recent=10'), []);
  const figures = useJobProgress((e) => e.type === 'download');
  const reload = useDebounced(() => void q.reload(), 200);
  useServerEvent('job.state', (e) => e.type === 'download' && reload());
  const titles = q.data?.titles ?? {};
  const downloads = [...(q.data?.running ?? []), ...(q.data?.queued ?? [])];
  const { run, error, notice } = useAction(reload);

  return (
    <>
      <PageHeader title={t.transfers.title} />
      <ErrorMessage error={initial.error || q.error || error} />
      <Notice>{notice}</Notice>
      <section aria-labelledby="up-title" className="section">
        <h2 id="up-title">{t.transfers.uploads(uploads.length)}</h2>
        <p className="muted small-text">
          {t.transfers.uploadsHelp1}
          <code>POST /Api/Video/Upload</code>
          {t.transfers.uploadsHelp2}
        </p>
        {uploads.length === 0 ? <p className="muted">{t.transfers.noUpload}</p> : null}
        <ul className="plain jobs">
          {uploads.map((u) => (
            <li key={u.id} className="card job" data-upload={u.id}>
              <div className="row between">
                {u.videoId ? <Link to={`/videos/${u.videoId}`}>{u.title || shortId(u.videoId)}</Link> : <span>{t.transfers.unknownVideo}</span>}
                <span className="muted small-text">{u.filename}</span>
              </div>
              <ProgressBar percent={u.percent} label={t.transfers.uploadOf(u.title || u.filename)} />
              <div className="row between">
                <span className="muted small-text">
                  {t.transfers.offsetOf(formatBytes(u.offset), formatBytes(u.size))} · {u.bytesPerSecond === null ? t.transfers.measuring : formatRate(u.bytesPerSecond)} ·{' '}
                  {u.etaSeconds !== null ? t.feedback.left(formatEta(u.etaSeconds)) : t.feedback.timeLeftUnknown}
                </span>
                <span className="muted small-text">{t.transfers.lastData(formatTime(u.lastWriteAt))}</span>
              </div>
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="down-title" className="section">
        <h2 id="down-title">{t.transfers.downloads(downloads.length)}</h2>
        <p className="muted small-text">{t.transfers.downloadsHelp}</p>
        {q.data && downloads.length === 0 ? <p className="muted">{t.transfers.noDownload}</p> : null}
        <ul className="plain jobs">
          {downloads.map((j) => {
            const name = titles[j.videoId] || shortId(j.videoId);
            return (
              <li key={j.id} className="card job" data-job={j.id}>
                <div className="row between">
                  <Link to={`/videos/${j.videoId}`}>{name}</Link>
                  <StateBadge state={j.state} />
                </div>
                {j.state === 'running' ? (
                  <JobProgress figures={figures(j)} label={t.transfers.downloadOf(titles[j.videoId] || j.videoId)} />
                ) : (
                  <p className="muted small-text">
                    {t.transfers.waiting}
                    {j.attempts > 0 ? t.transfers.toRetry(j.attempts, j.maxAttempts, j.runAfter > Date.now() ? formatTime(j.runAfter) : '') : ''}
                    {j.error ? `: ${j.error}` : ''}
                  </p>
                )}
                <ConfirmButton
                  label={t.transfers.cancel}
                  ariaLabel={t.transfers.cancelAria(name)}
                  className="small danger"
                  title={t.transfers.cancelTitle(name)}
                  confirmLabel={t.transfers.cancelConfirm}
                  danger
                  onConfirm={() => void run(async () => (await api('POST', `/jobs/${j.id}/cancel`), t.transfers.cancelled))}
                >
                  <p>{t.transfers.cancelExplain}</p>
                </ConfirmButton>
              </li>
            );
          })}
        </ul>
      </section>
      {q.data && q.data.recent.length > 0 ? (
        <section aria-labelledby="down-recent" className="section">
          <h2 id="down-recent">{t.transfers.recent}</h2>
          <FinishedJobsTable jobs={q.data.recent} titles={titles} />
        </section>
      ) : null}
    </>
  );
}

import { useState, type FormEvent } from 'react';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader, StateBadge } from '../components/Feedback.js';
import { FinishedJobsTable, JobProgress, useJobProgress } from '../components/JobViews.js';
import { useServerEvent } from '../events.js';
import { formatTime, shortId } from '../format.js';
import { Link } from '../router.js';
import type { JobView, ProcessingView } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';
import { useVideoTitles } from './jobTitles.js';

/**
 * The transcode queue, live: the server pushes each job's progress (at most 4 times a second)
 * and each change of state; the page reloads the list only when a state changes.
 */
export function Transcode() {
  const queue = useResource(() => api<{ jobs: JobView[] }>('GET', '/jobs?type=transcode&state=queued,running&limit=200'), []);
  const recent = useResource(() => api<{ jobs: JobView[] }>('GET', '/jobs?type=transcode&state=succeeded,failed,cancelled&limit=20'), []);
  const processing = useResource(() => api<ProcessingView>('GET', '/processing'), []);
  const figures = useJobProgress((e) => e.type === 'transcode');

  const reload = useDebounced(() => {
    void queue.reload();
    void recent.reload();
    void processing.reload();
  }, 200);
  useServerEvent('job.state', (e) => e.type === 'transcode' && reload());
  const { run, busyKey: busy, error, notice } = useAction(reload);

  const jobs = queue.data?.jobs ?? [];
  const running = jobs.filter((j) => j.state === 'running');
  const queued = jobs.filter((j) => j.state === 'queued');
  const titles = useVideoTitles([...jobs, ...(recent.data?.jobs ?? [])].map((j) => j.videoId));
  /** One place up or down: the server swaps the job with its neighbour in the queue. */
  const move = (j: JobView, direction: 'up' | 'down') =>
    run(async () => {
      await api('POST', `/jobs/${j.id}/move`, { direction });
      return `“${titles[j.videoId] || shortId(j.videoId)}” moved one place ${direction}.`;
    }, j.id);
  const cancel = (j: JobView, name: string) =>
    run(async () => (await api('POST', `/jobs/${j.id}/cancel`), `Transcode of “${name}” cancelled: the video is now 7 (transcoding failed) and can be retried.`), j.id);

  return (
    <>
      <PageHeader title="Transcode monitor" />
      <ErrorMessage error={queue.error || processing.error || error} />
      <Notice>{notice}</Notice>
      {processing.data ? (
        <ConcurrencyForm
          view={processing.data}
          onSave={(n) =>
            run(async () => {
              await api('PUT', '/processing', { concurrency: n });
              await api('PUT', '/settings', { transcodeConcurrency: n });
              return `${n} transcode${n === 1 ? '' : 's'} at once, from now on (and after a restart).`;
            }, 'concurrency')
          }
        />
      ) : null}

      <section aria-labelledby="running-title" className="section">
        <h2 id="running-title">Running ({running.length})</h2>
        {running.length === 0 ? <p className="muted">Nothing is being transcoded.</p> : null}
        <ul className="plain jobs">
          {running.map((j) => (
            <li key={j.id} className="card job" data-job={j.id} data-video={j.videoId}>
              <div className="row between">
                <Link to={`/videos/${j.videoId}`}>{titles[j.videoId] || shortId(j.videoId)}</Link>
                <StateBadge state={j.state} />
              </div>
              <JobProgress figures={figures(j)} label={`Transcode of ${titles[j.videoId] || j.videoId}`}>
                <CancelTranscode name={titles[j.videoId] || shortId(j.videoId)} disabled={busy === j.id} onConfirm={() => void cancel(j, titles[j.videoId] || shortId(j.videoId))} />
              </JobProgress>
              <p className="muted small-text">
                attempt {j.attempts} of {j.maxAttempts} · started {formatTime(j.startedAt)}
              </p>
            </li>
          ))}
        </ul>
      </section>

      <section aria-labelledby="queued-title" className="section">
        <h2 id="queued-title">Queued ({queued.length})</h2>
        {queued.length === 0 ? <p className="muted">The queue is empty.</p> : null}
        {queued.length > 0 ? (
          <DataTable columns={['#', 'Video', 'Priority', 'Waiting since', { hidden: 'Actions' }]}>
            {queued.map((j, i) => {
              const name = titles[j.videoId] || shortId(j.videoId);
              const above = queued[i - 1];
              const below = queued[i + 1];
              return (
                <tr key={j.id} data-job={j.id}>
                  <td>{i + 1}</td>
                  <td>
                    <Link to={`/videos/${j.videoId}`}>{name}</Link>
                    {j.error ? <div className="error-text small-text">last attempt: {j.error}</div> : null}
                  </td>
                  <td>{j.priority}</td>
                  <td>{formatTime(j.createdAt)}</td>
                  <td className="actions">
                    <button type="button" className="small" disabled={!above || busy === j.id} onClick={() => void move(j, 'up')} aria-label={`Move ${name} up`}>
                      Up
                    </button>
                    <button type="button" className="small" disabled={!below || busy === j.id} onClick={() => void move(j, 'down')} aria-label={`Move ${name} down`}>
                      Down
                    </button>
                    <CancelTranscode name={name} disabled={busy === j.id} onConfirm={() => void cancel(j, name)} />
                  </td>
                </tr>
              );
            })}
          </DataTable>
        ) : null}
      </section>

      <section aria-labelledby="recent-title" className="section">
        <h2 id="recent-title">Recently finished</h2>
        {recent.data && recent.data.jobs.length === 0 ? <p className="muted">No transcode has finished yet.</p> : null}
        {recent.data && recent.data.jobs.length > 0 ? (
          <FinishedJobsTable
            jobs={recent.data.jobs}
            titles={titles}
            action={(j, name) =>
              j.state !== 'succeeded' ? (
                <button type="button" className="small" disabled={busy === j.id} onClick={() => run(async () => (await api('POST', `/jobs/${j.id}/retry`), `Transcode of “${name}” queued again.`), j.id)} aria-label={`Retry ${name}`}>
                  Retry
                </button>
              ) : null
            }
          />
        ) : null}
      </section>
    </>
  );
}

/** Cancel, after asking: a cancelled transcode leaves its video in 7 until it is retried. */
function CancelTranscode({ name, disabled, onConfirm }: { name: string; disabled: boolean; onConfirm: () => void }) {
  return (
    <ConfirmButton label="Cancel" ariaLabel={`Cancel ${name}`} className="small danger" disabled={disabled} title={`Cancel the transcode of “${name}”?`} confirmLabel="Cancel the transcode" danger onConfirm={onConfirm}>
      <p>The video goes to 7 (transcoding failed) and stays there until someone retries it.</p>
    </ConfirmButton>
  );
}

function ConcurrencyForm({ view, onSave }: { view: ProcessingView; onSave: (n: number) => void }) {
  const [n, setN] = useState(String(view.concurrency));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSave(Number(n));
  };
  return (
    <form className="card form" onSubmit={submit} aria-labelledby="conc-title">
      <h2 id="conc-title">Concurrency</h2>
      <div className="fields">
        <div className="field">
          <label htmlFor="concurrency">Transcodes at once</label>
          <input id="concurrency" type="number" min={1} max={64} step={1} value={n} onChange={(e) => setN(e.target.value)} aria-describedby="conc-help" />
        </div>
        <div className="field end">
          <button type="submit" className="primary">
            Apply
          </button>
        </div>
      </div>
      <p id="conc-help" className="muted small-text">
        Now {view.concurrency} ({view.running} running); the default here is {view.defaultConcurrency}, half the cores. One ffmpeg already uses every core, so more at once
        mostly makes each slower. Preset {view.preset}, CRF {view.crf}
        {view.hls ? ', with HLS' : ''}.
      </p>
    </form>
  );
}

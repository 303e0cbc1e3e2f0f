import { useState, type DragEvent, type FormEvent } from 'react';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader, StateBadge } from '../components/Feedback.js';
import { FinishedJobsTable, JobProgress, useJobProgress } from '../components/JobViews.js';
import { useServerEvent } from '../events.js';
import { formatTime, shortId } from '../format.js';
import { useT } from '../i18n.js';
import { Link } from '../router.js';
import type { JobView, ProcessingView, QueueView } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';

/**
 * The transcode queue, live: one request loads it all, however long the queue (GET
 * /admin/api/queue/transcode: jobs, their videos' titles, the processing view); the server pushes
 * each job's progress (at most 4 times a second) and each change of state, on which the page loads
 * again. Queued jobs move one place with Up and Down, or as far as they are dragged.
 */
export function Transcode() {
  const t = useT();
  const q = useResource(() => api<QueueView>('GET', '/queue/transcode?recent=20'), []);
  const figures = useJobProgress((e) => e.type === 'transcode');
  const reload = useDebounced(() => void q.reload(), 200);
  useServerEvent('job.state', (e) => e.type === 'transcode' && reload());
  const { run, busyKey: busy, error, notice, setNotice } = useAction(reload);
  const [drag, setDrag] = useState<{ id: string; over?: number }>();

  const running = q.data?.running ?? [];
  const queued = q.data?.queued ?? [];
  const titles = q.data?.titles ?? {};
  const nameOf = (j: JobView) => titles[j.videoId] || shortId(j.videoId);
  /**
   * `places` places up or down among its application's jobs (the server swaps it with its
   * neighbour there that many times; fairness between applications orders the rest), or to the
   * top: it runs next, whatever its application.
   */
  const move = (j: JobView, direction: 'up' | 'down' | 'top', places = 1) =>
    run(async () => {
      await api('POST', `/jobs/${j.id}/move`, direction === 'top' ? { direction } : { direction, places });
      return direction === 'top' ? t.queue.movedTop(nameOf(j)) : t.queue.moved(nameOf(j), direction, places);
    }, j.id);
  const cancel = (j: JobView) => run(async () => (await api('POST', `/jobs/${j.id}/cancel`), t.queue.cancelled(nameOf(j))), j.id);

  const from = drag ? queued.findIndex((j) => j.id === drag.id) : -1;
  const dropOn = (e: DragEvent, to: number) => {
    e.preventDefault();
    const j = queued[from];
    setDrag(undefined);
    if (!j || from === to) return;
    // Dropped on the first row: it runs next. Elsewhere it passes the jobs of its own application
    // on the way (those are the ones a move reorders).
    if (to === 0) return void move(j, 'top');
    const passed = queued.slice(Math.min(from, to), Math.max(from, to) + 1).filter((x) => x.id !== j.id && x.appId === j.appId).length;
    // Why the drop did nothing: it passed no job of its own application.
    if (passed === 0) return void setNotice(t.queue.otherApps(nameOf(j)));
    void move(j, to < from ? 'up' : 'down', passed);
  };

  return (
    <>
      <PageHeader title={t.queue.title} />
      <ErrorMessage error={q.error || error} />
      <Notice>{notice}</Notice>
      {q.data ? (
        <ConcurrencyForm
          view={q.data.processing}
          onSave={(n) =>
            run(async () => {
              await api('PUT', '/processing', { concurrency: n });
              await api('PUT', '/settings', { transcodeConcurrency: n });
              return t.queue.concurrencySaved(n);
            }, 'concurrency')
          }
        />
      ) : null}

      <section aria-labelledby="running-title" className="section">
        <h2 id="running-title">{t.queue.running(running.length)}</h2>
        {q.data && running.length === 0 ? <p className="muted">{t.queue.nothingRunning}</p> : null}
        <ul className="plain jobs">
          {running.map((j) => (
            <li key={j.id} className="card job" data-job={j.id} data-video={j.videoId}>
              <div className="row between">
                <Link to={`/videos/${j.videoId}`}>{nameOf(j)}</Link>
                <StateBadge state={j.state} />
              </div>
              <JobProgress figures={figures(j)} label={t.queue.progressOf(titles[j.videoId] || j.videoId)}>
                <CancelTranscode name={nameOf(j)} disabled={busy === j.id} onConfirm={() => void cancel(j)} />
              </JobProgress>
              <p className="muted small-text">
                {t.jobs.attempt(j.attempts, j.maxAttempts)} · {t.queue.started(formatTime(j.startedAt))}
              </p>
            </li>
          ))}
        </ul>
      </section>

      <section aria-labelledby="queued-title" className="section">
        <h2 id="queued-title">{t.queue.queued(queued.length)}</h2>
        {q.data && queued.length === 0 ? <p className="muted">{t.queue.empty}</p> : null}
        {queued.length > 1 ? <p className="muted small-text drag-hint">{t.queue.dragHint}</p> : null}
        {queued.length > 0 ? (
          <DataTable className="queue" columns={[{ hidden: t.queue.dragColumn, className: 'grip' }, '#', t.queue.video, t.queue.priority, t.queue.waitingSince, { hidden: t.queue.actions }]}>
            {queued.map((j, i) => {
              const name = nameOf(j);
              // Up and Down move it among its own application's jobs: at their ends, they cannot.
              const firstOfApp = !queued.slice(0, i).some((x) => x.appId === j.appId);
              const lastOfApp = !queued.slice(i + 1).some((x) => x.appId === j.appId);
              const target = drag && drag.over === i && from >= 0 && from !== i ? (i < from ? 'drop-before' : 'drop-after') : '';
              return (
                <tr
                  key={j.id}
                  data-job={j.id}
                  draggable={busy === ''}
                  className={[target, drag?.id === j.id ? 'dragging' : ''].filter(Boolean).join(' ') || undefined}
                  onDragStart={(e) => {
                    e.dataTransfer.setData('text/plain', j.id);
                    e.dataTransfer.effectAllowed = 'move';
                    setDrag({ id: j.id });
                  }}
                  onDragOver={(e) => {
                    if (!drag) return;
                    e.preventDefault();
                    e.dataTransfer.dropEffect = 'move';
                    if (drag.over !== i) setDrag({ ...drag, over: i });
                  }}
                  onDrop={(e) => dropOn(e, i)}
                  onDragEnd={() => setDrag(undefined)}
                >
                  <td className="grip" aria-hidden="true">
                    ⠿
                  </td>
                  <td>{i + 1}</td>
                  <td>
                    <Link to={`/videos/${j.videoId}`}>{name}</Link>
                    {j.error ? <div className="error-text small-text">{t.queue.lastAttempt(j.error)}</div> : null}
                  </td>
                  <td>{j.priority}</td>
                  <td>{formatTime(j.createdAt)}</td>
                  <td className="actions">
                    <button type="button" className="small" disabled={firstOfApp || busy === j.id} onClick={() => void move(j, 'up')} aria-label={t.queue.moveUpAria(name)}>
                      {t.queue.up}
                    </button>
                    <button type="button" className="small" disabled={lastOfApp || busy === j.id} onClick={() => void move(j, 'down')} aria-label={t.queue.moveDownAria(name)}>
                      {t.queue.down}
                    </button>
                    <CancelTranscode name={name} disabled={busy === j.id} onConfirm={() => void cancel(j)} />
                  </td>
                </tr>
              );
            })}
          </DataTable>
        ) : null}
      </section>

      <section aria-labelledby="recent-title" className="section">
        <h2 id="recent-title">{t.queue.recent}</h2>
        {q.data && q.data.recent.length === 0 ? <p className="muted">{t.queue.noneFinished}</p> : null}
        {q.data && q.data.recent.length > 0 ? (
          <FinishedJobsTable
            jobs={q.data.recent}
            titles={titles}
            action={(j, name) =>
              j.state !== 'succeeded' ? (
                <button type="button" className="small" disabled={busy === j.id} onClick={() => run(async () => (await api('POST', `/jobs/${j.id}/retry`), t.queue.retried(name)), j.id)} aria-label={t.queue.retryAria(name)}>
                  {t.queue.retry}
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
  const t = useT();
  return (
    <ConfirmButton label={t.queue.cancel} ariaLabel={t.queue.cancelAria(name)} className="small danger" disabled={disabled} title={t.queue.cancelTitle(name)} confirmLabel={t.queue.cancelConfirm} danger onConfirm={onConfirm}>
      <p>{t.queue.cancelExplain}</p>
    </ConfirmButton>
  );
}

function ConcurrencyForm({ view, onSave }: { view: ProcessingView; onSave: (n: number) => void }) {
  const t = useT();
  const [n, setN] = useState(String(view.concurrency));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSave(Number(n));
  };
  return (
    <form className="card form" onSubmit={submit} aria-labelledby="conc-title">
      <h2 id="conc-title">{t.queue.concurrency}</h2>
      <div className="fields">
        <div className="field">
          <label htmlFor="concurrency">{t.queue.transcodesAtOnce}</label>
          <input id="concurrency" type="number" min={1} max={64} step={1} value={n} onChange={(e) => setN(e.target.value)} aria-describedby="conc-help" />
        </div>
        <div className="field end">
          <button type="submit" className="primary">
            {t.queue.apply}
          </button>
        </div>
      </div>
      <p id="conc-help" className="muted small-text">
        {t.queue.concurrencyHelp(view.concurrency, view.running, view.defaultConcurrency, view.preset, view.crf, view.hls)}
      </p>
    </form>
  );
}

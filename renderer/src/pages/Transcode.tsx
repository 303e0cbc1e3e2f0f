import { useState, type DragEvent, type FormEvent } from 'react';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader, StateBadge } from '../components/Feedback.js';
import { FinishedJobsTable, JobProgress, useJobProgress } from '../components/JobViews.js';
import { useServerEvent } from '../events.js';
import { formatTime, shortId } from '../format.js';
import { useT } from '../i18n.js';
import { jobErrorText } from '../serverWords.js';
import { Link } from '../router.js';
import type { JobView, ProcessingView, QueueView } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';

/**
 * The job types the monitor shows, in the order they take turns: a video's first rendition (it
 * becomes playable), then the rest of its ladder, which starts only while no first rendition
 * waits (server/processing/ladderJob.ts).
 */
const KINDS = ['transcode', 'ladder'];

/**
 * The transcode queue, live: one request loads it all, however long the queue (GET
 * /admin/api/queue/transcode,ladder: jobs, their videos' titles, the processing view); the server
 * pushes each job's progress (at most 4 times a second) and each change of state, on which the
 * page loads again. Each row says which work it is: a first rendition or the rest of a ladder.
 * Queued jobs move one place with Up and Down, or as far as they are dragged, among the jobs of
 * their own kind (each kind is a queue of its own).
 */
export function Transcode() {
  const t = useT();
  const q = useResource(() => api<QueueView>('GET', `/queue/${KINDS.join(',')}?recent=20`), []);
  const figures = useJobProgress((e) => KINDS.includes(e.type));
  const reload = useDebounced(() => void q.reload(), 200);
  useServerEvent('job.state', (e) => KINDS.includes(e.type) && reload());
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
  const cancel = (j: JobView) =>
    run(async () => (await api('POST', `/jobs/${j.id}/cancel`), j.type === 'ladder' ? t.queue.ladderCancelled(nameOf(j)) : t.queue.cancelled(nameOf(j))), j.id);
  const kindTag = (j: JobView) => (
    <span className={`tag kind kind-${j.type}`} data-kind={j.type}>
      {t.queue.kinds[j.type] ?? j.type}
    </span>
  );

  const from = drag ? queued.findIndex((j) => j.id === drag.id) : -1;
  const dropOn = (e: DragEvent, to: number) => {
    e.preventDefault();
    const j = queued[from];
    setDrag(undefined);
    if (!j || from === to) return;
    // Each kind is a queue of its own: a job dropped among the other kind's stays in its own.
    if (queued[to]?.type !== j.type) return void setNotice(t.queue.otherKind(nameOf(j)));
    // Dropped on the first row of its kind: it runs next. Elsewhere it passes the jobs of its own
    // application on the way (those are the ones a move reorders).
    if (to === queued.findIndex((x) => x.type === j.type)) return void move(j, 'top');
    const passed = queued.slice(Math.min(from, to), Math.max(from, to) + 1).filter((x) => x.id !== j.id && x.appId === j.appId && x.type === j.type).length;
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
            <li key={j.id} className="card job" data-job={j.id} data-video={j.videoId} data-kind={j.type}>
              <div className="row between">
                <span>
                  <Link to={`/videos/${j.videoId}`}>{nameOf(j)}</Link>
                  {kindTag(j)}
                </span>
                <StateBadge state={j.state} />
              </div>
              <JobProgress figures={figures(j)} label={(j.type === 'ladder' ? t.queue.ladderProgressOf : t.queue.progressOf)(titles[j.videoId] || j.videoId)}>
                <CancelTranscode job={j} name={nameOf(j)} disabled={busy === j.id} onConfirm={() => void cancel(j)} />
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
          <DataTable className="queue" columns={[{ hidden: t.queue.dragColumn, className: 'grip' }, '#', t.queue.video, t.queue.kind, t.queue.priority, t.queue.waitingSince, { hidden: t.queue.actions }]}>
            {queued.map((j, i) => {
              const name = nameOf(j);
              // Up and Down move it among its own application's jobs of its kind: at their ends, they cannot.
              const peer = (x: JobView) => x.appId === j.appId && x.type === j.type;
              const firstOfApp = !queued.slice(0, i).some(peer);
              const lastOfApp = !queued.slice(i + 1).some(peer);
              const target = drag && drag.over === i && from >= 0 && from !== i ? (i < from ? 'drop-before' : 'drop-after') : '';
              return (
                <tr
                  key={j.id}
                  data-job={j.id}
                  data-kind={j.type}
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
                    {j.error ? <div className="error-text small-text">{t.queue.lastAttempt(jobErrorText(j, t))}</div> : null}
                  </td>
                  <td>{kindTag(j)}</td>
                  <td>{j.priority}</td>
                  <td>{formatTime(j.createdAt)}</td>
                  <td className="actions">
                    <button type="button" className="small" disabled={firstOfApp || busy === j.id} onClick={() => void move(j, 'up')} aria-label={t.queue.moveUpAria(name)}>
                      {t.queue.up}
                    </button>
                    <button type="button" className="small" disabled={lastOfApp || busy === j.id} onClick={() => void move(j, 'down')} aria-label={t.queue.moveDownAria(name)}>
                      {t.queue.down}
                    </button>
                    <CancelTranscode job={j} name={name} disabled={busy === j.id} onConfirm={() => void cancel(j)} />
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
            kind={kindTag}
            action={(j, name) =>
              j.state !== 'succeeded' ? (
                <button
                  type="button"
                  className="small"
                  disabled={busy === j.id}
                  onClick={() => run(async () => (await api('POST', `/jobs/${j.id}/retry`), j.type === 'ladder' ? t.queue.ladderRetried(name) : t.queue.retried(name)), j.id)}
                  aria-label={t.queue.retryAria(name)}
                >
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

/**
 * Cancel, after asking: a cancelled transcode leaves its video in 7 until it is retried; a
 * cancelled ladder leaves it playable with what it has, its ladder failed until retried.
 */
function CancelTranscode({ job, name, disabled, onConfirm }: { job: JobView; name: string; disabled: boolean; onConfirm: () => void }) {
  const t = useT();
  const ladder = job.type === 'ladder';
  return (
    <ConfirmButton
      label={t.queue.cancel}
      ariaLabel={t.queue.cancelAria(name)}
      className="small danger"
      disabled={disabled}
      title={ladder ? t.queue.ladderCancelTitle(name) : t.queue.cancelTitle(name)}
      confirmLabel={ladder ? t.queue.ladderCancelConfirm : t.queue.cancelConfirm}
      danger
      onConfirm={onConfirm}
    >
      <p>{ladder ? t.queue.ladderCancelExplain : t.queue.cancelExplain}</p>
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
      <p className="muted small-text" data-testid="ladder-help">
        {t.queue.ladderHelp(view.ladderConcurrency, view.ladderRunning)}
      </p>
    </form>
  );
}

import { useState, type ReactNode } from 'react';
import { useServerEvent } from '../events.js';
import { formatTime, shortId } from '../format.js';
import { useT } from '../i18n.js';
import { jobErrorText } from '../serverWords.js';
import type { Messages } from '../messages/en.js';
import { Link } from '../router.js';
import type { JobView, ServerEvents } from '../types.js';
import { DataTable } from './DataTable.js';
import { ProgressBar, SpeedEta, StateBadge } from './Feedback.js';

/** A running job's figures: what the server pushed last, else what the job list said. */
export interface JobFigures {
  percent: number;
  speed: string | null | undefined;
  etaSeconds: number | null | undefined;
}

type Pushed = Pick<ServerEvents['job.progress'], 'percent' | 'speed' | 'etaSeconds'>;

/**
 * Follows the progress the server pushes (job.progress, up to 4 times a second) for the jobs
 * `accept` takes, without reloading the list; gives each job's figures, pushed over listed.
 */
export function useJobProgress(accept: (e: ServerEvents['job.progress']) => boolean): (job: Pick<JobView, 'id' | 'progress' | 'speed' | 'etaSeconds'>) => JobFigures {
  const [pushed, setPushed] = useState<Record<string, Pushed>>({});
  useServerEvent('job.progress', (e) => {
    if (accept(e)) setPushed((l) => ({ ...l, [e.jobId]: { percent: e.percent, speed: e.speed, etaSeconds: e.etaSeconds } }));
  });
  return (job) => {
    const p = pushed[job.id];
    return { percent: p?.percent ?? job.progress, speed: p?.speed ?? job.speed, etaSeconds: p?.etaSeconds ?? job.etaSeconds };
  };
}

/**
 * Where a job stands among its attempts. A failed job is over: the queue runs it no more, either
 * because its attempts ran out or because its failure was permanent (a refused pull, a source
 * that is not a video) and it stopped early; "attempt 1 of 5" would promise four more.
 */
export function jobAttempts(t: Messages, job: Pick<JobView, 'state' | 'attempts' | 'maxAttempts'>): string {
  if (job.state === 'failed') return job.attempts < job.maxAttempts ? t.jobs.notRetried(job.attempts) : t.jobs.gaveUp(job.attempts);
  // A job that succeeded has no attempt to come: "attempt 1 of 2" would promise one.
  if (job.state === 'succeeded') return t.jobs.succeededAt(job.attempts);
  return t.jobs.attempt(job.attempts, job.maxAttempts);
}

/** A running job's progress bar, then its speed and time left; `children` (a Cancel button) goes beside those. */
export function JobProgress({ figures, label, children }: { figures: JobFigures; label: string; children?: ReactNode }) {
  const speedEta = <SpeedEta speed={figures.speed} etaSeconds={figures.etaSeconds} />;
  return (
    <>
      <ProgressBar percent={figures.percent} label={label} />
      {children ? (
        <div className="row between">
          {speedEta}
          {children}
        </div>
      ) : (
        speedEta
      )}
    </>
  );
}

/**
 * Finished jobs (succeeded, failed, cancelled): the video, the state, when, and the error.
 * `action` adds a last column (a Retry button), given the job and its video's name; `kind` marks
 * each job's kind beside its video, where the table mixes several.
 */
export function FinishedJobsTable({ jobs, titles, action, kind }: { jobs: JobView[]; titles: Record<string, string>; action?: (job: JobView, name: string) => ReactNode; kind?: (job: JobView) => ReactNode }) {
  const t = useT();
  return (
    <DataTable columns={[t.finished.video, t.finished.state, t.finished.finished, t.finished.error, ...(action ? [{ hidden: t.finished.actions }] : [])]}>
      {jobs.map((j) => {
        const name = titles[j.videoId] || shortId(j.videoId);
        return (
          <tr key={j.id} data-job={j.id}>
            <td>
              <Link to={`/videos/${j.videoId}`}>{name}</Link>
              {kind?.(j)}
            </td>
            <td>
              <StateBadge state={j.state} />
            </td>
            <td>{formatTime(j.finishedAt)}</td>
            <td className="error-text break">{jobErrorText(j, t)}</td>
            {action ? <td>{action(j, name)}</td> : null}
          </tr>
        );
      })}
    </DataTable>
  );
}

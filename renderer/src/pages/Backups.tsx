import { useEffect, useState } from 'react';
import { api } from '../api.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader } from '../components/Feedback.js';
import { formatBytes, formatTime } from '../format.js';
import { useT } from '../i18n.js';
import type { Messages } from '../messages/en.js';
import type { BackupRecord, BackupsView, ScheduledRun } from '../types.js';
import { useAction } from '../useAction.js';
import { useResource } from '../useResource.js';

/** How often the page asks what is under way while a backup runs. */
const BUSY_POLL_MS = 1_000;

/**
 * Backups (docs/backup.md, "Scheduled backups and the console"): the last one and whether it
 * verified, the folder's backups with a download each, the schedule, and a button that makes one.
 */
export function BackupsPage() {
  const t = useT();
  const b = t.backups;
  const view = useResource(() => api<BackupsView>('GET', '/backups'), []);
  const [withMedia, setWithMedia] = useState(false);
  const action = useAction(() => view.reload());
  const underWay = view.data?.underWay ?? null;

  // While a backup runs (this page's or another's), its progress is read again and again.
  const running = action.busyKey === 'make' || underWay !== null;
  useEffect(() => {
    if (!running) return;
    const timer = window.setInterval(() => void view.reload(), BUSY_POLL_MS);
    return () => window.clearInterval(timer);
  }, [running]);

  const make = () =>
    action.run(async () => {
      const record = await api<BackupRecord>('POST', '/backups', { media: withMedia ? 'include' : 'none' });
      return record.verified ? b.madeOk(record.name) : b.madeBad(record.name);
    }, 'make');

  const download = (name: string) =>
    action.run(async () => {
      // A link carries no X-Vop-Console header: the server hands a ticket for this one file, good
      // for a minute, and the browser streams the file to disk itself (a full backup can be gigabytes).
      const { url } = await api<{ url: string }>('POST', `/backups/${encodeURIComponent(name)}/ticket`);
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
    }, `download:${name}`);

  const backups = view.data?.backups ?? [];
  const last = backups[0];
  return (
    <>
      <PageHeader title={b.title} />
      <p className="muted">{b.intro}</p>
      <ErrorMessage error={view.error || action.error} />
      <Notice>{action.notice}</Notice>
      <section aria-labelledby="backup-last" className="section">
        <h2 id="backup-last">{b.last}</h2>
        {view.data && !last ? <p className="muted">{b.noneYet}</p> : null}
        {last ? <LastBackup record={last} t={t} /> : null}
        {view.data ? <p className="muted small-text">{b.folder(view.data.folder)}</p> : null}
      </section>
      <section aria-labelledby="backup-make" className="section card">
        <h2 id="backup-make">{b.makeTitle}</h2>
        <p className="muted small-text">{b.makeHelp}</p>
        <label className="row">
          <input type="checkbox" checked={withMedia} onChange={(e) => setWithMedia(e.target.checked)} disabled={running} />
          {b.withMediaLabel}
        </label>
        <p>
          <button type="button" className="primary" onClick={() => void make()} disabled={running} aria-busy={running}>
            {running ? b.making : b.make}
          </button>
        </p>
        {underWay ? (
          <p className="muted" role="status" data-testid="backup-under-way">
            {b.underWay(formatBytes(underWay.bytes), formatTime(underWay.since))}
          </p>
        ) : null}
      </section>
      <section aria-labelledby="backup-list" className="section">
        <h2 id="backup-list">{b.list(backups.length)}</h2>
        {backups.length > 0 ? (
          <DataTable className="backups" columns={[b.name, b.when, b.kind, b.size, b.check, { hidden: b.download }]}>
            {backups.map((r) => (
              <tr key={r.name} data-backup={r.name}>
                <td className="file">
                  <code>{r.name}</code>
                </td>
                <td>{formatTime(r.createdAt)}</td>
                <td className="contents">
                  {mediaWords(r, t)} · {b.by[r.by] ?? r.by}
                </td>
                <td className="size">{formatBytes(r.bytes)}</td>
                <td>
                  <VerifiedBadge record={r} t={t} />
                </td>
                <td>
                  <button type="button" className="small" aria-label={b.downloadAria(r.name)} disabled={action.busyKey === `download:${r.name}`} onClick={() => void download(r.name)}>
                    {b.download}
                  </button>
                </td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </section>
      {view.data ? <Schedule view={view.data} t={t} /> : null}
    </>
  );
}

function mediaWords(r: BackupRecord, t: Messages): string {
  return r.media === 'include' ? t.backups.withMedia : r.media === 'list' ? t.backups.mediaList : t.backups.noMedia;
}

function VerifiedBadge({ record, t }: { record: BackupRecord; t: Messages }) {
  return record.verified ? (
    <span className="badge ok" data-verified="true">
      {t.backups.verified}
    </span>
  ) : (
    <span className="badge bad" data-verified="false" title={record.problems?.join('\n')}>
      {t.backups.notVerified}
    </span>
  );
}

function LastBackup({ record, t }: { record: BackupRecord; t: Messages }) {
  const b = t.backups;
  return (
    <div className="card" data-testid="last-backup">
      <p className="row between">
        <span>{b.made(formatTime(record.createdAt))}</span>
        <VerifiedBadge record={record} t={t} />
      </p>
      <p>
        {b.size}: {formatBytes(record.bytes)} · {mediaWords(record, t)} · {b.by[record.by] ?? record.by}
      </p>
      {record.counts ? <p className="muted small-text">{b.counts(record.counts.apps, record.counts.videos, record.counts.mediaObjects)}</p> : null}
      {record.problems?.length ? <p className="error">{b.problems(record.problems.join(t.common.listSeparator))}</p> : null}
    </div>
  );
}

function Schedule({ view, t }: { view: BackupsView; t: Messages }) {
  const b = t.backups;
  const s = view.schedule;
  const run = (r: ScheduledRun | undefined) => (r ? (r.ok || r.skipped ? b.lastRun(formatTime(r.at)) : b.lastFailed(formatTime(r.at), r.error ?? '')) : '');
  const parts = (...items: string[]) => items.filter(Boolean).join(' · ');
  return (
    <section aria-labelledby="backup-schedule" className="section">
      <h2 id="backup-schedule">{b.schedule}</h2>
      <p className="muted small-text">{b.zone(s.timeZone ?? b.serverZone)}</p>
      {s.runsHere ? null : <p className="muted">{b.notHere}</p>}
      <ul className="plain">
        <li data-schedule="daily">
          <strong>{b.daily}</strong>: {s.daily.enabled ? parts(b.every.daily!, b.at(s.daily.at), b.keep(s.daily.keep), s.daily.next ? b.next(formatTime(s.daily.next)) : '', run(s.last.daily)) : b.off}
        </li>
        <li data-schedule="full">
          <strong>{b.full}</strong>:{' '}
          {s.full.every === 'off'
            ? b.off
            : parts(b.every[s.full.every] ?? s.full.every, s.full.every === 'weekly' ? (b.weekdays[s.full.weekday] ?? s.full.weekday) : '', b.at(s.full.at), b.keep(s.full.keep), s.full.next ? b.next(formatTime(s.full.next)) : '', run(s.last.full))}
        </li>
      </ul>
      <p className="muted small-text">{b.scheduleHelp}</p>
    </section>
  );
}

import { VideoStatus } from '../../../server/core/videoStatus.js';
import { useState, type FormEvent } from 'react';
import { api, query } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader, StatusBadge } from '../components/Feedback.js';
import { useServerEvent } from '../events.js';
import { formatDuration, formatTime, STATUSES, statusName } from '../format.js';
import { Link, navigate } from '../router.js';
import { useT } from '../i18n.js';
import type { AppView, VideoRow } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';

const PAGE = 25;

/** Search and filter videos; the filters live in the address, so a filtered list can be linked. */
export function Videos({ search }: { search: URLSearchParams }) {
  const filters = {
    q: search.get('q') ?? '',
    status: search.get('status') ?? '',
    createUser: search.get('createUser') ?? '',
    appId: search.get('appId') ?? '',
    offset: Number(search.get('offset') ?? 0) || 0,
  };
  const key = search.toString();
  /** Whether the list is narrowed: an empty list then says nothing matched, else that there is no video yet. */
  const filtered = Boolean(filters.q || filters.status || filters.createUser || filters.appId);
  const list = useResource(() => api<{ total: number; videos: VideoRow[] }>('GET', `/videos${query({ ...filters, offset: filters.offset || undefined, limit: PAGE })}`), [key]);
  const apps = useResource(() => api<{ apps: AppView[] }>('GET', '/apps'), []);
  const refresh = useDebounced(() => void list.reload(), 400);
  useServerEvent('video.status', refresh);
  const t = useT();
  const h = t.housekeeping;
  /** Ids picked for a bulk action, on this page (a new page or filter starts afresh). */
  const [picked, setPicked] = useState<{ key: string; ids: Set<string> }>({ key, ids: new Set() });
  const selected = picked.key === key ? picked.ids : new Set<string>();
  const setSelected = (ids: Set<string>) => setPicked({ key, ids });
  const [refused, setRefused] = useState<string[]>([]);
  const action = useAction(() => list.reload());
  const onPage = list.data?.videos ?? [];
  const allPicked = onPage.length > 0 && onPage.every((v) => selected.has(v.id));
  /** POST /videos/bulk: each video on its own; what was refused is listed with the server's reason. */
  const bulk = (kind: 'delete' | 'retry') =>
    action.run(async () => {
      const ids = [...selected];
      const { results } = await api<{ results: Array<{ id: string; ok: boolean; error?: { message: string } }> }>('POST', '/videos/bulk', { action: kind, ids });
      const names = new Map(onPage.map((v) => [v.id, v.title || v.id]));
      const notDone = results.filter((r) => !r.ok);
      setRefused(notDone.map((r) => h.refusedItem(names.get(r.id) ?? r.id, r.error?.message ?? '')));
      setSelected(new Set(notDone.map((r) => r.id)));
      return h.bulkDone(kind, results.length - notDone.length, notDone.length);
    }, `bulk-${kind}`);

  const go = (f: Partial<typeof filters>) => {
    const next = { ...filters, offset: 0, ...f };
    navigate(`/videos${query({ q: next.q, status: next.status, createUser: next.createUser, appId: next.appId, offset: next.offset || undefined })}`, { replace: true });
  };

  return (
    <>
      <PageHeader title={t.videos.title} />
      <Filters key={key} initial={filters} apps={apps.data?.apps ?? []} onApply={go} />
      <ErrorMessage error={list.error || action.error} />
      <Notice>{action.notice}</Notice>
      {refused.length > 0 && action.notice ? (
        <ul className="refused" aria-label={h.bulkDone('retry', 0, refused.length)}>
          {refused.map((r) => (
            <li key={r}>{r}</li>
          ))}
        </ul>
      ) : null}
      {list.data ? (
        <>
          {list.data.total === 0 && !filtered ? (
            <div className="empty" aria-live="polite" data-testid="no-videos">
              <p>
                <strong>{t.videos.noneYet}</strong>
              </p>
              <p className="muted">{t.videos.noneYetHelp}</p>
              <p>
                <Link to="/apps">{t.videos.toApplications}</Link>
              </p>
            </div>
          ) : (
            <p className="muted" aria-live="polite">
              {list.data.total === 0 ? t.videos.noMatch : t.videos.count(list.data.total, filters.offset + 1, filters.offset + list.data.videos.length)}
            </p>
          )}
          {list.data.videos.length > 0 ? (
            <div className="row bulk" role="group" aria-label={h.selected(selected.size)}>
              <label className="row">
                <input type="checkbox" checked={allPicked} onChange={(e) => setSelected(new Set(e.target.checked ? onPage.map((v) => v.id) : []))} />
                {h.selectPage}
              </label>
              <span className="muted" aria-live="polite">
                {h.selected(selected.size)}
              </span>
              <button type="button" disabled={selected.size === 0 || action.busy} onClick={() => void bulk('retry')}>
                {h.retrySelected}
              </button>
              <ConfirmButton
                label={h.deleteSelected}
                className="danger"
                disabled={selected.size === 0 || action.busy}
                title={h.deleteTitle(selected.size)}
                confirmLabel={h.deleteConfirm}
                danger
                onConfirm={() => void bulk('delete')}
              >
                <p>{h.deleteBody}</p>
              </ConfirmButton>
              <button type="button" disabled={selected.size === 0} onClick={() => setSelected(new Set())}>
                {h.clearSelection}
              </button>
            </div>
          ) : null}
          {list.data.videos.length > 0 ? (
            <DataTable className="videos" columns={[{ hidden: h.selectPage, className: 'pick-cell' }, { hidden: t.videos.cover, className: 'thumb-cell' }, t.videos.videoTitle, t.videos.status, t.videos.application, t.videos.uploader, t.videos.length, t.videos.registered]}>
              {list.data.videos.map((v) => (
                <tr key={v.id} data-video={v.id}>
                  <td className="pick-cell">
                    <input
                      type="checkbox"
                      aria-label={h.selectVideo(v.title || v.id)}
                      checked={selected.has(v.id)}
                      onChange={(e) => {
                        const next = new Set(selected);
                        if (e.target.checked) next.add(v.id);
                        else next.delete(v.id);
                        setSelected(next);
                      }}
                    />
                  </td>
                  <td className="thumb-cell">{v.coverUrl && v.status === VideoStatus.Normal ? <img className="thumb" src={`${v.coverUrl}?t=4`} alt="" loading="lazy" /> : <span className="thumb empty" />}</td>
                  <td>
                    <Link to={`/videos/${v.id}`}>{v.title || t.video.noTitle}</Link>
                  </td>
                  <td>
                    <StatusBadge status={v.status} />
                  </td>
                  <td>{v.appName || v.appId}</td>
                  <td>{v.createUser || <span className="muted">—</span>}</td>
                  <td>{v.duration ? formatDuration(v.duration) : '—'}</td>
                  <td>{formatTime(v.createdAt)}</td>
                </tr>
              ))}
            </DataTable>
          ) : null}
          <div className="row">
            <button type="button" disabled={filters.offset === 0} onClick={() => go({ offset: Math.max(0, filters.offset - PAGE) })}>
              {t.videos.newer}
            </button>
            <button type="button" disabled={filters.offset + PAGE >= list.data.total} onClick={() => go({ offset: filters.offset + PAGE })}>
              {t.videos.older}
            </button>
          </div>
        </>
      ) : null}
    </>
  );
}

function Filters({ initial, apps, onApply }: { initial: { q: string; status: string; createUser: string; appId: string }; apps: AppView[]; onApply: (f: { q: string; status: string; createUser: string; appId: string }) => void }) {
  const [f, setF] = useState(initial);
  const t = useT();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(f);
  };
  return (
    <form className="card form filters" onSubmit={submit} role="search" aria-label={t.videos.find}>
      <div className="fields">
        <div className="field grow">
          <label htmlFor="f-q">{t.housekeeping.searchLabel}</label>
          <input id="f-q" type="search" value={f.q} onChange={(e) => setF({ ...f, q: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="f-status">{t.videos.status}</label>
          <select id="f-status" value={f.status} onChange={(e) => setF({ ...f, status: e.target.value })}>
            <option value="">{t.common.any}</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s} · {statusName(s)}
              </option>
            ))}
            <option value="4,7">{t.videos.failed}</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="f-user">{t.videos.uploader}</label>
          <input id="f-user" value={f.createUser} onChange={(e) => setF({ ...f, createUser: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="f-app">{t.videos.application}</label>
          <select id="f-app" value={f.appId} onChange={(e) => setF({ ...f, appId: e.target.value })}>
            <option value="">{t.common.any}</option>
            {apps.map((a) => (
              <option key={a.appId} value={a.appId}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field end row">
          <button type="submit" className="primary">
            {t.videos.search}
          </button>
          <button
            type="button"
            onClick={() => {
              const empty = { q: '', status: '', createUser: '', appId: '' };
              setF(empty);
              onApply(empty);
            }}
          >
            {t.videos.clear}
          </button>
        </div>
      </div>
    </form>
  );
}

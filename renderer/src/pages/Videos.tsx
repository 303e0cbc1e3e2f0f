import { useState, type FormEvent } from 'react';
import { api, query } from '../api.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, PageHeader, StatusBadge } from '../components/Feedback.js';
import { useServerEvent } from '../events.js';
import { formatDuration, formatTime, STATUS_NAMES } from '../format.js';
import { Link, navigate } from '../router.js';
import type { AppView, VideoRow } from '../types.js';
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
  const list = useResource(() => api<{ total: number; videos: VideoRow[] }>('GET', `/videos${query({ ...filters, offset: filters.offset || undefined, limit: PAGE })}`), [key]);
  const apps = useResource(() => api<{ apps: AppView[] }>('GET', '/apps'), []);
  const refresh = useDebounced(() => void list.reload(), 400);
  useServerEvent('video.status', refresh);

  const go = (f: Partial<typeof filters>) => {
    const next = { ...filters, offset: 0, ...f };
    navigate(`/videos${query({ q: next.q, status: next.status, createUser: next.createUser, appId: next.appId, offset: next.offset || undefined })}`, { replace: true });
  };

  return (
    <>
      <PageHeader title="Videos" />
      <Filters key={key} initial={filters} apps={apps.data?.apps ?? []} onApply={go} />
      <ErrorMessage error={list.error} />
      {list.data ? (
        <>
          <p className="muted" aria-live="polite">
            {list.data.total === 0
              ? 'No video matches.'
              : `${list.data.total} video${list.data.total === 1 ? '' : 's'}; showing ${filters.offset + 1} to ${filters.offset + list.data.videos.length}, newest first.`}
          </p>
          {list.data.videos.length > 0 ? (
            <DataTable className="videos" columns={[{ hidden: 'Cover', className: 'thumb-cell' }, 'Title', 'Status', 'Application', 'Uploader', 'Length', 'Registered']}>
              {list.data.videos.map((v) => (
                <tr key={v.id}>
                  <td className="thumb-cell">{v.coverUrl && v.status === 1 ? <img className="thumb" src={`${v.coverUrl}?t=4`} alt="" loading="lazy" /> : <span className="thumb empty" />}</td>
                  <td>
                    <Link to={`/videos/${v.id}`}>{v.title || '(no title)'}</Link>
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
              Newer
            </button>
            <button type="button" disabled={filters.offset + PAGE >= list.data.total} onClick={() => go({ offset: filters.offset + PAGE })}>
              Older
            </button>
          </div>
        </>
      ) : null}
    </>
  );
}

function Filters({ initial, apps, onApply }: { initial: { q: string; status: string; createUser: string; appId: string }; apps: AppView[]; onApply: (f: { q: string; status: string; createUser: string; appId: string }) => void }) {
  const [f, setF] = useState(initial);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(f);
  };
  return (
    <form className="card form filters" onSubmit={submit} role="search" aria-label="Find videos">
      <div className="fields">
        <div className="field grow">
          <label htmlFor="f-q">Title contains</label>
          <input id="f-q" type="search" value={f.q} onChange={(e) => setF({ ...f, q: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="f-status">Status</label>
          <select id="f-status" value={f.status} onChange={(e) => setF({ ...f, status: e.target.value })}>
            <option value="">Any</option>
            {Object.entries(STATUS_NAMES).map(([s, name]) => (
              <option key={s} value={s}>
                {s} · {name}
              </option>
            ))}
            <option value="4,7">Failed (4 or 7)</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="f-user">Uploader</label>
          <input id="f-user" value={f.createUser} onChange={(e) => setF({ ...f, createUser: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="f-app">Application</label>
          <select id="f-app" value={f.appId} onChange={(e) => setF({ ...f, appId: e.target.value })}>
            <option value="">Any</option>
            {apps.map((a) => (
              <option key={a.appId} value={a.appId}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field end row">
          <button type="submit" className="primary">
            Search
          </button>
          <button
            type="button"
            onClick={() => {
              const empty = { q: '', status: '', createUser: '', appId: '' };
              setF(empty);
              onApply(empty);
            }}
          >
            Clear
          </button>
        </div>
      </div>
    </form>
  );
}

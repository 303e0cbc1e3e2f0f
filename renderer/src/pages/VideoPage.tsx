import { VideoStatus } from '../../../server/core/videoStatus.js';
import { useRef, useState, type FormEvent } from 'react';
import { api, apiForm } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { CopyButton, CopyValue } from '../components/CopyButton.js';
import { DataTable } from '../components/DataTable.js';
import { ErrorMessage, Notice, PageHeader, StateBadge, StatusBadge } from '../components/Feedback.js';
import { jobAttempts, JobProgress, useJobProgress, type JobFigures } from '../components/JobViews.js';
import { Player, renditionUrl } from '../components/Player.js';
import { useServerEvent } from '../events.js';
import { formatBytes, formatDuration, formatNumber, formatTime, statusName } from '../format.js';
import { useT } from '../i18n.js';
import { jobErrorText } from '../serverWords.js';
import { embedSnippet } from '../integrationSnippets.js';
import type { Messages } from '../messages/en.js';
import { Link } from '../router.js';
import type { AppView, Caption, LadderView, Playback, VideoDetail } from '../types.js';
import { useAction } from '../useAction.js';
import { useDebounced, useResource } from '../useResource.js';

/** One video: fields, its player (with embed and share), covers, renditions, captions, jobs, status history; retry, delete. */
export function VideoPage({ id }: { id: string }) {
  const t = useT();
  const detail = useResource(() => api<VideoDetail>('GET', `/videos/${encodeURIComponent(id)}`), [id]);
  const playback = useResource(() => api<Playback>('GET', `/videos/${encodeURIComponent(id)}/playback`), [id]);
  const captions = useResource(() => api<{ captions: Caption[] }>('GET', `/videos/${encodeURIComponent(id)}/captions`), [id]);
  const views = useResource(() => api<{ views: number; watchSeconds: number }>('GET', `/videos/${encodeURIComponent(id)}/views`), [id]);
  const appId = detail.data?.video.appId;
  const app = useResource(() => (appId ? api<AppView>('GET', `/apps/${encodeURIComponent(appId)}`) : Promise.resolve(undefined)), [appId]);
  const figures = useJobProgress((e) => e.videoId === id);

  const reloadAll = useDebounced(() => {
    void detail.reload();
    void playback.reload();
    // A transcode brings the source file's subtitle streams.
    void captions.reload();
  }, 300);
  useServerEvent('video.status', (e) => e.videoId === id && reloadAll());
  useServerEvent('job.state', (e) => e.videoId === id && reloadAll());
  // The rest of the ladder landed (new renditions to list and play) or gave up.
  useServerEvent('video.renditions', (e) => e.videoId === id && reloadAll());
  const { run: act, busy, error, notice } = useAction(reloadAll);

  const v = detail.data?.video;
  const failed = v && (v.status === VideoStatus.DownloadFailed || v.status === VideoStatus.TranscodingFailed);
  // A retry needs something to work from: a failed transcode its stored source (a file that was
  // not a video is deleted: the video takes another upload instead), a failed download its address.
  const retryable = v && (v.status === VideoStatus.DownloadFailed || (v.status === VideoStatus.TranscodingFailed && v.sourceFile !== ''));
  const deleted = v?.status === VideoStatus.WaitingForDeletion;
  const pb = playback.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/videos">{t.video.crumb}</Link> /
      </p>
      <PageHeader title={v ? v.title || t.video.noTitle : t.video.title}>
        {v && retryable ? (
          <button
            type="button"
            className="primary"
            disabled={busy}
            onClick={() =>
              act(async () => {
                const r = await api<{ action: string }>('POST', `/videos/${id}/retry`);
                return r.action === 'download' ? t.video.retriedDownload : t.video.retriedTranscode;
              })
            }
          >
            {t.video.retry}
          </button>
        ) : null}
        {v && !deleted ? (
          <ConfirmButton
            label={t.video.delete}
            className="danger"
            disabled={busy}
            title={t.video.deleteTitle}
            confirmLabel={t.video.deleteConfirm}
            danger
            onConfirm={() =>
              void act(async () => {
                await api('DELETE', `/videos/${id}`);
                return t.video.deleted;
              })
            }
          >
            <p>{t.video.deleteExplain}</p>
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
          {detail.data.ladder.state ? (
            <LadderLine
              ladder={detail.data.ladder}
              figures={ladderFigures(detail.data, figures)}
              busy={busy}
              onRetry={(jobId) =>
                void act(async () => {
                  await api('POST', `/jobs/${jobId}/retry`);
                  return t.video.ladderRetried;
                })
              }
            />
          ) : null}
          <section className="card section" aria-labelledby="v-play">
            <h2 id="v-play">{t.video.play}</h2>
            {deleted ? (
              <p className="muted" data-testid="deleted">
                {t.video.deletedNote}
              </p>
            ) : pb && pb.playable && (pb.hlsUrl || pb.renditions.length > 0) ? (
              <Playing id={id} playback={pb} title={v.title || t.video.noTitle} />
            ) : (
              <p className="muted">{pb && pb.renditions.length > 0 ? t.video.notPlayable(v.status, statusName(v.status)) : t.video.noRendition}</p>
            )}
          </section>
          <div className="grid">
            <section className="card" aria-labelledby="v-fields">
              <h2 id="v-fields">{t.video.fields}</h2>
              <dl className="facts">
                <dt>{t.video.status}</dt>
                <dd>
                  <StatusBadge status={v.status} />
                </dd>
                <dt>{t.video.id}</dt>
                <dd>
                  <CopyValue value={v.id} what={t.video.idWhat} />
                </dd>
                <dt>{t.video.application}</dt>
                <dd>
                  <Link to={`/apps/${v.appId}`}>{app.data?.name ?? v.appId}</Link>
                </dd>
                <dt>{t.video.uploader}</dt>
                <dd>{v.createUser || '—'}</dd>
                <dt>{t.video.source}</dt>
                <dd className="break">{sourceText(t, v)}</dd>
                <dt>{t.video.length}</dt>
                <dd>{v.duration ? formatDuration(v.duration) : '—'}</dd>
                <dt>{t.video.views}</dt>
                <dd data-testid="views">{views.data ? t.video.viewsLine(formatNumber(views.data.views), formatDuration(views.data.watchSeconds)) : '—'}</dd>
                <dt>{t.video.registered}</dt>
                <dd>{formatTime(v.createdAt)}</dd>
                {v.description ? (
                  <>
                    <dt>{t.video.description}</dt>
                    <dd>{v.description}</dd>
                  </>
                ) : null}
                {v.tags ? (
                  <>
                    <dt>{t.video.tags}</dt>
                    <dd>{v.tags}</dd>
                  </>
                ) : null}
                {v.actors ? (
                  <>
                    <dt>{t.video.actors}</dt>
                    <dd>{v.actors}</dd>
                  </>
                ) : null}
              </dl>
            </section>
            <section className="card" aria-labelledby="v-covers">
              <h2 id="v-covers">{t.video.covers}</h2>
              {deleted ? (
                <p className="muted">{t.video.deletedCovers}</p>
              ) : pb && pb.coverUrl && pb.playable ? (
                <>
                  <img className="cover" src={pb.coverUrl} alt={t.video.coverOf(v.title)} />
                  <ul className="plain covers">
                    {pb.covers.map((c) => (
                      <li key={c.t}>
                        <a href={c.url} target="_blank" rel="noreferrer">
                          t={c.t} ({c.width}×{c.height})
                        </a>
                      </li>
                    ))}
                  </ul>
                </>
              ) : (
                <p className="muted">{t.video.noCover}</p>
              )}
            </section>
          </div>
          {pb && pb.renditions.length > 0 && !deleted ? (
            <section aria-labelledby="v-renditions" className="section">
              <h2 id="v-renditions">{t.video.renditions}</h2>
              <DataTable className="renditions" columns={[t.video.rLabel, t.video.rSize, t.video.rBitrate, t.video.rBytes, { hidden: t.video.rLinks }]}>
                {pb.renditions.map((r) => (
                  <tr key={r.file} data-rendition={r.label}>
                    <td>
                      <strong>{r.label}</strong>
                    </td>
                    <td>
                      {r.width}×{r.height}
                    </td>
                    <td>{t.video.kbps(formatNumber(r.bitrateKbps))}</td>
                    <td>{formatBytes(r.bytes)}</td>
                    <td className="links">
                      {pb.playable ? (
                        <>
                          <a href={r.playUrl} target="_blank" rel="noreferrer">
                            {t.video.open}
                          </a>{' '}
                          · <a href={r.downloadUrl}>{t.video.download}</a>
                        </>
                      ) : (
                        <code>{r.file}</code>
                      )}
                    </td>
                  </tr>
                ))}
              </DataTable>
              {pb.hlsUrl ? (
                <p className="small-text">
                  {t.video.hls} <CopyValue value={pb.hlsUrl} what={t.video.hlsWhat} />
                </p>
              ) : null}
            </section>
          ) : null}
          <CaptionsSection
            id={id}
            deleted={deleted}
            captions={captions.data?.captions}
            loadError={captions.error}
            onChanged={async () => {
              // The list, and the player's tracks and menu.
              await Promise.all([captions.reload(), playback.reload()]);
            }}
          />
          <section aria-labelledby="v-jobs" className="section">
            <h2 id="v-jobs">{t.video.jobs}</h2>
            {detail.data.jobs.length === 0 ? <p className="muted">{t.video.noJob}</p> : null}
            <ul className="plain jobs">
              {detail.data.jobs.map((j) => (
                <li key={j.id} className="job-line">
                  <strong>{t.jobs.types[j.type] ?? j.type}</strong> <StateBadge state={j.state} />{' '}
                  <span className="muted small-text">
                    {jobAttempts(t, j)} · {formatTime(j.updatedAt)}
                  </span>
                  {j.state === 'running' ? <JobProgress figures={figures(j)} label={t.jobs.progressOf(t.jobs.types[j.type] ?? j.type)} /> : null}
                  {j.error ? <div className="error-text">{jobErrorText(j, t)}</div> : null}
                </li>
              ))}
            </ul>
          </section>
          <section aria-labelledby="v-history" className="section">
            <h2 id="v-history">{t.video.history}</h2>
            <DataTable className="history" columns={[t.video.hWhen, t.video.hFrom, t.video.hTo, t.video.hReason]}>
              {detail.data.statusHistory.map((h, i) => (
                <tr key={i}>
                  <td>{formatTime(h.at)}</td>
                  <td>{h.from === null ? t.video.registeredState : `${h.from} · ${statusName(h.from)}`}</td>
                  <td>
                    {h.to} · {statusName(h.to)}
                  </td>
                  <td className={h.to === VideoStatus.DownloadFailed || h.to === VideoStatus.TranscodingFailed ? 'error-text' : ''}>{h.reason || '—'}</td>
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
 * A video's caption tracks (those of its source file and those added), each with a Remove, and a
 * form adding one from an SRT or WebVTT file. The server checks the language and the file and
 * says what is wrong with them; `onChanged` reloads the list and the player after a change.
 */
function CaptionsSection({
  id,
  deleted,
  captions,
  loadError,
  onChanged,
}: {
  id: string;
  deleted: boolean;
  captions: Caption[] | undefined;
  loadError: string;
  onChanged: () => Promise<void>;
}) {
  const t = useT();
  const { run, busy, busyKey, error, notice } = useAction(onChanged);
  const [language, setLanguage] = useState('');
  const [label, setLabel] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const path = `/videos/${encodeURIComponent(id)}/captions`;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    void run(async () => {
      const form = new FormData();
      form.append('language', language.trim());
      if (label.trim()) form.append('label', label.trim());
      form.append('file', file, file.name);
      const { caption } = await apiForm<{ caption: Caption }>(path, form);
      setLanguage('');
      setLabel('');
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
      return t.captions.added(caption.label, caption.language);
    }, 'add');
  };

  return (
    <section aria-labelledby="v-captions" className="section" data-testid="captions">
      <h2 id="v-captions">{t.captions.title}</h2>
      {deleted ? (
        <p className="muted">{t.captions.deleted}</p>
      ) : (
        <>
          <p className="muted small-text">{t.captions.help}</p>
          <ErrorMessage error={loadError} />
          {captions && captions.length === 0 ? <p className="muted">{t.captions.none}</p> : null}
          {captions && captions.length > 0 ? (
            <DataTable className="captions" columns={[t.captions.cLanguage, t.captions.cLabel, t.captions.cOrigin, { hidden: t.captions.cActions }]}>
              {captions.map((c) => (
                <tr key={c.id} data-caption={c.id}>
                  <td>
                    <code>{c.language}</code>
                  </td>
                  <td>{c.label}</td>
                  <td>{t.captions.origins[c.origin] ?? c.origin}</td>
                  <td className="actions">
                    <ConfirmButton
                      label={t.captions.remove}
                      ariaLabel={t.captions.removeOf(c.label, c.language)}
                      className="small danger"
                      disabled={busy}
                      title={t.captions.removeTitle}
                      confirmLabel={t.captions.removeConfirm}
                      danger
                      onConfirm={() =>
                        void run(async () => {
                          await api('DELETE', `${path}/${encodeURIComponent(c.id)}`);
                          return t.captions.removed(c.label);
                        }, c.id)
                      }
                    >
                      <p>{t.captions.removeExplain(c.label, c.language)}</p>
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </DataTable>
          ) : null}
          <form className="card form captions-form" onSubmit={submit} aria-labelledby="v-captions-add">
            <h3 id="v-captions-add">{t.captions.add}</h3>
            <div className="fields">
              <div className="field">
                <label htmlFor="caption-language">{t.captions.language}</label>
                <input id="caption-language" value={language} onChange={(e) => setLanguage(e.target.value)} placeholder={t.captions.languagePlaceholder} required maxLength={35} autoComplete="off" spellCheck={false} />
              </div>
              <div className="field">
                <label htmlFor="caption-label">{t.captions.label}</label>
                <input id="caption-label" value={label} onChange={(e) => setLabel(e.target.value)} placeholder={t.captions.labelPlaceholder} maxLength={100} />
              </div>
              <div className="field grow">
                <label htmlFor="caption-file">{t.captions.file}</label>
                <input id="caption-file" ref={fileInput} type="file" accept=".srt,.vtt,text/vtt" required onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
              </div>
              <div className="field end">
                <button type="submit" className="primary" disabled={busy || !file}>
                  {busyKey === 'add' ? t.captions.adding : t.captions.addButton}
                </button>
              </div>
            </div>
          </form>
          <ErrorMessage error={error} />
          <Notice>{notice}</Notice>
        </>
      )}
    </section>
  );
}

/**
 * Where the rest of the ladder stands while the video is already served: the renditions it has
 * and how many it will have, the ladder job's live percent while it runs; or why it failed, with
 * a retry of its job. Nothing once it is complete.
 */
function LadderLine({ ladder, figures, busy, onRetry }: { ladder: LadderView; figures: JobFigures | undefined; busy: boolean; onRetry: (jobId: string) => void }) {
  const t = useT();
  const labels = ladder.labels.join(t.common.listSeparator);
  const job = ladder.job;
  if (ladder.state === 'failed') {
    const reason = job?.error || (job?.state === 'cancelled' ? t.video.ladderCancelled : '—');
    return (
      <div className="error row between" data-testid="ladder" data-ladder="failed">
        <span>{t.video.ladderFailed(labels, reason)}</span>
        {job && (job.state === 'failed' || job.state === 'cancelled') ? (
          <button type="button" className="small" disabled={busy} onClick={() => onRetry(job.id)}>
            {t.video.ladderRetry}
          </button>
        ) : null}
      </div>
    );
  }
  const running = job?.state === 'running' && figures;
  return (
    <div className="notice" data-testid="ladder" data-ladder={running ? 'running' : 'pending'}>
      <span>{t.video.ladderOf(labels, ladder.done, ladder.total)}</span>
      {running ? <span> · {t.video.ladderRunning(Math.floor(figures.percent))}</span> : job?.state === 'queued' ? <span> · {t.video.ladderQueued}</span> : null}
      {running ? <JobProgress figures={figures} label={t.jobs.progressOf(t.jobs.types.ladder ?? '')} /> : null}
    </div>
  );
}

/** The live figures of the video's running ladder job, if it runs. */
function ladderFigures(detail: VideoDetail, figures: ReturnType<typeof useJobProgress>): JobFigures | undefined {
  const job = detail.ladder.job;
  if (job?.state !== 'running') return undefined;
  // Among the latest 50 jobs nearly always; else its saved progress is not at hand, and the
  // pushed one takes over at its next report.
  return figures(detail.jobs.find((j) => j.id === job.id) ?? { id: job.id, progress: 0, speed: null, etaSeconds: null });
}

/** Lifetimes offered for a signed application's share link and embed code, in seconds. */
const SHARE_LIFETIMES = [600, 3600, 86_400];

/**
 * The player, and what to give others: a share link (the MP4 of the chosen quality) and an embed
 * snippet. A signed application's addresses expire: the share link and embed code are asked for
 * with the lifetime chosen (the server signs them), and say until when they work.
 */
function Playing({ id, playback, title }: { id: string; playback: Playback; title: string }) {
  const t = useT();
  const [quality, setQuality] = useState('');
  const [lifetime, setLifetime] = useState(0);
  const shared = useResource(
    () => (lifetime > 0 ? api<Playback>('GET', `/videos/${encodeURIComponent(id)}/playback?ttl=${lifetime}`) : Promise.resolve(playback)),
    [id, lifetime, playback],
  );
  const share = shared.data ?? playback;
  const mp4 = renditionUrl(share, quality);
  const shape = share.renditions.find((r) => r.playUrl === mp4) ?? share.renditions[0];
  const embed = embedSnippet({ hlsUrl: share.hlsUrl, mp4Url: mp4, coverUrl: share.coverUrl, width: shape?.width ?? 0, height: shape?.height ?? 0 });
  return (
    <div className="playing">
      <Player playback={playback} title={title} onQuality={setQuality} />
      <div className="share">
        <h3>{t.video.share}</h3>
        <p className="muted small-text">{share.signedUntil === null ? t.video.shareHelp : t.video.shareSignedHelp}</p>
        {share.signedUntil !== null ? (
          <p className="row small-text" data-signed-until={share.signedUntil}>
            <label>
              {t.video.shareLifetime}{' '}
              <select value={lifetime} onChange={(e) => setLifetime(Number(e.target.value))}>
                <option value={0}>{t.video.shareLifetimeApp}</option>
                {SHARE_LIFETIMES.map((s) => (
                  <option key={s} value={s}>
                    {t.video.shareLifetimeOf(s)}
                  </option>
                ))}
              </select>
            </label>{' '}
            <span className="muted">{t.video.shareUntil(formatTime(share.signedUntil))}</span>
          </p>
        ) : null}
        <ErrorMessage error={shared.error} />
        <CopyValue value={mp4} what={t.video.shareWhat} />
        <h3>{t.video.embed}</h3>
        <p className="muted small-text">{t.video.embedHelp}</p>
        <div className="snippet">
          <div className="row end">
            <CopyButton text={embed} what={t.video.embedWhat} />
          </div>
          <pre tabIndex={0}>
            <code data-snippet="embed">{embed}</code>
          </pre>
        </div>
      </div>
    </div>
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
function sourceText(t: Messages, v: { sourceType: number; sourceUrl: string; status: number }): string {
  if (v.sourceType === 2) return t.video.pulledFrom(v.sourceUrl);
  if (v.status === VideoStatus.NotUploaded) return t.video.toBeUploaded;
  return t.video.uploaded;
}

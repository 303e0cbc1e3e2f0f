import { useState, type FormEvent } from 'react';
import { MEDIA_TTL_RANGE } from '../../../server/core/mediaTtl.js';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { CopyValue } from '../components/CopyButton.js';
import { DataTable } from '../components/DataTable.js';
import { AppStateBadge, CallbackAddressWarning, ErrorMessage, Notice, PageHeader, StateBadge } from '../components/Feedback.js';
import { formatTime, shortId } from '../format.js';
import { useT } from '../i18n.js';
import { callbackFailureText } from '../serverWords.js';
import { Link } from '../router.js';
import type { AppView, DeliveryView } from '../types.js';
import { useAction } from '../useAction.js';
import { useResource } from '../useResource.js';
import { SecretOnce } from './Applications.js';
import { Integrate } from './Integrate.js';

/** One application: its callback address, test callback, secret, enable/disable, how to integrate it, delivery log. */
export function AppPage({ appId }: { appId: string }) {
  const t = useT();
  const app = useResource(() => api<AppView>('GET', `/apps/${encodeURIComponent(appId)}`), [appId]);
  const log = useResource(() => api<{ deliveries: DeliveryView[]; nextBefore: string | null }>('GET', `/apps/${encodeURIComponent(appId)}/deliveries?limit=50`), [appId]);
  const [secret, setSecret] = useState('');
  const { run: act, busy, error, notice } = useAction();

  const a = app.data;
  const setDisabled = (disabled: boolean) =>
    void act(async () => {
      await api('PATCH', `/apps/${appId}`, { disabled });
      await app.reload();
      return disabled ? t.app.disabledNotice : t.app.enabledNotice;
    });
  return (
    <>
      <p className="crumbs">
        <Link to="/apps">{t.app.crumb}</Link> /
      </p>
      <PageHeader title={a ? a.name : t.app.title}>
        {a ? (
          <>
            <ConfirmButton
              label={t.app.rotate}
              disabled={busy}
              title={t.app.rotateTitle}
              confirmLabel={t.app.rotateConfirm}
              danger
              onConfirm={() =>
                void act(async () => {
                  const r = await api<{ appSecret: string }>('POST', `/apps/${appId}/secret`);
                  setSecret(r.appSecret);
                  return t.app.rotated;
                })
              }
            >
              <p>{t.app.rotateExplain}</p>
            </ConfirmButton>
            {a.disabled ? (
              <button type="button" disabled={busy} onClick={() => setDisabled(false)}>
                {t.app.enable}
              </button>
            ) : (
              // Disabling stops a running application's calls and callbacks: it asks first.
              <ConfirmButton label={t.app.disable} disabled={busy} title={t.app.disableTitle(a.name)} confirmLabel={t.app.disable} danger onConfirm={() => setDisabled(true)}>
                <p>{t.app.disableExplain}</p>
              </ConfirmButton>
            )}
          </>
        ) : null}
      </PageHeader>
      <ErrorMessage error={app.error || error} />
      <Notice>{notice}</Notice>
      {secret ? <SecretOnce title={t.app.newSecret} appId={appId} secret={secret} onDone={() => setSecret('')} /> : null}
      {a ? (
        <div className="grid">
          <section className="card" aria-labelledby="app-facts">
            <h2 id="app-facts">{t.app.details}</h2>
            <dl className="facts">
              <dt>AppId</dt>
              <dd>
                <CopyValue value={a.appId} what="AppId" />
              </dd>
              <dt>{t.app.state}</dt>
              <dd>
                <AppStateBadge disabled={a.disabled} />
              </dd>
              <dt>{t.app.created}</dt>
              <dd>{formatTime(a.createdAt)}</dd>
              <dt>{t.app.videos}</dt>
              <dd>
                <Link to={`/videos?appId=${a.appId}`}>{t.app.seeVideos}</Link>
              </dd>
              <dt>{t.app.tryUpload}</dt>
              <dd>
                <Link to={`/apps/${a.appId}/try-upload`} data-testid="try-upload-link">
                  {t.app.tryUploadLink}
                </Link>
              </dd>
              <dt>{t.app.playable}</dt>
              <dd>
                <label>
                  <input
                    type="checkbox"
                    checked={a.wholeLadderFirst}
                    disabled={busy}
                    onChange={(e) => {
                      const on = e.target.checked;
                      void act(async () => {
                        await api('PATCH', `/apps/${appId}`, { wholeLadderFirst: on });
                        await app.reload();
                        return on ? t.app.wholeLadderOn : t.app.wholeLadderOff;
                      });
                    }}
                  />{' '}
                  {t.app.wholeLadderFirst}
                </label>
              </dd>
              <dt>{t.app.mediaAccess}</dt>
              <dd>
                <MediaAccessForm
                  app={a}
                  busy={busy}
                  onSave={(mediaAccess, mediaTtlSeconds) =>
                    act(async () => {
                      const saved = await api<AppView>('PATCH', `/apps/${appId}`, { mediaAccess, mediaTtlSeconds });
                      await app.reload();
                      return saved.mediaAccess === 'signed' ? t.app.mediaSignedNotice(saved.mediaTtlSeconds) : t.app.mediaPublicNotice;
                    })
                  }
                />
              </dd>
            </dl>
          </section>
          <CallbackForm
            app={a}
            busy={busy}
            onSave={(url) =>
              act(async () => {
                await api('PATCH', `/apps/${appId}`, { callbackUrl: url.trim() === '' ? null : url.trim() });
                await app.reload();
                return url.trim() ? t.app.callbackSaved : t.app.callbackRemoved;
              })
            }
            onTest={() =>
              act(async () => {
                const d = await api<DeliveryView>('POST', `/apps/${appId}/test-callback`);
                await log.reload();
                const at = d.attempts.at(-1);
                // A test that did not get through is shown as the failure it is, not in the success style.
                if (d.state !== 'delivered') throw new Error(t.app.testFailed(callbackFailureText(d.lastError || at?.error || `HTTP ${at?.httpStatus}`, t)));
                return t.app.testDelivered(String(at?.httpStatus), String(at?.latencyMs));
              })
            }
          />
          <ApiNetworksForm
            app={a}
            busy={busy}
            onSave={(networks) =>
              act(async () => {
                const saved = await api<AppView>('PATCH', `/apps/${appId}`, { apiNetworks: networks });
                await app.reload();
                return saved.apiNetworks.length ? t.app.networksSaved(saved.apiNetworks.join(t.common.listSeparator)) : t.app.networksOpen;
              })
            }
          />
          <Integrate app={a} />
        </div>
      ) : null}
      <DeliveryLog deliveries={log.data?.deliveries} error={log.error} onReload={() => void log.reload()} />
    </>
  );
}

function CallbackForm({ app, busy, onSave, onTest }: { app: AppView; busy: boolean; onSave: (url: string) => void; onTest: () => void }) {
  const t = useT();
  const [url, setUrl] = useState(app.callbackUrl);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSave(url);
  };
  return (
    <form className="card form" onSubmit={submit} aria-labelledby="cb-title">
      <h2 id="cb-title">{t.app.callbackTitle}</h2>
      <p className="muted small-text">{t.app.callbackHelp}</p>
      <label htmlFor="callback-url">{t.app.callbackLabel}</label>
      <input id="callback-url" type="url" value={url} placeholder="https://site.example/vop/callback" onChange={(e) => setUrl(e.target.value)} />
      <CallbackAddressWarning address={url} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          {t.app.saveAddress}
        </button>
        <button type="button" disabled={busy || !app.callbackUrl} onClick={onTest} title={app.callbackUrl ? undefined : t.app.saveFirst}>
          {t.app.sendTest}
        </button>
      </div>
    </form>
  );
}

/** Networks as the admin types them: one per line, or separated by commas or spaces. */
function networkList(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

/** A caller's address as one network entry: the address alone (/32, or /128 for IPv6). */
function hostNetwork(address: string): string {
  return `${address}/${address.includes(':') ? 128 : 32}`;
}

/**
 * The networks the application's API calls may come from (issue 12 item 1), and the suggestion:
 * the addresses its calls came from lately, with one click to allow them.
 */
function ApiNetworksForm({ app, busy, onSave }: { app: AppView; busy: boolean; onSave: (networks: string[]) => void }) {
  const t = useT();
  const [text, setText] = useState(app.apiNetworks.join('\n'));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSave(networkList(text));
  };
  const outside = app.recentCallers.filter((c) => !c.allowed);
  const addresses = app.recentCallers.map((c) => c.address).filter((a) => /^[0-9a-f.:]+$/i.test(a));
  const suggested = [...new Set([...app.apiNetworks, ...addresses.map(hostNetwork)])];
  return (
    <form className="card form" onSubmit={submit} aria-labelledby="networks-title" data-testid="api-networks">
      <h2 id="networks-title">{t.app.callersTitle}</h2>
      <p className="muted small-text">{t.app.callersHelp}</p>
      {app.apiNetworks.length === 0 ? (
        // Advice, not an error: a new application is open to any address until its server has called.
        <p className="info" data-testid="networks-open">
          {t.app.anyMayCall}
        </p>
      ) : null}
      <label htmlFor="api-networks">{t.app.networksLabel}</label>
      <textarea id="api-networks" rows={3} value={text} spellCheck={false} onChange={(e) => setText(e.target.value)} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          {t.app.saveNetworks}
        </button>
      </div>
      <h3>{t.app.recentCallers}</h3>
      {app.recentCallers.length === 0 ? (
        <p className="muted small-text">{t.app.noCall}</p>
      ) : (
        <>
          <ul className="plain" data-testid="recent-callers">
            {app.recentCallers.map((c) => (
              <li key={c.address}>
                <code>{c.address}</code> <span className="muted small-text">{formatTime(c.lastSeen)}</span>
                {c.allowed ? null : <span className="muted small-text">{t.app.refused}</span>}
              </li>
            ))}
          </ul>
          <p className="muted small-text">{t.app.checkCallers}</p>
          {outside.length > 0 || app.apiNetworks.length === 0 ? (
            <button
              type="button"
              disabled={busy}
              onClick={() => {
                setText(suggested.join('\n'));
                onSave(suggested);
              }}
            >
              {app.apiNetworks.length === 0 ? t.app.allowOnly : t.app.allowToo}
            </button>
          ) : null}
        </>
      )}
    </form>
  );
}

function DeliveryLog({ deliveries, error, onReload }: { deliveries: DeliveryView[] | undefined; error: string; onReload: () => void }) {
  const t = useT();
  const { run, busyKey, error: rowError } = useAction(onReload);
  const redeliver = (id: string) =>
    run(async () => {
      await api('POST', `/deliveries/${id}/redeliver`);
    }, id);
  return (
    <section aria-labelledby="log-title" className="section">
      <div className="row between">
        <h2 id="log-title">{t.app.logTitle}</h2>
        <button type="button" className="small" onClick={onReload}>
          {t.common.refresh}
        </button>
      </div>
      <ErrorMessage error={error || rowError} />
      {deliveries && deliveries.length === 0 ? <p className="muted">{t.app.noDelivery}</p> : null}
      {deliveries && deliveries.length > 0 ? (
        <DataTable className="deliveries" columns={[t.app.when, t.app.kind, t.app.video, t.app.state2, t.app.lastAttempt, { hidden: t.app.actions }]}>
          {deliveries.map((d) => {
            const last = d.attempts.at(-1);
            return (
              <tr key={d.id} data-delivery={d.id}>
                <td>{formatTime(d.createdAt)}</td>
                <td>{d.kind === 'test' ? t.app.test : t.app.statusKind(d.videoStatus)}</td>
                <td>{d.kind === 'test' ? '—' : <Link to={`/videos/${d.videoId}`} title={d.videoId}>{shortId(d.videoId)}</Link>}</td>
                <td>
                  <StateBadge state={d.state} />
                  {d.series > 1 ? <span className="muted small-text">{t.app.series(d.series)}</span> : null}
                </td>
                <td className="break">
                  {last ? (
                    <>
                      {last.httpStatus !== null ? `HTTP ${last.httpStatus}` : t.app.noAnswer} · {t.app.latency(last.latencyMs)} · {t.app.attempts(d.attempts.length)}
                      {last.error ? <div className="muted small-text">{callbackFailureText(last.error, t)}</div> : null}
                    </>
                  ) : (
                    <span className="muted">{d.lastError ? callbackFailureText(d.lastError, t) : t.app.notSent}</span>
                  )}
                </td>
                <td>
                  <button type="button" className="small" disabled={busyKey === d.id} onClick={() => void redeliver(d.id)} aria-label={t.app.redeliverAria(d.kind === 'test' ? t.app.test : t.app.statusKind(d.videoStatus), formatTime(d.createdAt))}>
                    {t.app.redeliver}
                  </button>
                </td>
              </tr>
            );
          })}
        </DataTable>
      ) : null}
    </section>
  );
}

/** The lifetime range the server takes. */
const MEDIA_TTL = MEDIA_TTL_RANGE;

/** Public or signed media addresses, and a signed address's lifetime. */
function MediaAccessForm({ app, busy, onSave }: { app: AppView; busy: boolean; onSave: (access: 'public' | 'signed', ttl: number) => Promise<unknown> }) {
  const t = useT();
  const [access, setAccess] = useState(app.mediaAccess);
  const [ttl, setTtl] = useState(String(app.mediaTtlSeconds));
  const ttlNumber = Number(ttl);
  const ttlOk = Number.isInteger(ttlNumber) && ttlNumber >= MEDIA_TTL.min && ttlNumber <= MEDIA_TTL.max;
  const changed = access !== app.mediaAccess || (ttlOk && ttlNumber !== app.mediaTtlSeconds);
  return (
    <form
      className="media-access"
      onSubmit={(e: FormEvent) => {
        e.preventDefault();
        if (ttlOk) void onSave(access, ttlNumber);
      }}
    >
      <label className="choice">
        <input type="radio" name="media-access" value="public" checked={access === 'public'} onChange={() => setAccess('public')} /> {t.app.mediaPublic}
      </label>
      <label className="choice">
        <input type="radio" name="media-access" value="signed" checked={access === 'signed'} onChange={() => setAccess('signed')} /> {t.app.mediaSigned}
      </label>
      {access === 'signed' ? (
        <p>
          <label>
            {t.app.mediaTtl}{' '}
            <input
              type="number"
              inputMode="numeric"
              min={MEDIA_TTL.min}
              max={MEDIA_TTL.max}
              value={ttl}
              aria-invalid={!ttlOk}
              onChange={(e) => setTtl(e.target.value)}
              style={{ width: '8em' }}
            />
          </label>{' '}
          <span className="muted small-text">{t.app.mediaTtlHelp(MEDIA_TTL.min, MEDIA_TTL.max)}</span>
        </p>
      ) : null}
      <button type="submit" disabled={busy || !changed || !ttlOk}>
        {t.app.mediaSave}
      </button>
    </form>
  );
}

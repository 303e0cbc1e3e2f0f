import { useState, type FormEvent } from 'react';
import { api } from '../api.js';
import { ConfirmButton } from '../components/ConfirmDialog.js';
import { CopyValue } from '../components/CopyButton.js';
import { DataTable } from '../components/DataTable.js';
import { AppStateBadge, CallbackAddressWarning, ErrorMessage, Notice, PageHeader, StateBadge } from '../components/Feedback.js';
import { formatTime, shortId } from '../format.js';
import { Link } from '../router.js';
import type { AppView, DeliveryView } from '../types.js';
import { useAction } from '../useAction.js';
import { useResource } from '../useResource.js';
import { SecretOnce } from './Applications.js';
import { Integrate } from './Integrate.js';

/** One application: its callback address, test callback, secret, enable/disable, how to integrate it, delivery log. */
export function AppPage({ appId }: { appId: string }) {
  const app = useResource(() => api<AppView>('GET', `/apps/${encodeURIComponent(appId)}`), [appId]);
  const log = useResource(() => api<{ deliveries: DeliveryView[]; nextBefore: string | null }>('GET', `/apps/${encodeURIComponent(appId)}/deliveries?limit=50`), [appId]);
  const [secret, setSecret] = useState('');
  const { run: act, busy, error, notice } = useAction();

  const a = app.data;
  const setDisabled = (disabled: boolean) =>
    void act(async () => {
      await api('PATCH', `/apps/${appId}`, { disabled });
      await app.reload();
      return disabled ? 'The application is disabled: its calls are refused and it gets no callbacks.' : 'The application is enabled.';
    });
  return (
    <>
      <p className="crumbs">
        <Link to="/apps">Applications</Link> /
      </p>
      <PageHeader title={a ? a.name : 'Application'}>
        {a ? (
          <>
            <ConfirmButton
              label="Rotate the secret"
              disabled={busy}
              title="Rotate the secret?"
              confirmLabel="Rotate"
              danger
              onConfirm={() =>
                void act(async () => {
                  const r = await api<{ appSecret: string }>('POST', `/apps/${appId}/secret`);
                  setSecret(r.appSecret);
                  return 'A new secret was issued; the old one no longer works.';
                })
              }
            >
              <p>The current secret stops working at once: the application's calls fail until it has the new one.</p>
            </ConfirmButton>
            {a.disabled ? (
              <button type="button" disabled={busy} onClick={() => setDisabled(false)}>
                Enable
              </button>
            ) : (
              // Disabling stops a running application's calls and callbacks: it asks first.
              <ConfirmButton label="Disable" disabled={busy} title={`Disable “${a.name}”?`} confirmLabel="Disable" danger onConfirm={() => setDisabled(true)}>
                <p>Its calls are refused and it gets no callbacks until it is enabled again. Its videos stay.</p>
              </ConfirmButton>
            )}
          </>
        ) : null}
      </PageHeader>
      <ErrorMessage error={app.error || error} />
      <Notice>{notice}</Notice>
      {secret ? <SecretOnce title="New secret" appId={appId} secret={secret} onDone={() => setSecret('')} /> : null}
      {a ? (
        <div className="grid">
          <section className="card" aria-labelledby="app-facts">
            <h2 id="app-facts">Details</h2>
            <dl className="facts">
              <dt>AppId</dt>
              <dd>
                <CopyValue value={a.appId} what="AppId" />
              </dd>
              <dt>State</dt>
              <dd>
                <AppStateBadge disabled={a.disabled} />
              </dd>
              <dt>Created</dt>
              <dd>{formatTime(a.createdAt)}</dd>
              <dt>Videos</dt>
              <dd>
                <Link to={`/videos?appId=${a.appId}`}>See its videos</Link>
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
                return url.trim() ? 'Callback address saved.' : 'Callback address removed.';
              })
            }
            onTest={() =>
              act(async () => {
                const d = await api<DeliveryView>('POST', `/apps/${appId}/test-callback`);
                await log.reload();
                const at = d.attempts.at(-1);
                return d.state === 'delivered'
                  ? `Test callback delivered (HTTP ${at?.httpStatus}, ${at?.latencyMs} ms).`
                  : `Test callback failed: ${d.lastError || at?.error || `HTTP ${at?.httpStatus}`}.`;
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
                return saved.apiNetworks.length
                  ? `API calls are now accepted only from ${saved.apiNetworks.join(', ')}.`
                  : 'API calls are accepted from any address again.';
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
  const [url, setUrl] = useState(app.callbackUrl);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSave(url);
  };
  return (
    <form className="card form" onSubmit={submit} aria-labelledby="cb-title">
      <h2 id="cb-title">Status callback</h2>
      <p className="muted small-text">vop POSTs here when a video becomes playable (1) or fails (4, 7). Empty: no callbacks.</p>
      <label htmlFor="callback-url">Callback address</label>
      <input id="callback-url" type="url" value={url} placeholder="https://site.example/vop/callback" onChange={(e) => setUrl(e.target.value)} />
      <CallbackAddressWarning address={url} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          Save address
        </button>
        <button type="button" disabled={busy || !app.callbackUrl} onClick={onTest} title={app.callbackUrl ? undefined : 'Save a callback address first'}>
          Send a test callback
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
      <h2 id="networks-title">API callers</h2>
      <p className="muted small-text">
        The widget's page is given this application's AppId, Timestamp and Token: for ten minutes they work as its API credential, from anyone's browser — enough to list
        every video of the application. API calls should come only from your application's server: list its addresses or networks here, and calls from anywhere else
        are refused (302). The upload page and its uploads keep working from any address. Empty: any address.
      </p>
      {app.apiNetworks.length === 0 ? (
        <p className="error" data-testid="networks-open">
          Any address may call this application's API.
        </p>
      ) : null}
      <label htmlFor="api-networks">Allowed networks (one per line, e.g. 203.0.113.10 or 10.0.0.0/8)</label>
      <textarea id="api-networks" rows={3} value={text} spellCheck={false} onChange={(e) => setText(e.target.value)} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          Save networks
        </button>
      </div>
      <h3>Recent API callers</h3>
      {app.recentCallers.length === 0 ? (
        <p className="muted small-text">No API call since the server started.</p>
      ) : (
        <>
          <ul className="plain" data-testid="recent-callers">
            {app.recentCallers.map((c) => (
              <li key={c.address}>
                <code>{c.address}</code> <span className="muted small-text">{formatTime(c.lastSeen)}</span>
                {c.allowed ? null : <span className="muted small-text"> · refused</span>}
              </li>
            ))}
          </ul>
          <p className="muted small-text">Check that these are your application's servers (a visitor using a page's values would show here too) before allowing them.</p>
          {outside.length > 0 || app.apiNetworks.length === 0 ? (
            <button
              type="button"
              disabled={busy}
              onClick={() => {
                setText(suggested.join('\n'));
                onSave(suggested);
              }}
            >
              {app.apiNetworks.length === 0 ? 'Allow only these addresses' : 'Allow these addresses too'}
            </button>
          ) : null}
        </>
      )}
    </form>
  );
}

function DeliveryLog({ deliveries, error, onReload }: { deliveries: DeliveryView[] | undefined; error: string; onReload: () => void }) {
  const { run, busyKey, error: rowError } = useAction(onReload);
  const redeliver = (id: string) =>
    run(async () => {
      await api('POST', `/deliveries/${id}/redeliver`);
    }, id);
  return (
    <section aria-labelledby="log-title" className="section">
      <div className="row between">
        <h2 id="log-title">Delivery log</h2>
        <button type="button" className="small" onClick={onReload}>
          Refresh
        </button>
      </div>
      <ErrorMessage error={error || rowError} />
      {deliveries && deliveries.length === 0 ? <p className="muted">No callback sent yet.</p> : null}
      {deliveries && deliveries.length > 0 ? (
        <DataTable className="deliveries" columns={['When', 'Kind', 'Video', 'State', 'Last attempt', { hidden: 'Actions' }]}>
          {deliveries.map((d) => {
            const last = d.attempts.at(-1);
            return (
              <tr key={d.id} data-delivery={d.id}>
                <td>{formatTime(d.createdAt)}</td>
                <td>{d.kind === 'test' ? 'test' : `status ${d.videoStatus}`}</td>
                <td>{d.kind === 'test' ? '—' : <Link to={`/videos/${d.videoId}`} title={d.videoId}>{shortId(d.videoId)}</Link>}</td>
                <td>
                  <StateBadge state={d.state} />
                  {d.series > 1 ? <span className="muted small-text"> series {d.series}</span> : null}
                </td>
                <td className="break">
                  {last ? (
                    <>
                      {last.httpStatus !== null ? `HTTP ${last.httpStatus}` : 'no answer'} · {last.latencyMs} ms · {d.attempts.length} attempt{d.attempts.length === 1 ? '' : 's'}
                      {last.error ? <div className="muted small-text">{last.error}</div> : null}
                    </>
                  ) : (
                    <span className="muted">{d.lastError || 'not sent yet'}</span>
                  )}
                </td>
                <td>
                  <button type="button" className="small" disabled={busyKey === d.id} onClick={() => void redeliver(d.id)} aria-label={`Redeliver ${d.kind} callback of ${formatTime(d.createdAt)}`}>
                    Redeliver
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

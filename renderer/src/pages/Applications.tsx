import { useState, type FormEvent } from 'react';
import { api } from '../api.js';
import { CopyValue } from '../components/CopyButton.js';
import { DataTable } from '../components/DataTable.js';
import { AppStateBadge, CallbackAddressWarning, ErrorMessage, PageHeader } from '../components/Feedback.js';
import { formatTime } from '../format.js';
import { useT } from '../i18n.js';
import { Link } from '../router.js';
import type { AppView } from '../types.js';
import { useAction } from '../useAction.js';
import { useResource } from '../useResource.js';

export function Applications() {
  const t = useT();
  const { data, error, reload } = useResource(() => api<{ apps: AppView[] }>('GET', '/apps'), []);
  const [created, setCreated] = useState<{ appId: string; appSecret: string; name: string }>();

  return (
    <>
      <PageHeader title={t.apps.title} />
      <p className="muted">{t.apps.intro}</p>
      <CreateApp
        onCreated={(a) => {
          setCreated(a);
          void reload();
        }}
      />
      {created ? <SecretOnce title={t.apps.created(created.name)} appId={created.appId} secret={created.appSecret} onDone={() => setCreated(undefined)} /> : null}
      <ErrorMessage error={error} />
      <section aria-labelledby="apps-list-title">
        <h2 id="apps-list-title">{t.apps.all}</h2>
        {data && data.apps.length === 0 ? <p className="muted">{t.apps.none}</p> : null}
        {data && data.apps.length > 0 ? (
          <DataTable columns={[t.apps.name, t.apps.appId, t.apps.state, t.apps.callback, t.apps.callers, t.apps.createdAt]}>
            {data.apps.map((a) => (
              <tr key={a.appId}>
                <td>
                  <Link to={`/apps/${a.appId}`}>{a.name}</Link>
                </td>
                <td>
                  <code>{a.appId}</code>
                </td>
                <td>
                  <AppStateBadge disabled={a.disabled} />
                </td>
                <td className="break">{a.callbackUrl || <span className="muted">{t.apps.noCallback}</span>}</td>
                <td className="break">
                  {a.apiNetworks.length ? a.apiNetworks.join(', ') : (
                    <Link to={`/apps/${a.appId}`} title={t.apps.restrictTitle}>
                      {t.apps.anyAddress}
                    </Link>
                  )}
                </td>
                <td>{formatTime(a.createdAt)}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </section>
    </>
  );
}

function CreateApp({ onCreated }: { onCreated: (a: { appId: string; appSecret: string; name: string }) => void }) {
  const t = useT();
  const [name, setName] = useState('');
  const [callbackUrl, setCallbackUrl] = useState('');
  const { run, busy, error } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    return run(async () => {
      const a = await api<AppView & { appSecret: string }>('POST', '/apps', { name, callbackUrl: callbackUrl.trim() || undefined });
      setName('');
      setCallbackUrl('');
      onCreated({ appId: a.appId, appSecret: a.appSecret, name: a.name });
    });
  };
  return (
    <form className="card form" onSubmit={submit} aria-labelledby="create-app-title">
      <h2 id="create-app-title">{t.apps.create}</h2>
      <div className="fields">
        <div className="field">
          <label htmlFor="app-name">{t.apps.name}</label>
          <input id="app-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} />
        </div>
        <div className="field grow">
          <label htmlFor="app-callback">{t.apps.callbackOptional}</label>
          <input id="app-callback" type="url" placeholder="https://site.example/vop/callback" value={callbackUrl} onChange={(e) => setCallbackUrl(e.target.value)} />
          <CallbackAddressWarning address={callbackUrl} />
        </div>
        <div className="field end">
          <button type="submit" className="primary" disabled={busy}>
            {t.apps.createButton}
          </button>
        </div>
      </div>
      <ErrorMessage error={error} />
    </form>
  );
}

/** A new secret, shown this once: the server keeps it but never shows it again. */
export function SecretOnce({ title, appId, secret, onDone }: { title: string; appId: string; secret: string; onDone: () => void }) {
  const t = useT();
  return (
    <section className="card secret" role="alert" aria-labelledby="secret-title">
      <h2 id="secret-title">{title}</h2>
      <p>
        <strong>{t.apps.secretCopyNow}</strong> {t.apps.secretWhere}
      </p>
      <p className="muted small-text">{t.apps.secretRestrict}</p>
      <dl className="facts">
        <dt>AppId</dt>
        <dd>
          <CopyValue value={appId} what="AppId" />
        </dd>
        <dt>AppSecret</dt>
        <dd>
          <span data-testid="app-secret">
            <CopyValue value={secret} what="AppSecret" />
          </span>
        </dd>
      </dl>
      <button type="button" onClick={onDone}>
        {t.apps.copiedIt}
      </button>
    </section>
  );
}

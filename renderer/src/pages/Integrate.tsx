import { useState, type KeyboardEvent } from 'react';
import { api } from '../api.js';
import { CopyButton, CopyValue } from '../components/CopyButton.js';
import { ErrorMessage } from '../components/Feedback.js';
import { addressLabel } from '../format.js';
import { useT } from '../i18n.js';
import { integrationSnippets, type SnippetKind } from '../integrationSnippets.js';
import type { AppView, Overview } from '../types.js';
import { useResource } from '../useResource.js';

const SERVER_SIDE: SnippetKind[] = ['node', 'php', 'python', 'csharp'];
const PAGE_SIDE: SnippetKind[] = ['window', 'overlay'];

/**
 * How an application talks to vop (issue 13, item 2): the API base, the widget scripts, and code
 * filled with its AppId: the token, registration and widget values on its server (Node, PHP,
 * Python, C#), and the page's `openUpload` call for both widget forms.
 */
export function Integrate({ app }: { app: AppView }) {
  const t = useT();
  const overview = useResource(() => api<Overview>('GET', '/overview'), []);
  const [address, setAddress] = useState('');
  const [server, setServer] = useState<SnippetKind>('node');
  const [pageForm, setPageForm] = useState<SnippetKind>('window');
  const o = overview.data;
  if (!o) return <ErrorMessage error={overview.error} />;

  const served = o.addresses.filter((a) => a.served);
  // The public URL when there is one, else the address this console was opened at, else the first served.
  const chosen =
    served.find((a) => a.baseUrl === address) ?? served.find((a) => a.label === 'Public URL') /* i18n-ignore: the server's name */ ?? served.find((a) => a.baseUrl === window.location.origin) ?? served[0];
  if (!chosen) return null;
  const scripts = o.widgetScripts.find((w) => w.label === chosen.label) ?? o.widgetScripts.find((w) => w.label === 'Script address') /* i18n-ignore: the server's name */ ?? o.widgetScripts[0];
  const windowScript = scripts?.window ?? `${chosen.baseUrl}/widget/initUploadWidget.js`;
  const overlayScript = scripts?.overlay ?? `${chosen.baseUrl}/widget/initUploadABoxWidget.js`;
  const snippets = integrationSnippets({ appId: app.appId, appName: app.name, apiBase: chosen.apiUrl, windowScript, overlayScript });

  return (
    <section className="card wide integrate" aria-labelledby="integrate-title" data-testid="integrate">
      <h2 id="integrate-title">{t.integrate.title}</h2>
      <p className="muted small-text">{t.integrate.intro}</p>
      {served.length > 1 ? (
        <div className="field">
          <label htmlFor="integrate-address">{t.integrate.addressLabel}</label>
          <select id="integrate-address" value={chosen.baseUrl} onChange={(e) => setAddress(e.target.value)}>
            {served.map((a) => (
              <option key={a.baseUrl} value={a.baseUrl}>
                {addressLabel(a.label)} · {a.baseUrl}
              </option>
            ))}
          </select>
        </div>
      ) : null}
      <dl className="facts">
        <dt>{t.integrate.apiBase}</dt>
        <dd>
          <CopyValue value={chosen.apiUrl} what={t.integrate.apiBase} />
        </dd>
        <dt>{t.integrate.windowScript}</dt>
        <dd>
          <CopyValue value={windowScript} what={t.integrate.windowScript} />
        </dd>
        <dt>{t.integrate.overlayScript}</dt>
        <dd>
          <CopyValue value={overlayScript} what={t.integrate.overlayScript} />
        </dd>
      </dl>
      <h3>{t.integrate.serverSide}</h3>
      <p className="muted small-text">{t.integrate.serverSideHelp}</p>
      <SnippetTabs kinds={SERVER_SIDE} current={server} onChoose={setServer} snippets={snippets} name={t.integrate.serverSide} />
      <h3>{t.integrate.pageSide}</h3>
      <p className="muted small-text">{t.integrate.pageSideHelp}</p>
      <SnippetTabs kinds={PAGE_SIDE} current={pageForm} onChoose={setPageForm} snippets={snippets} name={t.integrate.pageSide} />
    </section>
  );
}

/** Tabs over some snippets (arrow keys move between tabs, as a tab list does), the chosen one shown with its copy button. */
function SnippetTabs({ kinds, current, onChoose, snippets, name }: { kinds: SnippetKind[]; current: SnippetKind; onChoose: (k: SnippetKind) => void; snippets: Record<SnippetKind, string>; name: string }) {
  const t = useT();
  const id = (k: SnippetKind) => `snippet-tab-${k}`;
  const onKey = (e: KeyboardEvent, at: number) => {
    const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    e.preventDefault();
    const next = kinds[(at + step + kinds.length) % kinds.length]!;
    onChoose(next);
    document.getElementById(id(next))?.focus();
  };
  return (
    <div className="snippets">
      <div role="tablist" aria-label={name} className="tabs">
        {kinds.map((k, i) => (
          <button
            key={k}
            id={id(k)}
            type="button"
            role="tab"
            aria-selected={k === current}
            aria-controls={`snippet-${k}`}
            tabIndex={k === current ? 0 : -1}
            onClick={() => onChoose(k)}
            onKeyDown={(e) => onKey(e, i)}
          >
            {t.integrate.kinds[k]}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`snippet-${current}`} aria-labelledby={id(current)} className="snippet">
        <div className="row end">
          <CopyButton text={snippets[current]} what={t.integrate.kinds[current]} />
        </div>
        <pre tabIndex={0}>
          <code data-snippet={current}>{snippets[current]}</code>
        </pre>
      </div>
    </div>
  );
}

import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { api } from '../api.js';
import { ErrorMessage, Notice, PageHeader } from '../components/Feedback.js';
import { formatBytes } from '../format.js';
import type { ConsoleSettings, LadderRung, SettingKey, SettingsView } from '../types.js';
import { useAction } from '../useAction.js';
import { useResource } from '../useResource.js';
import { DesktopSettings } from './DesktopSettings.js';

const MIB = 1024 * 1024;

/** What the form edits: text as typed, turned into values on save. */
interface Draft {
  publicUrl: string;
  scriptBaseUrl: string;
  port: string;
  ladderRungs: Array<{ label: string; shortSide: string; videoBitrateKbps: string }>;
  audioBitrateKbps: string;
  maxUploadBytesFlash: string;
  maxUploadBytesSilverlight: string;
  multipartMaxBytes: string;
  pullMaxBytes: string;
  pullAllow: string;
  pullDeny: string;
  registrationsPerMinute: string;
  maxVideosPerApp: string;
  transcodeConcurrency: string;
  downloadConcurrency: string;
}

const SIZE_KEYS = ['maxUploadBytesFlash', 'maxUploadBytesSilverlight', 'multipartMaxBytes', 'pullMaxBytes'] as const;

/** The values shown: what is saved for the next start where there is one, else what runs. */
function effective(v: SettingsView): ConsoleSettings {
  return { ...v.running, ...v.saved } as ConsoleSettings;
}

function toDraft(s: ConsoleSettings): Draft {
  const mib = (b: number) => String(Math.round((b / MIB) * 100) / 100);
  return {
    publicUrl: s.publicUrl ?? '',
    scriptBaseUrl: s.scriptBaseUrl ?? '',
    port: s.port === null ? '' : String(s.port),
    ladderRungs: s.ladderRungs.map((r) => ({ label: r.label, shortSide: String(r.shortSide), videoBitrateKbps: String(r.videoBitrateKbps) })),
    audioBitrateKbps: String(s.audioBitrateKbps),
    maxUploadBytesFlash: mib(s.maxUploadBytesFlash),
    maxUploadBytesSilverlight: mib(s.maxUploadBytesSilverlight),
    multipartMaxBytes: mib(s.multipartMaxBytes),
    pullMaxBytes: mib(s.pullMaxBytes),
    pullAllow: s.pullAllow.join('\n'),
    pullDeny: s.pullDeny.join('\n'),
    registrationsPerMinute: String(s.registrationsPerMinute),
    maxVideosPerApp: String(s.maxVideosPerApp),
    transcodeConcurrency: String(s.transcodeConcurrency),
    downloadConcurrency: String(s.downloadConcurrency),
  };
}

function fromDraft(d: Draft): ConsoleSettings {
  const lines = (t: string) => t.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
  const num = (t: string) => (t.trim() === '' ? NaN : Number(t));
  return {
    publicUrl: d.publicUrl.trim() || null,
    scriptBaseUrl: d.scriptBaseUrl.trim() || null,
    port: d.port.trim() === '' ? null : num(d.port),
    ladderRungs: d.ladderRungs.map((r): LadderRung => ({ label: r.label.trim(), shortSide: num(r.shortSide), videoBitrateKbps: num(r.videoBitrateKbps) })),
    audioBitrateKbps: num(d.audioBitrateKbps),
    maxUploadBytesFlash: Math.round(num(d.maxUploadBytesFlash) * MIB),
    maxUploadBytesSilverlight: Math.round(num(d.maxUploadBytesSilverlight) * MIB),
    multipartMaxBytes: Math.round(num(d.multipartMaxBytes) * MIB),
    pullMaxBytes: Math.round(num(d.pullMaxBytes) * MIB),
    pullAllow: lines(d.pullAllow),
    pullDeny: lines(d.pullDeny),
    registrationsPerMinute: num(d.registrationsPerMinute),
    maxVideosPerApp: num(d.maxVideosPerApp),
    transcodeConcurrency: num(d.transcodeConcurrency),
    downloadConcurrency: num(d.downloadConcurrency),
  };
}

const LABELS: Record<SettingKey, string> = {
  publicUrl: 'Public URL',
  scriptBaseUrl: 'Script address',
  port: 'Port',
  ladderRungs: 'Rendition ladder',
  audioBitrateKbps: 'Audio bitrate',
  maxUploadBytesFlash: 'Largest flash upload',
  maxUploadBytesSilverlight: 'Largest silverlight upload',
  multipartMaxBytes: 'Largest server-side upload',
  pullMaxBytes: 'Largest pulled file',
  pullAllow: 'Pull: allowed networks',
  pullDeny: 'Pull: denied networks',
  registrationsPerMinute: 'Registrations per minute',
  maxVideosPerApp: 'Videos per application',
  transcodeConcurrency: 'Transcodes at once',
  downloadConcurrency: 'Downloads at once',
};

export function SettingsPage() {
  const { data, error, reload } = useResource(() => api<SettingsView>('GET', '/settings'), []);
  const [draft, setDraft] = useState<Draft>();
  const { run, busy, error: saveError, setError: setSaveError, notice, setNotice } = useAction(reload);
  useEffect(() => {
    if (data) setDraft(toDraft(effective(data)));
  }, [data]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!data || !draft) return;
    // Only the fields the admin touched: a size shown rounded to MB is not rewritten unchanged.
    const initial = toDraft(effective(data));
    const after = fromDraft(draft);
    const change: Partial<Record<SettingKey, unknown>> = {};
    for (const k of Object.keys(after) as SettingKey[]) if (JSON.stringify(draft[k]) !== JSON.stringify(initial[k])) change[k] = after[k];
    if (Object.keys(change).length === 0) {
      setNotice('Nothing changed.');
      return;
    }
    return run(async () => {
      const r = await api<SettingsView>('PUT', '/settings', change);
      const parts = [];
      if (r.applied && r.applied.length > 0) parts.push(`Applied now: ${r.applied.map((k) => LABELS[k]).join(', ')}.`);
      if (r.afterRestart && r.afterRestart.length > 0) parts.push(`Takes effect after a restart: ${r.afterRestart.map((k) => LABELS[k]).join(', ')}.`);
      return `Saved. ${parts.join(' ')}`;
    });
  };

  const set = (patch: Partial<Draft>) => setDraft((d) => (d ? { ...d, ...patch } : d));
  return (
    <>
      <PageHeader title="Settings" />
      <ErrorMessage error={error} />
      {data && draft ? (
        <form onSubmit={submit} className="settings" aria-label="Server settings">
          <p className="muted">
            Saved in <code className="break">{data.settingsFile}</code>. Settings marked <span className="tag live">applies now</span> change at once; the others
            are read when vop starts (<span className="tag restart">after restart</span>). Flags given to <code>npm start</code> win over this file.
          </p>
          <fieldset className="card">
            <legend>Addresses</legend>
            <Field k="publicUrl" view={data} help="Absolute base URL clients see in media, cover and widget addresses. Empty: the address each caller used.">
              <input id="s-publicUrl" type="url" value={draft.publicUrl} placeholder="http://videos.lan:8080" onChange={(e) => set({ publicUrl: e.target.value })} />
            </Field>
            <Field k="scriptBaseUrl" view={data} help="Where applications load the widget scripts from, ending in /. Empty: <public URL>/widget/.">
              <input id="s-scriptBaseUrl" type="url" value={draft.scriptBaseUrl} placeholder="https://cdn.example/vop/widget/" onChange={(e) => set({ scriptBaseUrl: e.target.value })} />
            </Field>
            <Field k="port" view={data} help={window.vopDesktop ? 'On the desktop the port is a setting of the app (below).' : 'TCP port. Empty: the one given at start (--port, VOP_PORT).'}>
              <input id="s-port" type="number" min={0} max={65535} value={draft.port} onChange={(e) => set({ port: e.target.value })} />
            </Field>
            <div className="field">
              <span className="label">Data folder</span>
              <code className="break">{data.dataDir}</code>
              <p className="muted small-text">Database, media and the admin token. Chosen at start ({window.vopDesktop ? 'the desktop settings below' : '--data-dir or VOP_DATA_DIR'}); this file lives in it.</p>
            </div>
          </fieldset>

          <fieldset className="card">
            <legend>Transcoding</legend>
            <Field k="ladderRungs" view={data} help="Each source is transcoded to every rung its size reaches (never upscaled). A rung is named by the picture's shorter side.">
              <table className="compact rungs">
                <thead>
                  <tr>
                    <th scope="col">Label</th>
                    <th scope="col">Shorter side (px)</th>
                    <th scope="col">Video kbps</th>
                    <th scope="col">
                      <span className="sr-only">Remove</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {draft.ladderRungs.map((r, i) => {
                    const upd = (p: Partial<typeof r>) => set({ ladderRungs: draft.ladderRungs.map((x, j) => (j === i ? { ...x, ...p } : x)) });
                    return (
                      <tr key={i}>
                        <td>
                          <input aria-label={`Rung ${i + 1} label`} value={r.label} onChange={(e) => upd({ label: e.target.value })} />
                        </td>
                        <td>
                          <input aria-label={`Rung ${i + 1} shorter side`} type="number" min={2} step={2} value={r.shortSide} onChange={(e) => upd({ shortSide: e.target.value })} />
                        </td>
                        <td>
                          <input aria-label={`Rung ${i + 1} video kbps`} type="number" min={1} value={r.videoBitrateKbps} onChange={(e) => upd({ videoBitrateKbps: e.target.value })} />
                        </td>
                        <td>
                          <button type="button" className="small" disabled={draft.ladderRungs.length === 1} onClick={() => set({ ladderRungs: draft.ladderRungs.filter((_, j) => j !== i) })} aria-label={`Remove rung ${r.label || i + 1}`}>
                            Remove
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              <button type="button" className="small" onClick={() => set({ ladderRungs: [...draft.ladderRungs, { label: '', shortSide: '', videoBitrateKbps: '' }] })}>
                Add a rung
              </button>
            </Field>
            <Field k="audioBitrateKbps" view={data} help="AAC bitrate of every rendition, kbps.">
              <input id="s-audioBitrateKbps" type="number" min={1} value={draft.audioBitrateKbps} onChange={(e) => set({ audioBitrateKbps: e.target.value })} />
            </Field>
          </fieldset>

          <fieldset className="card">
            <legend>Size limits (MB)</legend>
            {SIZE_KEYS.map((k) => (
              <Field key={k} k={k} view={data} help={`Now ${formatBytes(Math.round(Number(draft[k]) * MIB))}.`}>
                <input id={`s-${k}`} type="number" min={1} step="any" value={draft[k]} onChange={(e) => set({ [k]: e.target.value } as Partial<Draft>)} />
              </Field>
            ))}
          </fieldset>

          <fieldset className="card">
            <legend>Pull policy</legend>
            <p className="muted small-text">
              Pulls reach LAN and public addresses. This machine (loopback) and link-local addresses only when listed as allowed; multicast and cloud metadata
              addresses never. One CIDR per line (e.g. <code>127.0.0.0/8</code>).
            </p>
            <Field k="pullAllow" view={data} help="Loopback or link-local networks pulls may reach, e.g. 127.0.0.0/8 for a file server on this machine.">
              <textarea id="s-pullAllow" rows={3} value={draft.pullAllow} onChange={(e) => set({ pullAllow: e.target.value })} />
            </Field>
            <Field k="pullDeny" view={data} help="A source's address must be in none of these.">
              <textarea id="s-pullDeny" rows={3} value={draft.pullDeny} onChange={(e) => set({ pullDeny: e.target.value })} />
            </Field>
          </fieldset>

          <fieldset className="card">
            <legend>Limits per application</legend>
            <Field k="registrationsPerMinute" view={data} help="Videos one application may register in a minute (a burst of that many, then evenly). 0: no limit.">
              <input id="s-registrationsPerMinute" type="number" min={0} value={draft.registrationsPerMinute} onChange={(e) => set({ registrationsPerMinute: e.target.value })} />
            </Field>
            <Field k="maxVideosPerApp" view={data} help="Videos one application may have, deleted ones not counted. 0: no quota.">
              <input id="s-maxVideosPerApp" type="number" min={0} value={draft.maxVideosPerApp} onChange={(e) => set({ maxVideosPerApp: e.target.value })} />
            </Field>
          </fieldset>

          <fieldset className="card">
            <legend>Work at once</legend>
            <Field k="transcodeConcurrency" view={data} help="ffmpeg runs at once. One already uses every core.">
              <input id="s-transcodeConcurrency" type="number" min={1} max={64} value={draft.transcodeConcurrency} onChange={(e) => set({ transcodeConcurrency: e.target.value })} />
            </Field>
            <Field k="downloadConcurrency" view={data} help="Pulls from a URL at once.">
              <input id="s-downloadConcurrency" type="number" min={1} max={64} value={draft.downloadConcurrency} onChange={(e) => set({ downloadConcurrency: e.target.value })} />
            </Field>
          </fieldset>

          <ErrorMessage error={saveError} />
          <Notice>{notice}</Notice>
          <div className="row sticky-actions">
            <button type="submit" className="primary" disabled={busy}>
              Save settings
            </button>
            <button type="button" onClick={() => (setDraft(toDraft(effective(data))), setNotice(''), setSaveError(''))}>
              Undo changes
            </button>
          </div>
        </form>
      ) : null}
      {window.vopDesktop ? <DesktopSettings /> : null}
    </>
  );
}

function Field({ k, view, help, children }: { k: SettingKey; view: SettingsView; help: string; children: ReactNode }) {
  const live = view.live.includes(k);
  const pending = view.pendingRestart.includes(k);
  const running = view.running[k];
  return (
    <div className="field setting">
      <label htmlFor={`s-${k}`}>
        {LABELS[k]} <span className={`tag ${live ? 'live' : 'restart'}`}>{live ? 'applies now' : 'after restart'}</span>
      </label>
      {children}
      <p className="muted small-text">
        {help}
        {pending ? <strong className="pending"> Saved; vop still runs with {Array.isArray(running) ? `${running.length} item(s)` : String(running ?? 'the default')} until it restarts.</strong> : null}
      </p>
    </div>
  );
}

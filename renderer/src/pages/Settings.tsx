import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { parseSettingField, type SettingProblem } from '../../../server/settings/settingProblem.js';
import { api, ApiError } from '../api.js';
import { ErrorMessage, Notice, PageHeader } from '../components/Feedback.js';
import { formatBytes } from '../format.js';
import { useT } from '../i18n.js';
import type { Messages } from '../messages/en.js';
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
  expireUnuploadedDays: string;
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
    expireUnuploadedDays: String(s.expireUnuploadedDays),
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
    expireUnuploadedDays: num(d.expireUnuploadedDays),
    transcodeConcurrency: num(d.transcodeConcurrency),
    downloadConcurrency: num(d.downloadConcurrency),
  };
}

/** A refused value: the field it concerns (the server's path) and what to say next to it. */
interface FieldProblem {
  field: string;
  text: string;
}

/** The element a field path names: `pullAllow` → #s-pullAllow, `ladderRungs[1].shortSide` → #s-ladderRungs-1-shortSide. */
function fieldDomId(field: string): string {
  const f = parseSettingField(field);
  if (f.setting === 'ladderRungs') return `s-ladderRungs-${f.rung ?? 0}-${f.part ?? 'label'}`;
  return `s-${f.setting}`;
}

/** The server's refusal in the page's words and language; its own message when the rule is new to us. */
function problemText(t: Messages, err: ApiError): FieldProblem | undefined {
  const p = err.detail as Partial<SettingProblem>;
  if (typeof p.field !== 'string' || typeof p.rule !== 'string') return undefined;
  const f = parseSettingField(p.field);
  const text = t.settings.problem(p as SettingProblem, f.rung, f.part) ?? err.message;
  return { field: p.field, text };
}

export function SettingsPage() {
  const t = useT();
  const L = t.settings.labels;
  const { data, error, reload } = useResource(() => api<SettingsView>('GET', '/settings'), []);
  const [draft, setDraft] = useState<Draft>();
  const [problem, setProblem] = useState<FieldProblem>();
  const { run, busy, error: saveError, setError: setSaveError, notice, setNotice } = useAction(reload);
  useEffect(() => {
    if (data) setDraft(toDraft(effective(data)));
  }, [data]);
  // A refused value: focus its field (the page may be scrolled far from it) and keep it in view.
  useEffect(() => {
    if (!problem) return;
    const el = document.getElementById(fieldDomId(problem.field));
    el?.focus({ preventScroll: true });
    el?.scrollIntoView({ block: 'center' });
  }, [problem]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!data || !draft) return;
    setProblem(undefined);
    // Only the fields the admin touched: a size shown rounded to MB is not rewritten unchanged.
    const initial = toDraft(effective(data));
    const after = fromDraft(draft);
    const change: Partial<Record<SettingKey, unknown>> = {};
    for (const k of Object.keys(after) as SettingKey[]) if (JSON.stringify(draft[k]) !== JSON.stringify(initial[k])) change[k] = after[k];
    if (Object.keys(change).length === 0) {
      setNotice(t.settings.nothingChanged);
      return;
    }
    return run(async () => {
      let r: SettingsView;
      try {
        r = await api<SettingsView>('PUT', '/settings', change);
      } catch (err) {
        const p = err instanceof ApiError ? problemText(t, err) : undefined;
        if (!p) throw err;
        setProblem(p);
        // Beside the Save button too: where the admin looks after pressing it.
        throw new Error(t.settings.notSaved(L[parseSettingField(p.field).setting as SettingKey] ?? p.field));
      }
      const parts = [t.settings.saved];
      if (r.applied && r.applied.length > 0) parts.push(t.settings.appliedNow(r.applied.map((k) => L[k]).join(t.common.listSeparator)));
      if (r.afterRestart && r.afterRestart.length > 0) parts.push(t.settings.takesEffectAfterRestart(r.afterRestart.map((k) => L[k]).join(t.common.listSeparator)));
      return parts.join(' ');
    });
  };

  const set = (patch: Partial<Draft>) => setDraft((d) => (d ? { ...d, ...patch } : d));
  /** What a Field needs to show a refused value of setting `k`. */
  const err = (k: SettingKey) => (problem && parseSettingField(problem.field).setting === k ? problem : undefined);
  /** The props that mark an input as the refused one. */
  const invalid = (domId: string) =>
    problem && fieldDomId(problem.field) === domId ? { 'aria-invalid': true as const, 'aria-describedby': `${domId}-error` } : {};
  const fieldProps = (k: SettingKey) => ({ k, view: data!, problem: err(k), label: L[k] });
  return (
    <>
      <PageHeader title={t.settings.title} />
      <ErrorMessage error={error} />
      {data && draft ? (
        <form onSubmit={submit} className="settings" aria-label={t.settings.formLabel} noValidate>
          <p className="muted">
            {t.settings.savedIn} <code className="break">{data.settingsFile}</code>
            {t.settings.savedInEnd}
            {t.settings.intro1} <span className="tag live">{t.settings.appliesNow}</span> {t.settings.intro2}
            <span className="tag restart">{t.settings.afterRestart}</span>
            {t.settings.intro3} <code>npm start</code> {t.settings.intro4}
          </p>
          <fieldset className="card">
            <legend>{t.settings.addresses}</legend>
            <Field {...fieldProps('publicUrl')} help={t.settings.publicUrlHelp}>
              <input id="s-publicUrl" type="url" value={draft.publicUrl} placeholder="http://videos.lan:8080" onChange={(e) => set({ publicUrl: e.target.value })} {...invalid('s-publicUrl')} />
            </Field>
            <Field {...fieldProps('scriptBaseUrl')} help={t.settings.scriptBaseUrlHelp}>
              <input id="s-scriptBaseUrl" type="url" value={draft.scriptBaseUrl} placeholder="https://cdn.example/vop/widget/" onChange={(e) => set({ scriptBaseUrl: e.target.value })} {...invalid('s-scriptBaseUrl')} />
            </Field>
            <Field {...fieldProps('port')} help={window.vopDesktop ? t.settings.portHelpDesktop : t.settings.portHelp}>
              <input id="s-port" type="number" min={0} max={65535} value={draft.port} onChange={(e) => set({ port: e.target.value })} {...invalid('s-port')} />
            </Field>
            <div className="field">
              <span className="label">{t.settings.dataFolder}</span>
              <code className="break">{data.dataDir}</code>
              <p className="muted small-text">{t.settings.dataFolderHelp(window.vopDesktop ? t.settings.dataFolderDesktop : '--data-dir, VOP_DATA_DIR')}</p>
            </div>
          </fieldset>

          <fieldset className="card">
            <legend>{t.settings.transcoding}</legend>
            <Field {...fieldProps('ladderRungs')} help={t.settings.ladderHelp} htmlFor="s-ladderRungs-0-label">
              <table className="compact rungs">
                <thead>
                  <tr>
                    <th scope="col">{t.settings.rungLabel}</th>
                    <th scope="col">{t.settings.rungShortSide}</th>
                    <th scope="col">{t.settings.rungKbps}</th>
                    <th scope="col">
                      <span className="sr-only">{t.settings.remove}</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {draft.ladderRungs.map((r, i) => {
                    const upd = (p: Partial<typeof r>) => set({ ladderRungs: draft.ladderRungs.map((x, j) => (j === i ? { ...x, ...p } : x)) });
                    const id = (part: string) => `s-ladderRungs-${i}-${part}`;
                    return (
                      <tr key={i}>
                        <td>
                          <input id={id('label')} aria-label={t.settings.rungLabelAria(i + 1)} value={r.label} onChange={(e) => upd({ label: e.target.value })} {...invalid(id('label'))} />
                        </td>
                        <td>
                          <input id={id('shortSide')} aria-label={t.settings.rungShortSideAria(i + 1)} type="number" min={2} step={2} value={r.shortSide} onChange={(e) => upd({ shortSide: e.target.value })} {...invalid(id('shortSide'))} />
                        </td>
                        <td>
                          <input id={id('videoBitrateKbps')} aria-label={t.settings.rungKbpsAria(i + 1)} type="number" min={1} value={r.videoBitrateKbps} onChange={(e) => upd({ videoBitrateKbps: e.target.value })} {...invalid(id('videoBitrateKbps'))} />
                        </td>
                        <td>
                          <button type="button" className="small" disabled={draft.ladderRungs.length === 1} onClick={() => set({ ladderRungs: draft.ladderRungs.filter((_, j) => j !== i) })} aria-label={t.settings.removeRungAria(r.label || String(i + 1))}>
                            {t.settings.remove}
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              <button type="button" className="small" onClick={() => set({ ladderRungs: [...draft.ladderRungs, { label: '', shortSide: '', videoBitrateKbps: '' }] })}>
                {t.settings.addRung}
              </button>
            </Field>
            <Field {...fieldProps('audioBitrateKbps')} help={t.settings.audioHelp}>
              <input id="s-audioBitrateKbps" type="number" min={1} value={draft.audioBitrateKbps} onChange={(e) => set({ audioBitrateKbps: e.target.value })} {...invalid('s-audioBitrateKbps')} />
            </Field>
          </fieldset>

          <fieldset className="card">
            <legend>{t.settings.sizeLimits}</legend>
            <p className="muted small-text">
              {t.settings.uploadTypes}
            </p>
            {SIZE_KEYS.map((k) => (
              <Field key={k} {...fieldProps(k)} help={t.settings.sizeNow(formatBytes(Math.round(Number(draft[k]) * MIB)))}>
                <input id={`s-${k}`} type="number" min={1} step="any" value={draft[k]} onChange={(e) => set({ [k]: e.target.value } as Partial<Draft>)} {...invalid(`s-${k}`)} />
              </Field>
            ))}
          </fieldset>

          <fieldset className="card">
            <legend>{t.settings.pullPolicy}</legend>
            <p className="muted small-text">
              {t.settings.pullIntro} <code>127.0.0.0/8</code>.
            </p>
            <Field {...fieldProps('pullAllow')} help={t.settings.pullAllowHelp}>
              <textarea id="s-pullAllow" rows={3} value={draft.pullAllow} spellCheck={false} onChange={(e) => set({ pullAllow: e.target.value })} {...invalid('s-pullAllow')} />
            </Field>
            <Field {...fieldProps('pullDeny')} help={t.settings.pullDenyHelp}>
              <textarea id="s-pullDeny" rows={3} value={draft.pullDeny} spellCheck={false} onChange={(e) => set({ pullDeny: e.target.value })} {...invalid('s-pullDeny')} />
            </Field>
          </fieldset>

          <fieldset className="card">
            <legend>{t.settings.perApp}</legend>
            <Field {...fieldProps('registrationsPerMinute')} help={t.settings.registrationsHelp}>
              <input id="s-registrationsPerMinute" type="number" min={0} value={draft.registrationsPerMinute} onChange={(e) => set({ registrationsPerMinute: e.target.value })} {...invalid('s-registrationsPerMinute')} />
            </Field>
            <Field {...fieldProps('maxVideosPerApp')} help={t.settings.quotaHelp}>
              <input id="s-maxVideosPerApp" type="number" min={0} value={draft.maxVideosPerApp} onChange={(e) => set({ maxVideosPerApp: e.target.value })} {...invalid('s-maxVideosPerApp')} />
            </Field>
            <Field {...fieldProps('expireUnuploadedDays')} help={t.settings.expiryHelp}>
              <input id="s-expireUnuploadedDays" type="number" min={0} value={draft.expireUnuploadedDays} onChange={(e) => set({ expireUnuploadedDays: e.target.value })} {...invalid('s-expireUnuploadedDays')} />
            </Field>
          </fieldset>

          <fieldset className="card">
            <legend>{t.settings.workAtOnce}</legend>
            <Field {...fieldProps('transcodeConcurrency')} help={t.settings.transcodesHelp}>
              <input id="s-transcodeConcurrency" type="number" min={1} max={64} value={draft.transcodeConcurrency} onChange={(e) => set({ transcodeConcurrency: e.target.value })} {...invalid('s-transcodeConcurrency')} />
            </Field>
            <Field {...fieldProps('downloadConcurrency')} help={t.settings.downloadsHelp}>
              <input id="s-downloadConcurrency" type="number" min={1} max={64} value={draft.downloadConcurrency} onChange={(e) => set({ downloadConcurrency: e.target.value })} {...invalid('s-downloadConcurrency')} />
            </Field>
          </fieldset>

          <ErrorMessage error={saveError} />
          <Notice>{notice}</Notice>
          <div className="row sticky-actions">
            <button type="submit" className="primary" disabled={busy}>
              {t.settings.save}
            </button>
            <button type="button" onClick={() => (setDraft(toDraft(effective(data))), setNotice(''), setSaveError(''), setProblem(undefined))}>
              {t.settings.undo}
            </button>
          </div>
        </form>
      ) : null}
      {window.vopDesktop ? <DesktopSettings /> : null}
    </>
  );
}

/**
 * One setting: its label and when it applies, the input, its help, and a refused value's error
 * right under the input (the refused input points at it with aria-describedby).
 */
function Field({ k, view, label, help, problem, htmlFor, children }: { k: SettingKey; view: SettingsView; label: string; help: string; problem?: FieldProblem; htmlFor?: string; children: ReactNode }) {
  const t = useT();
  const live = view.live.includes(k);
  const pending = view.pendingRestart.includes(k);
  const running = view.running[k];
  return (
    <div className={`field setting${problem ? ' invalid' : ''}`}>
      <label htmlFor={htmlFor ?? `s-${k}`}>
        {label} <span className={`tag ${live ? 'live' : 'restart'}`}>{live ? t.settings.appliesNow : t.settings.afterRestart}</span>
      </label>
      {children}
      {problem ? (
        <p className="field-error" id={`${fieldDomId(problem.field)}-error`} data-field={problem.field}>
          {problem.text}
        </p>
      ) : null}
      <p className="muted small-text">
        {help}
        {pending ? <strong className="pending">{t.settings.pending(Array.isArray(running) ? t.settings.items(running.length) : String(running ?? t.settings.theDefault))}</strong> : null}
      </p>
    </div>
  );
}

import { useEffect, useState, type FormEvent } from 'react';
import { errorMessage } from '../api.js';
import { ErrorMessage, Notice } from '../components/Feedback.js';
import { useT } from '../i18n.js';
import { useResource } from '../useResource.js';

/** The desktop app's own settings (port, data folder, start at login, LAN), through the preload. */
export function DesktopSettings() {
  const t = useT();
  const shell = window.vopDesktop!;
  const { data, error, reload } = useResource(() => shell.getSettings(), []);
  const [msg, setMsg] = useState('');
  const [err, setErr] = useState('');
  const [d, setD] = useState<{ port: string; dataDir: string; startAtLogin: boolean; serveLan: boolean }>();
  useEffect(() => {
    if (data) setD({ port: String(data.port), dataDir: data.dataDir, startAtLogin: data.startAtLogin, serveLan: data.serveLan });
  }, [data]);
  if (!d) return <ErrorMessage error={error} />;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setErr('');
    // A refused change must not sit under an earlier "Saved".
    setMsg('');
    try {
      await shell.setSettings({ port: Number(d.port), dataDir: d.dataDir, startAtLogin: d.startAtLogin, serveLan: d.serveLan });
      setMsg(t.desktop.saved);
      await reload();
    } catch (x) {
      setErr(errorMessage(x));
    }
  };
  return (
    <form className="card form settings" onSubmit={submit} aria-labelledby="desk-title">
      <h2 id="desk-title">{t.desktop.title}</h2>
      <div className="field">
        <label htmlFor="d-port">{t.desktop.port}</label>
        <input id="d-port" type="number" min={1} max={65535} value={d.port} onChange={(e) => setD({ ...d, port: e.target.value })} />
      </div>
      <div className="field">
        <label htmlFor="d-data">{t.desktop.dataDir}</label>
        <input id="d-data" value={d.dataDir} onChange={(e) => setD({ ...d, dataDir: e.target.value })} />
      </div>
      <div className="field check">
        <input id="d-login" type="checkbox" checked={d.startAtLogin} onChange={(e) => setD({ ...d, startAtLogin: e.target.checked })} />
        <label htmlFor="d-login">{t.desktop.startAtLogin}</label>
      </div>
      <div className="field check">
        <input id="d-lan" type="checkbox" checked={d.serveLan} onChange={(e) => setD({ ...d, serveLan: e.target.checked })} />
        <label htmlFor="d-lan">{t.desktop.serveLan}</label>
      </div>
      <ErrorMessage error={err} />
      <Notice>{msg}</Notice>
      <button type="submit" className="primary">
        {t.desktop.save}
      </button>
    </form>
  );
}

import { useState, type FormEvent } from 'react';
import { logIn } from '../api.js';
import { ErrorMessage } from '../components/Feedback.js';
import { LanguageSwitch } from '../components/LanguageSwitch.js';
import { useT } from '../i18n.js';
import { useAction } from '../useAction.js';

/** Headless: asks for the admin token once; the server answers with a session cookie and its secret. */
export function Login({ initialMessage, onLoggedIn }: { initialMessage: string; onLoggedIn: () => void }) {
  const t = useT();
  const [token, setToken] = useState('');
  const { run, busy, error } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    return run(async () => {
      await logIn(token);
      onLoggedIn();
    });
  };
  return (
    <main className="login">
      <form className="card login-card" onSubmit={submit} aria-labelledby="login-title">
        <div className="row between">
          <p className="brand big">
            vop <span>{t.shell.console}</span>
          </p>
          <LanguageSwitch />
        </div>
        <h1 id="login-title">{t.login.title}</h1>
        {initialMessage && !error ? <p className="notice">{initialMessage}</p> : null}
        <label htmlFor="token">{t.login.token}</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="current-password"
          autoFocus
          required
          value={token}
          onChange={(e) => setToken(e.target.value)}
          aria-describedby="token-help"
        />
        <p id="token-help" className="muted small-text">
          {t.login.help1} <code>--admin-token</code>
          {t.login.help2} <code>&lt;data-dir&gt;/admin-token</code>
          {t.login.help3}
        </p>
        <ErrorMessage error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? t.login.busy : t.login.submit}
        </button>
      </form>
    </main>
  );
}

import { useState, type FormEvent } from 'react';
import { api } from '../api.js';
import { ErrorMessage } from '../components/Feedback.js';
import { useAction } from '../useAction.js';

/** Headless: asks for the admin token once; the server answers with a session cookie. */
export function Login({ initialMessage, onLoggedIn }: { initialMessage: string; onLoggedIn: () => void }) {
  const [token, setToken] = useState('');
  const { run, busy, error } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    return run(async () => {
      await api('POST', '/session', { token }, { quiet401: true });
      onLoggedIn();
    });
  };
  return (
    <main className="login">
      <form className="card login-card" onSubmit={submit} aria-labelledby="login-title">
        <p className="brand big">
          vop <span>console</span>
        </p>
        <h1 id="login-title">Log in</h1>
        {initialMessage && !error ? <p className="notice">{initialMessage}</p> : null}
        <label htmlFor="token">Admin token</label>
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
          The token given with <code>--admin-token</code>, or the one vop generated in <code>&lt;data-dir&gt;/admin-token</code>. You stay
          logged in for 12 hours in this browser.
        </p>
        <ErrorMessage error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}

import { useCallback, useEffect, useRef, useState } from 'react';
import { api, errorMessage, onUnauthorized } from './api.js';
import { connectEvents, disconnectEvents, useEventsLive } from './events.js';
import { Link, match, useLocation } from './router.js';
import { AppPage } from './pages/AppPage.js';
import { Applications } from './pages/Applications.js';
import { Login } from './pages/Login.js';
import { OverviewPage } from './pages/Overview.js';
import { SettingsPage } from './pages/Settings.js';
import { Transcode } from './pages/Transcode.js';
import { Transfers } from './pages/Transfers.js';
import { VideoPage } from './pages/VideoPage.js';
import { Videos } from './pages/Videos.js';

const NAV = [
  { to: '/', label: 'Overview' },
  { to: '/apps', label: 'Applications' },
  { to: '/videos', label: 'Videos' },
  { to: '/transcode', label: 'Transcode monitor' },
  { to: '/transfers', label: 'Uploads and downloads' },
  { to: '/settings', label: 'Settings' },
];

type Auth = { state: 'checking' } | { state: 'out'; message: string } | { state: 'in' };

/**
 * The console: logs in once (the desktop shell hands over the token; headless, the admin types
 * it), then shows the page for the address.
 */
export function App() {
  const [auth, setAuth] = useState<Auth>({ state: 'checking' });

  const start = useCallback(async () => {
    try {
      const s = await api<{ loggedIn: boolean }>('GET', '/session', undefined, { quiet401: true });
      if (s.loggedIn) return setAuth({ state: 'in' });
      if (window.vopDesktop) {
        // The desktop app: no prompt, the shell knows the token.
        await api('POST', '/session', { token: await window.vopDesktop.adminToken() }, { quiet401: true });
        return setAuth({ state: 'in' });
      }
      setAuth({ state: 'out', message: '' });
    } catch (err) {
      setAuth({ state: 'out', message: errorMessage(err) });
    }
  }, []);

  useEffect(() => {
    void start();
    return onUnauthorized(() => {
      disconnectEvents();
      setAuth({ state: 'out', message: 'Your session has ended. Enter the admin token again.' });
    });
  }, [start]);

  useEffect(() => {
    if (auth.state === 'in') connectEvents();
  }, [auth.state]);

  if (auth.state === 'checking') return <p className="loading-screen">Loading the console…</p>;
  if (auth.state === 'out') return <Login initialMessage={auth.message} onLoggedIn={() => setAuth({ state: 'in' })} />;
  return (
    <Shell
      onLogout={async () => {
        await api('DELETE', '/session').catch(() => undefined);
        disconnectEvents();
        setAuth({ state: 'out', message: 'You have logged out.' });
      }}
    />
  );
}

function Shell({ onLogout }: { onLogout: () => void }) {
  const loc = useLocation();
  const live = useEventsLive();
  const [menuOpen, setMenuOpen] = useState(false);

  // A new page: close the narrow menu and move focus to its heading, as a page load would.
  const first = useRef(true);
  useEffect(() => {
    setMenuOpen(false);
    if (first.current) {
      first.current = false;
      return;
    }
    window.setTimeout(() => document.getElementById('page-title')?.focus(), 0);
  }, [loc.path]);

  const section = '/' + (loc.path.split('/')[1] ?? '');
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          vop <span>console</span>
        </Link>
        <button type="button" className="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen((o) => !o)}>
          Menu
        </button>
        <span className={`live ${live ? 'on' : 'off'}`} title={live ? 'Updates arrive as they happen' : 'Reconnecting to the server…'}>
          {live ? 'Live' : 'Offline'}
        </span>
        <button type="button" className="small logout" onClick={onLogout}>
          Log out
        </button>
      </header>
      <nav id="nav" className={`nav ${menuOpen ? 'open' : ''}`} aria-label="Console">
        <ul>
          {NAV.map((n) => (
            <li key={n.to}>
              <Link to={n.to} aria-current={section === n.to || (n.to === '/' && loc.path === '/') ? 'page' : undefined}>
                {n.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" className="main">
        <Page path={loc.path} search={loc.search} />
      </main>
    </div>
  );
}

function Page({ path, search }: { path: string; search: URLSearchParams }) {
  if (path === '/' || path === '') return <OverviewPage />;
  if (path === '/apps') return <Applications />;
  let m = match('/apps/:appId', path);
  if (m) return <AppPage appId={m.appId!} />;
  if (path === '/videos') return <Videos search={search} />;
  m = match('/videos/:id', path);
  if (m) return <VideoPage id={m.id!} />;
  if (path === '/transcode') return <Transcode />;
  if (path === '/transfers') return <Transfers />;
  if (path === '/settings') return <SettingsPage />;
  return (
    <>
      <h1 id="page-title" tabIndex={-1}>
        Not found
      </h1>
      <p>
        There is no console page at this address. <Link to="/">Go to the overview</Link>.
      </p>
    </>
  );
}

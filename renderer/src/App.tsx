import { useCallback, useEffect, useRef, useState } from 'react';
import { api, errorMessage, logIn, logOut, onUnauthorized } from './api.js';
import { connectEvents, disconnectEvents, useEventsLive } from './events.js';
import { LanguageSwitch } from './components/LanguageSwitch.js';
import { useT } from './i18n.js';
import type { Messages } from './messages/en.js';
import { Link, match, useLocation } from './router.js';
import { AppPage } from './pages/AppPage.js';
import { BackupsPage } from './pages/Backups.js';
import { Applications } from './pages/Applications.js';
import { Login } from './pages/Login.js';
import { OverviewPage } from './pages/Overview.js';
import { SettingsPage } from './pages/Settings.js';
import { Transcode } from './pages/Transcode.js';
import { Transfers } from './pages/Transfers.js';
import { TryUploadPage } from './pages/TryUpload.js';
import { VideoPage } from './pages/VideoPage.js';
import { Videos } from './pages/Videos.js';

const NAV = [
  { to: '/', key: 'overview' },
  { to: '/apps', key: 'apps' },
  { to: '/videos', key: 'videos' },
  { to: '/transcode', key: 'transcode' },
  { to: '/transfers', key: 'transfers' },
  { to: '/backups', key: 'backups' },
  { to: '/settings', key: 'settings' },
] as const;

/**
 * The browser tab's title for a console path, in the chosen language: the page's name (a whole
 * page's, not the record it shows, which loads later), or none for a path that is no page.
 */
function pageTitle(t: Messages, path: string): string {
  if (match('/apps/:appId/try-upload', path)) return t.tryUpload.title;
  if (match('/apps/:appId', path)) return t.app.title;
  if (match('/videos/:id', path)) return t.video.title;
  const nav = NAV.find((n) => n.to === (path || '/'));
  return nav ? t.shell.nav[nav.key] : t.shell.notFound;
}

type Auth = { state: 'checking' } | { state: 'out'; message: string } | { state: 'in' };

/** Why the login page shows, when the app itself knows: keys of `shell`, said in the language of the moment. */
type OwnReason = 'sessionEnded' | 'loggedOut' | 'secretRefused';
const OWN_REASONS: ReadonlySet<string> = new Set<OwnReason>(['sessionEnded', 'loggedOut', 'secretRefused']);

/**
 * The console: logs in once (the desktop shell hands over the token; headless, the admin types
 * it), then shows the page for the address.
 */
export function App() {
  const t = useT();
  const [auth, setAuth] = useState<Auth>({ state: 'checking' });
  const { path } = useLocation();
  useEffect(() => {
    document.title = t.shell.documentTitle(auth.state === 'in' ? pageTitle(t, path) : auth.state === 'out' ? t.login.title : '');
  }, [t, auth.state, path]);

  const start = useCallback(async () => {
    try {
      // Logged in only with the cookie and the secret this origin keeps (api.ts): a live cookie
      // whose secret this browser lost is of no use, and the login page asks for the token.
      const s = await api<{ loggedIn: boolean }>('GET', '/session', undefined, { quiet401: true });
      if (s.loggedIn) return setAuth({ state: 'in' });
      if (window.vopDesktop) {
        // The desktop app: no prompt, the shell knows the token.
        await logIn(await window.vopDesktop.adminToken());
        return setAuth({ state: 'in' });
      }
      setAuth({ state: 'out', message: '' });
    } catch (err) {
      setAuth({ state: 'out', message: errorMessage(err) });
    }
  }, []);

  useEffect(() => {
    void start();
    return onUnauthorized((err) => {
      disconnectEvents();
      setAuth({ state: 'out', message: err.secretRefused ? 'secretRefused' : 'sessionEnded' });
    });
  }, [start]);

  useEffect(() => {
    if (auth.state === 'in') connectEvents();
  }, [auth.state]);

  if (auth.state === 'checking') return <p className="loading-screen">{t.shell.loading}</p>;
  // The reasons the app itself gives are keys, said in the language of the moment.
  const said = auth.state === 'out' && OWN_REASONS.has(auth.message) ? t.shell[auth.message as OwnReason] : auth.state === 'out' ? auth.message : '';
  if (auth.state === 'out') return <Login initialMessage={said} onLoggedIn={() => setAuth({ state: 'in' })} />;
  return (
    <Shell
      onLogout={async () => {
        await logOut().catch(() => undefined);
        disconnectEvents();
        setAuth({ state: 'out', message: 'loggedOut' });
      }}
    />
  );
}

function Shell({ onLogout }: { onLogout: () => void }) {
  const t = useT();
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
        {t.shell.skip}
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          vop <span>{t.shell.console}</span>
        </Link>
        <button type="button" className="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen((o) => !o)}>
          {t.shell.menu}
        </button>
        <span className={`live ${live ? 'on' : 'off'}`} title={live ? t.shell.liveTitle : t.shell.offlineTitle}>
          {live ? t.shell.live : t.shell.offline}
        </span>
        <LanguageSwitch />
        <button type="button" className="small logout" onClick={onLogout}>
          {t.shell.logout}
        </button>
      </header>
      <nav id="nav" className={`nav ${menuOpen ? 'open' : ''}`} aria-label={t.shell.navLabel}>
        <ul>
          {NAV.map((n) => (
            <li key={n.to}>
              <Link to={n.to} aria-current={section === n.to || (n.to === '/' && loc.path === '/') ? 'page' : undefined}>
                {t.shell.nav[n.key]}
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
  const t = useT();
  if (path === '/' || path === '') return <OverviewPage />;
  if (path === '/apps') return <Applications />;
  let m = match('/apps/:appId', path);
  if (m) return <AppPage appId={m.appId!} />;
  m = match('/apps/:appId/try-upload', path);
  if (m) return <TryUploadPage appId={m.appId!} />;
  if (path === '/videos') return <Videos search={search} />;
  m = match('/videos/:id', path);
  if (m) return <VideoPage id={m.id!} />;
  if (path === '/transcode') return <Transcode />;
  if (path === '/transfers') return <Transfers />;
  if (path === '/backups') return <BackupsPage />;
  if (path === '/settings') return <SettingsPage />;
  return (
    <>
      <h1 id="page-title" tabIndex={-1}>
        {t.shell.notFound}
      </h1>
      <p>
        {t.shell.notFoundText} <Link to="/">{t.shell.goOverview}</Link>
      </p>
    </>
  );
}

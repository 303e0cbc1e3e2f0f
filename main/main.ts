/**
 * The desktop shell: starts the server in the main process, shows the console in a sandboxed
 * window, keeps a tray menu, and shuts the server down cleanly. Its decisions live in plain
 * functions (shellSettings.ts) that are tested without Electron; this file only wires them up.
 */
import path from 'node:path';
import { BrowserWindow, Menu, Tray, app, clipboard, ipcMain, nativeImage, shell } from 'electron';
import Store from 'electron-store';
import type { VopServer } from '../server/app.js';
import { bootstrapServer } from '../server/bootstrap.js';
import { IPC, type FirstRunInfo } from './preloadApi.js';
import {
  DEFAULT_SHELL_SETTINGS,
  OneTimeValue,
  apiAddress,
  applySettingsPatch,
  bindHost,
  consoleUrl,
  isConsoleUrl,
  isExternalLinkAllowed,
  normalizeShellSettings,
  resolveDataDir,
  type ShellSettings,
} from './shellSettings.js';

const store = new Store<ShellSettings>({ name: 'shell-settings', defaults: DEFAULT_SHELL_SETTINGS });
let settings = normalizeShellSettings(store.store);
// The port the server listens on for this run. A port changed in the settings takes effect only
// at the next start, so the window, its navigation check and the tray must not follow settings.port.
const listeningPort = settings.port;
let vop: VopServer | undefined;
let win: BrowserWindow | undefined;
// Held for the life of the app: a Tray that is garbage-collected disappears from the menu bar.
let tray: Tray | undefined;
let quitting = false;
const firstRun = new OneTimeValue<FirstRunInfo>();

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => showWindow());
  app.whenReady().then(start, (err) => fail(err));
  app.on('window-all-closed', () => {
    // The server keeps serving the LAN with no window open; quit from the tray.
  });
  app.on('before-quit', (event) => {
    if (quitting || !vop) return;
    event.preventDefault();
    quitting = true;
    // Flush the database and stop ffmpeg before the process goes.
    vop.close().finally(() => app.exit(0));
  });
}

async function start(): Promise<void> {
  app.setLoginItemSettings({ openAtLogin: settings.startAtLogin });
  const dataDir = resolveDataDir(settings, app.getPath('userData'), path.join);
  // The start path npm start takes too: the settings saved from the console's Settings page apply.
  // The port is this app's own setting (the console says so), given here as a flag would be.
  const started = await bootstrapServer({ port: listeningPort, portGiven: true, host: bindHost(settings), options: { dataDir } });
  vop = started.vop;
  await vop.listen(started.config.port, started.config.host);
  registerIpc(vop);
  createTray();
  if (!settings.firstRunDone) {
    // First run: one application to start with; the console's overview shows it, with its secret
    // and the API address, once (window.vopDesktop.takeFirstRun).
    if ((await vop.services.apps.list()).length === 0) {
      const app = await vop.services.apps.create({ name: 'My first application' });
      firstRun.set({ apiAddress: apiAddress(listeningPort), appId: app.appId, appSecret: app.appSecret, appName: app.name });
    }
    store.set('firstRunDone', true);
    settings = { ...settings, firstRunDone: true };
  }
  showWindow();
}

function showWindow(): void {
  if (win && !win.isDestroyed()) {
    win.show();
    win.focus();
    return;
  }
  win = new BrowserWindow({
    width: 1280,
    height: 800,
    minWidth: 480,
    title: 'vop',
    webPreferences: {
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      preload: path.join(import.meta.dirname, 'preload.cjs'),
    },
  });
  // Links leave for the system browser; the console never opens windows of its own.
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (isExternalLinkAllowed(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('will-navigate', (event, url) => {
    if (!isConsoleUrl(url, listeningPort)) event.preventDefault();
  });
  void win.loadURL(consoleUrl(listeningPort));
}

function createTray(): void {
  tray = new Tray(nativeImage.createFromPath(path.join(import.meta.dirname, 'icon.png')));
  tray.setToolTip('vop');
  tray.setContextMenu(
    Menu.buildFromTemplate([
      { label: 'Open the console', click: () => showWindow() },
      { label: 'Copy the API address', click: () => clipboard.writeText(apiAddress(listeningPort)) },
      { type: 'separator' },
      { label: 'Quit vop', click: () => app.quit() },
    ]),
  );
}

function registerIpc(server: VopServer): void {
  ipcMain.handle(IPC.adminToken, () => server.adminToken);
  ipcMain.handle(IPC.copyText, (_e, text: unknown) => clipboard.writeText(String(text)));
  ipcMain.handle(IPC.getSettings, () => settings);
  ipcMain.handle(IPC.takeFirstRun, () => firstRun.take());
  ipcMain.handle(IPC.setSettings, (_e, patch: unknown) => {
    // A refused value throws: the rejection reaches the settings page, which shows its message.
    settings = applySettingsPatch(settings, patch);
    store.set(settings);
    app.setLoginItemSettings({ openAtLogin: settings.startAtLogin });
    return settings;
  });
}

function fail(err: unknown): void {
  console.error(`vop could not start: ${(err as Error)?.stack ?? String(err)}`);
  app.exit(1);
}

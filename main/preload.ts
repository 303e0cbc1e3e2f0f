// The preload runs sandboxed: it may use only contextBridge and ipcRenderer, and exposes one
// typed function per action (see preloadApi.ts).
import { contextBridge, ipcRenderer } from 'electron';
import { IPC, type VopDesktopApi } from './preloadApi.js';

const api: VopDesktopApi = {
  adminToken: () => ipcRenderer.invoke(IPC.adminToken),
  copyText: (text) => ipcRenderer.invoke(IPC.copyText, String(text)),
  openExternal: (url) => ipcRenderer.invoke(IPC.openExternal, String(url)),
  getSettings: () => ipcRenderer.invoke(IPC.getSettings),
  setSettings: (patch) => ipcRenderer.invoke(IPC.setSettings, patch),
  takeFirstRun: () => ipcRenderer.invoke(IPC.takeFirstRun),
};

contextBridge.exposeInMainWorld('vopDesktop', api);

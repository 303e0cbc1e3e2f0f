// The preload runs sandboxed: it may use only contextBridge and ipcRenderer, and exposes one
// typed function per action (see preloadApi.ts).
import { contextBridge, ipcRenderer } from 'electron';
import { IPC, remoteErrorMessage, type VopDesktopApi } from './preloadApi.js';

const api: VopDesktopApi = {
  adminToken: () => ipcRenderer.invoke(IPC.adminToken),
  copyText: (text) => ipcRenderer.invoke(IPC.copyText, String(text)),
  getSettings: () => ipcRenderer.invoke(IPC.getSettings),
  setSettings: (patch) =>
    ipcRenderer.invoke(IPC.setSettings, patch).catch((err: unknown) => {
      throw new Error(remoteErrorMessage(err));
    }),
  takeFirstRun: () => ipcRenderer.invoke(IPC.takeFirstRun),
};

contextBridge.exposeInMainWorld('vopDesktop', api);

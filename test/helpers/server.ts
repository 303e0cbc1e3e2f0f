import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer, type VopServer } from '../../server/app.js';
import type { ServerOptionsInput } from '../../server/config.js';
import { AdminClient, SpecClient } from './client.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
const ROOT = path.resolve(import.meta.dirname, '../..');

/** A fresh data directory under the OS temp folder. */
export function tempDataDir(prefix = 'vop-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface TestServer {
  vop: VopServer;
  baseUrl: string;
  dataDir: string;
  admin: AdminClient;
  /** Creates an application and returns a spec client for it. */
  newApp(name?: string): Promise<SpecClient>;
  close(): Promise<void>;
}

/** Boots the real server in this process on an ephemeral port against a real data dir. */
export async function startServer(options: Partial<ServerOptionsInput> = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDataDir();
  const logs: string[] = [];
  const vop = await createServer({ adminToken: ADMIN_TOKEN, log: (l) => logs.push(l), ...options, dataDir });
  const { port } = await vop.listen(0, '127.0.0.1');
  const baseUrl = `http://127.0.0.1:${port}`;
  const admin = new AdminClient(baseUrl, ADMIN_TOKEN);
  return {
    vop,
    baseUrl,
    dataDir,
    admin,
    async newApp(name) {
      const { appId, appSecret } = await admin.createApp(name);
      return new SpecClient(baseUrl, appId, appSecret);
    },
    close: () => vop.close(500),
  };
}

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** Resolves with the exit code once the process ends. */
  exited: Promise<number | null>;
}

/** Starts `server/main.ts` as a child process (as `npm start` does) and waits for its listening line. */
export async function startServerProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'server/main.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${out}`)), 30_000);
    const onData = () => {
      const m = /vop listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}`));
    });
  });
  return { child, baseUrl, output: () => out, exited };
}

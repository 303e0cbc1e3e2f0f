import fs from 'node:fs';
import path from 'node:path';
import { isLockOwnerAlive } from './dataDirLock.js';

/**
 * `<dataDir>/vop.address`: where the server that holds the data folder answers, written once it
 * listens and removed when it closes, so that `vop backup --data-dir D` can go through the server
 * that holds D's lock (a second process may not open the database) without being told its port,
 * and `vop apps …` finds the server of its data folder, whatever its port.
 */
export const ADDRESS_FILE = 'vop.address';

export interface ServerAddress {
  /** A loopback URL of the server (the admin API answers loopback by default). */
  url: string;
  pid: number;
}

export function writeServerAddress(dataDir: string, address: ServerAddress): void {
  fs.writeFileSync(path.join(dataDir, ADDRESS_FILE), JSON.stringify(address), { mode: 0o600 });
}

export function readServerAddress(dataDir: string): ServerAddress | undefined {
  try {
    const a = JSON.parse(fs.readFileSync(path.join(dataDir, ADDRESS_FILE), 'utf8')) as ServerAddress;
    return typeof a.url === 'string' ? a : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the file if it is still this process's. */
export function removeServerAddress(dataDir: string): void {
  if (readServerAddress(dataDir)?.pid === process.pid) fs.rmSync(path.join(dataDir, ADDRESS_FILE), { force: true });
}

/** The URL of the server holding `dataDir`, from the address it left there, if that process still runs. */
export function runningServerUrl(dataDir: string): string | undefined {
  const address = readServerAddress(dataDir);
  return address && isLockOwnerAlive({ pid: address.pid }) ? address.url : undefined;
}

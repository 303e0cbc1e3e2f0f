/**
 * What Linux's /proc says of a process, for the checks that must tell a live process from a dead
 * one whose pid was reused or that lingers as a zombie (the data-dir lock, the ffmpeg pid file).
 * Elsewhere these read nothing, and callers fall back on what the platform offers.
 */
import fs from 'node:fs';
import path from 'node:path';

/** What /proc says of a process: its state letter (R, S, D, Z, X…) and its start time. */
export interface ProcStat {
  state: string;
  startTime: string;
}

/**
 * Reads /proc/<pid>/stat; undefined when there is no such process. The command name (field 2)
 * is in parentheses and may itself hold spaces and parentheses: the fields are read after the
 * last ')'; the first there is field 3 (the state), field 22 (the start time) the twentieth.
 */
export function readProcStat(pid: number, proc = '/proc'): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(proc, String(pid), 'stat'), 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTime = fields[19];
  return state && startTime ? { state, startTime } : undefined;
}

/** This boot's id (Linux), undefined where there is none. */
export function bootId(proc = '/proc'): string | undefined {
  try {
    return fs.readFileSync(path.join(proc, 'sys/kernel/random/boot_id'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}


/**
 * The live processes of this machine as /proc shows them (Linux): the tests that watch ffmpeg and
 * ffprobe (which step runs, at which niceness, how many at once) read them here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { notYet, waitUntil, type WaitOptions } from './wait.js';

export interface Proc {
  pid: number;
  /** Its parent's pid. */
  ppid: number;
  /** Its process group. */
  pgid: number;
  /** One letter: R running, S sleeping, T stopped, … (zombies are never listed). */
  state: string;
  /** Its niceness, -20 to 19. */
  nice: number;
  /** The program it runs now (argv[0]; after the confining wrappers' exec, ffmpeg itself). */
  program: string;
  /** Its command line, the arguments joined by spaces. */
  cmdline: string;
}

/** Every live (not zombie) process that `keep` takes; one that ends while it is read is left out. */
export function processes(keep: (p: Proc) => boolean = () => true): Proc[] {
  const out: Proc[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // After the command's name in parentheses: state, ppid, pgrp, … , nice (the 17th).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
      const p: Proc = { pid: Number(entry), ppid: Number(fields[1]), pgid: Number(fields[2]), state: fields[0]!, nice: Number(fields[16]), program: argv[0] ?? '', cmdline: argv.join(' ') };
      if (keep(p)) out.push(p);
    } catch {
      // It ended while we looked.
    }
  }
  return out;
}

/** Whether `p` runs the program named `name` (ffmpeg, ffprobe), whatever its directory. */
export const runs = (p: Proc, name: string): boolean => p.program === name || p.program.endsWith(`/${name}`);

/**
 * The files in the scratch folders an ffmpeg writes its outputs to (the folders of the arguments
 * under a `scratch` folder in its command line), with their sizes: bytes there say that it is
 * some way into its encode.
 */
export function scratchOutputs(p: Proc): Array<{ file: string; size: number }> {
  const dirs = new Set(p.cmdline.split(' ').filter((a) => a.includes(`${path.sep}scratch${path.sep}`)).map((a) => path.dirname(a)));
  const found: Array<{ file: string; size: number }> = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = fs.readdirSync(dir, { recursive: true }) as string[];
    } catch {
      continue;
    }
    for (const name of names) {
      try {
        const st = fs.statSync(path.join(dir, name));
        if (st.isFile()) found.push({ file: path.join(dir, name), size: st.size });
      } catch {
        // gone meanwhile
      }
    }
  }
  return found;
}

/**
 * Holds process `pid` where it is (SIGSTOP) until its group is killed or continued (SIGCONT); false
 * when it has ended already. Every test that holds an ffmpeg holds it here.
 */
export function hold(pid: number): boolean {
  try {
    process.kill(pid, 'SIGSTOP');
    return true;
  } catch {
    return false;
  }
}

/**
 * Waits until `find` names a process, and holds it as soon as it is seen: a run that is over in a
 * fraction of a second (a stream copy) cannot end before a kill that follows, so the clip need
 * not be long enough to race the kill. One that ended before it could be held is looked for again.
 */
export async function holdWhenSeen<T extends number | { pid: number }>(what: string, find: () => T | undefined | Promise<T | undefined>, o: WaitOptions): Promise<T> {
  return waitUntil(what, async () => {
    const found = await find();
    return found !== undefined && hold(typeof found === 'number' ? found : found.pid) ? found : undefined;
  }, o);
}

/**
 * Waits until `encode` has written some of its outputs into scratch (some way into it), then holds
 * it there: a kill that follows lands in the encode however fast it is, so the clip need not be
 * long enough to race the kill (a long clip is encoded again after the restart).
 */
export async function holdOnceWriting(encode: Proc): Promise<void> {
  await waitUntil('outputs half-written in scratch', () => {
    const outputs = scratchOutputs(encode);
    if (!outputs.some((f) => f.size > 0)) return notYet(outputs);
    if (!hold(encode.pid)) throw new Error(`the encode (${encode.pid}) ended before it could be held`);
    return true;
  }, { timeoutMs: 60_000, pollMs: 10 });
}

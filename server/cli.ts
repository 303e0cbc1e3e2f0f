/**
 * `npm run vop -- <command>`: drives the admin API of a running server, for headless installs.
 * Prints JSON on stdout; errors go to stderr with a non-zero exit code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BACKUP_COMMANDS, BACKUP_USAGE, runBackupCommand } from './backupCommands.js';
import { CONFIG_USAGE, runConfigCommand } from './configCommands.js';
import { runningServerUrl } from './storage/serverAddress.js';

/** What the command takes, on a bad command line and for --help. */
export const USAGE = `Usage: npm run vop -- <command> [options]

Commands:
  apps create --name <name> [--callback-url <url>] [--api-networks <cidr,cidr>]
  apps list
  apps get <appId>
  apps update <appId> [--name <name>] [--callback-url <url>] [--grants <appId,appId>]
                      [--api-networks <cidr,cidr>]   (the only networks its API calls may
                      come from, e.g. 203.0.113.10,10.0.0.0/8; "" for any address)
  apps disable <appId>
  apps enable <appId>
  apps rotate-secret <appId>
  ${CONFIG_USAGE}
  ${BACKUP_USAGE}

Options:
  --server <url>        the server (or VOP_SERVER; else the one running on <data-dir>,
                        else http://127.0.0.1:8080)
  --admin-token <t>     the admin token (or VOP_ADMIN_TOKEN; else read from <data-dir>/admin-token)
  --data-dir <dir>      the server's data folder: its address and admin token (default ./data,
                        or VOP_DATA_DIR)

Output is JSON on stdout. npm prints its own lines first: run npm run -s vop -- … to pipe it.`;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one CLI command; separate from process handling so tests can call it. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  // The configuration commands read files and variables only: no server, no token.
  if (argv[0] === 'config') return runConfigCommand(argv.slice(1), env);
  // Backups write their messages to stderr as they go (stdout may be the backup itself).
  if (BACKUP_COMMANDS.includes(argv[0] ?? '')) {
    const lines: string[] = [];
    const code = await runBackupCommand(argv, env, { stdout: process.stdout, say: (l) => lines.push(l) });
    return { code, stdout: '', stderr: lines.length ? `${lines.join('\n')}\n` : '' };
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        server: { type: 'string' },
        'admin-token': { type: 'string' },
        'data-dir': { type: 'string' },
        name: { type: 'string' },
        'callback-url': { type: 'string' },
        grants: { type: 'string' },
        'api-networks': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    return { code: 2, stdout: '', stderr: `${(err as Error).message}\n\n${USAGE}\n` };
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) return { code: values.help ? 0 : 2, stdout: values.help ? `${USAGE}\n` : '', stderr: values.help ? '' : `${USAGE}\n` };

  const dataDir = values['data-dir'] ?? env.VOP_DATA_DIR ?? './data';
  // The server named, else the one holding the data folder (it leaves its address there), else the default port.
  const server = (values.server ?? env.VOP_SERVER ?? runningServerUrl(dataDir) ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  let token = values['admin-token'] ?? env.VOP_ADMIN_TOKEN;
  if (!token) {
    const file = path.join(dataDir, 'admin-token');
    try {
      token = fs.readFileSync(file, 'utf8').trim();
    } catch {
      return { code: 2, stdout: '', stderr: `${noAdminToken(file)}\n` };
    }
  }

  const [group, command, id] = positionals;
  const need = (what: string | undefined, name: string) => {
    if (!what) throw new UsageError(`${name} is required`);
    return encodeURIComponent(what);
  };
  let request: { method: string; path: string; body?: unknown };
  try {
    if (group !== 'apps') throw new UsageError(`unknown command "${positionals.join(' ')}"`);
    switch (command) {
      case 'create':
        request = { method: 'POST', path: '/admin/api/apps', body: { name: values.name, callbackUrl: values['callback-url'], apiNetworks: cidrList(values['api-networks']) } };
        break;
      case 'list':
        request = { method: 'GET', path: '/admin/api/apps' };
        break;
      case 'get':
        request = { method: 'GET', path: `/admin/api/apps/${need(id, 'appId')}` };
        break;
      case 'update': {
        const body: Record<string, unknown> = {};
        if (values.name !== undefined) body.name = values.name;
        if (values['callback-url'] !== undefined) body.callbackUrl = values['callback-url'];
        if (values.grants !== undefined) body.grants = values.grants.split(',').map((s) => s.trim()).filter(Boolean);
        if (values['api-networks'] !== undefined) body.apiNetworks = cidrList(values['api-networks']);
        request = { method: 'PATCH', path: `/admin/api/apps/${need(id, 'appId')}`, body };
        break;
      }
      case 'disable':
      case 'enable':
        request = { method: 'PATCH', path: `/admin/api/apps/${need(id, 'appId')}`, body: { disabled: command === 'disable' } };
        break;
      case 'rotate-secret':
        request = { method: 'POST', path: `/admin/api/apps/${need(id, 'appId')}/secret` };
        break;
      default:
        throw new UsageError(`unknown command "${positionals.join(' ')}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) return { code: 2, stdout: '', stderr: `${err.message}\n\n${USAGE}\n` };
    throw err;
  }

  let res: Response;
  try {
    res = await fetch(`${server}${request.path}`, {
      method: request.method,
      headers: { authorization: `Bearer ${token}`, ...(request.body ? { 'content-type': 'application/json' } : {}) },
      body: request.body ? JSON.stringify(request.body) : undefined,
    });
  } catch (err) {
    const inner = (err as { cause?: { code?: string; message?: string } }).cause;
    const cause = inner?.code ?? inner?.message ?? (err as Error).message;
    return { code: 1, stdout: '', stderr: `${cannotReach(server, cause)}\n` };
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (res.ok) return { code: 0, stdout: `${body === undefined ? text : JSON.stringify(body, null, 2)}\n`, stderr: '' };
  return { code: 1, stdout: '', stderr: `${refusal(res.status, body, text, server)}\n` };
}

/** When no admin token was given and the data folder holds none. */
export function noAdminToken(file: string): string {
  return `No admin token: pass --admin-token, set VOP_ADMIN_TOKEN, or point --data-dir at the server's data directory (looked in ${file}).`;
}

/** When the server does not answer at all; `cause` is the error's code (ECONNREFUSED) or message. */
export function cannotReach(server: string, cause: string): string {
  return `Cannot reach vop at ${server} (${cause}). Is it running (npm start)? If it listens elsewhere, pass --server <url>, or --data-dir <its data folder> to find it.`;
}

/** A refusal for people: the result code and its message, and what to do about the usual ones. */
export function refusal(status: number, body: unknown, text: string, server: string): string {
  const e = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : text.trim().slice(0, 300) || `HTTP ${status}`;
  const hints: Record<string, string> = {
    '410': "The admin token is not this server's: pass --admin-token, set VOP_ADMIN_TOKEN, or --data-dir <its data folder> (the token is in <data dir>/admin-token).",
    '411': `The server at ${server} answers its admin API on loopback only: run this on its machine, or start it with --admin-remote.`,
  };
  return [`vop refused (${code ?? `HTTP ${status}`}): ${message}`, ...(code && hints[code] ? [hints[code]] : [])].join('\n');
}

class UsageError extends Error {}

/**
 * The command line's run: `args` (process.argv's, past node and the script), its output on this
 * process's streams, its exit code in process.exitCode. scripts/vop.mjs (`npm run vop`) calls it
 * from the server's bundle; run directly (`node dist/server/cli.js`, or tsx on this file) the
 * module calls it itself.
 */
export async function main(args: string[] = process.argv.slice(2)): Promise<void> {
  if (BACKUP_COMMANDS.includes(args[0] ?? '')) {
    // Not 0 unless the command says so: a command whose work stalled must not look done.
    process.exitCode = 1;
    process.exitCode = await runBackupCommand(args, process.env, { stdout: process.stdout, say: (l) => process.stderr.write(`${l}\n`) });
    return;
  }
  const r = await runCli(args);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  const hint = r.stdout ? npmBannerHint(process.env, process.stdout.isTTY === true) : undefined;
  if (hint) process.stderr.write(`${hint}\n`);
  process.exitCode = r.code;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cli.ts')) void main();

/**
 * Said on standard error when the JSON goes down a pipe after npm's own two lines (`> vop@… vop`),
 * which npm writes to standard output before the command starts, so a JSON parser at the other
 * end fails; `npm run -s` leaves them out. Nothing when npm is silent or the output is a terminal.
 */
export function npmBannerHint(env: NodeJS.ProcessEnv, toTerminal: boolean): string | undefined {
  if (toTerminal || env.npm_lifecycle_event !== 'vop' || env.npm_config_loglevel === 'silent') return undefined;
  return 'vop: npm printed two lines of its own before this JSON on standard output; run npm run -s vop -- … to pipe it to a JSON parser.';
}

/** `--api-networks a,b`: a list (commas or spaces between); "" for none. Checked by the server. */
function cidrList(v: string | undefined): string[] | undefined {
  return v === undefined ? undefined : v.split(/[\s,]+/).filter(Boolean);
}

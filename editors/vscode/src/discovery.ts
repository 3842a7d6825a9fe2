// Finding the milk-lsp server: `milk.server.path`, else `milk.server.python -m milk_lsp` (when
// that Python has milk_lsp), else `milk-lsp` on PATH (and pipx's ~/.local/bin), else the
// extension's own install (install.ts). No `vscode` import.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { OwnServerState } from './install';
import { probePython } from './python';

export interface ServerCommand {
  command: string;
  args: string[];
  /** where it came from, for the log */
  source: 'server.path' | 'server.python' | 'PATH' | 'installed';
}

/** The extension's own milk-lsp (install.ts). */
export interface OwnServer {
  command: string;
  state: OwnServerState;
  /** this build carries the wheel, so it can install one */
  canInstall: boolean;
}

export interface DiscoveryInput {
  serverPath?: string;
  python?: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  homedir?: string;
  ownServer?: OwnServer;
  /** injectable for tests */
  isExecutable?: (file: string) => boolean;
  /** whether `python -m milk_lsp` would work */
  hasMilkLsp?: (python: string) => Promise<boolean>;
}

export type DiscoveryResult =
  | { ok: true; server: ServerCommand; notes?: string[] }
  | {
      ok: false;
      problem: string;
      /** `offer`: ask the user to install the extension's own; `update`: reinstall it (another wheel) */
      install?: 'offer' | 'update';
      notes?: string[];
    };

/** The problem shown while the user has not installed the server yet. */
export const NOT_INSTALLED =
  'The milk-lsp server is not installed. Install it from the notification, or with "milk: Reinstall Server".';

async function defaultHasMilkLsp(python: string): Promise<boolean> {
  const p = await probePython(python);
  return p.ok && p.hasMilkLsp;
}

export const INSTALL_HINT =
  // plain words: a notification shows backticks literally
  'Install it from its folder (pip install /path/to/milk-lsp, or pipx install /path/to/milk-lsp), ' +
  'then set milk.server.path to the milk-lsp executable, or milk.server.python to a Python that has it.';

export function defaultIsExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function expandHome(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return path.join(home, p.slice(2));
  return p;
}

/** `which`: the first executable `name` on PATH, plus the extra directories. */
export function findOnPath(
  name: string,
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform,
  extraDirs: string[],
  isExecutable: (file: string) => boolean,
): string | undefined {
  const sep = platform === 'win32' ? ';' : ':';
  const exts = platform === 'win32' ? ['.exe', '.cmd', '.bat', ''] : [''];
  const dirs = (env.PATH ?? env.Path ?? '').split(sep).filter(Boolean).concat(extraDirs);
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

export async function discoverServer(input: DiscoveryInput): Promise<DiscoveryResult> {
  const env = input.env ?? process.env;
  const platform = input.platform ?? process.platform;
  const home = input.homedir ?? os.homedir();
  const isExecutable = input.isExecutable ?? defaultIsExecutable;
  const hasMilkLsp = input.hasMilkLsp ?? defaultHasMilkLsp;
  const notes: string[] = [];
  const withNotes = <T extends DiscoveryResult>(r: T): T => (notes.length ? { ...r, notes } : r);

  const serverPath = (input.serverPath ?? '').trim();
  if (serverPath) {
    const p = expandHome(serverPath, home);
    if (isExecutable(p)) return { ok: true, server: { command: p, args: [], source: 'server.path' } };
    return { ok: false, problem: `milk.server.path is set to "${serverPath}", which is not an executable file.` };
  }

  const python = (input.python ?? '').trim();
  if (python) {
    let p = expandHome(python, home);
    if (!p.includes('/') && !p.includes('\\')) p = findOnPath(p, env, platform, [], isExecutable) ?? p;
    if (!isExecutable(p)) notes.push(`milk.server.python is set to "${python}", which is not an executable file`);
    else if (await hasMilkLsp(p)) return withNotes({ ok: true, server: { command: p, args: ['-m', 'milk_lsp'], source: 'server.python' } });
    else notes.push(`milk.server.python (${p}) has no milk_lsp`);
  }

  const extra = platform === 'win32' ? [] : [path.join(home, '.local', 'bin')];
  const found = findOnPath('milk-lsp', env, platform, extra, isExecutable);
  if (found) return withNotes({ ok: true, server: { command: found, args: [], source: 'PATH' } });

  const own = input.ownServer;
  if (own?.state === 'current') return withNotes({ ok: true, server: { command: own.command, args: [], source: 'installed' } });
  if (own?.state === 'outdated' && own.canInstall) return withNotes({ ok: false, problem: NOT_INSTALLED, install: 'update' });
  if (own?.canInstall) return withNotes({ ok: false, problem: NOT_INSTALLED, install: 'offer' });
  const problem = notes.length ? `${notes.join('; ')}, and milk-lsp is not on PATH.` : 'The milk-lsp server was not found on PATH.';
  return withNotes({ ok: false, problem });
}

/** The notification shown when the server cannot be found or does not start. */
export function notFoundMessage(problem: string): string {
  return `milk: ${problem} ${INSTALL_HINT}`;
}

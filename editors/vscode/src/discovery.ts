// Finding the milk-lsp server: `milk.server.path`, else `milk.server.python -m milk_lsp`,
// else `milk-lsp` on PATH (and pipx's ~/.local/bin). No `vscode` import.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface ServerCommand {
  command: string;
  args: string[];
  /** where it came from, for the log */
  source: 'server.path' | 'server.python' | 'PATH';
}

export interface DiscoveryInput {
  serverPath?: string;
  python?: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  homedir?: string;
  /** injectable for tests */
  isExecutable?: (file: string) => boolean;
}

export type DiscoveryResult = { ok: true; server: ServerCommand } | { ok: false; problem: string };

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

function expandHome(p: string, home: string): string {
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

export function discoverServer(input: DiscoveryInput): DiscoveryResult {
  const env = input.env ?? process.env;
  const platform = input.platform ?? process.platform;
  const home = input.homedir ?? os.homedir();
  const isExecutable = input.isExecutable ?? defaultIsExecutable;

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
    if (isExecutable(p)) {
      return { ok: true, server: { command: p, args: ['-m', 'milk_lsp'], source: 'server.python' } };
    }
    return { ok: false, problem: `milk.server.python is set to "${python}", which is not an executable file.` };
  }

  const extra = platform === 'win32' ? [] : [path.join(home, '.local', 'bin')];
  const found = findOnPath('milk-lsp', env, platform, extra, isExecutable);
  if (found) return { ok: true, server: { command: found, args: [], source: 'PATH' } };
  return { ok: false, problem: 'The milk-lsp server was not found on PATH.' };
}

/** The notification shown when the server cannot be found or does not start. */
export function notFoundMessage(problem: string): string {
  return `milk: ${problem} ${INSTALL_HINT}`;
}

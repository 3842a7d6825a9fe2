// The extension's own milk-lsp: a virtual environment in the extension's global storage,
// made with the user's Python from the wheel the .vsix carries (dist/wheel, built from this
// repository by scripts/build.js --production). A marker in the venv names the wheel it was
// installed from, so an extension update (another wheel) reinstalls. No `vscode` import.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runProcess, type Runner } from './python';

export interface BundledWheel {
  file: string;
  /** the file name, e.g. milk_lsp-0.1.0-py3-none-any.whl */
  name: string;
  sha256: string;
}

/** Where the .vsix keeps the wheel, below the extension's folder. */
export const WHEEL_DIR = path.join('dist', 'wheel');

/** The milk-lsp wheel inside the extension, if this build carries one. */
export function findBundledWheel(extensionDir: string): BundledWheel | undefined {
  const dir = path.join(extensionDir, WHEEL_DIR);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => /^milk_lsp-[^-]+-.+\.whl$/.test(n));
  } catch {
    return undefined;
  }
  if (names.length !== 1) return undefined;
  const file = path.join(dir, names[0]);
  const sha256 = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  return { file, name: names[0], sha256 };
}

export interface OwnServerLayout {
  /** the venv */
  dir: string;
  python: string;
  milkLsp: string;
  /** names the wheel the venv holds; written last, so a broken install has none */
  marker: string;
}

export function ownServerLayout(storageDir: string, platform: NodeJS.Platform = process.platform): OwnServerLayout {
  const dir = path.join(storageDir, 'venv');
  const bin = path.join(dir, platform === 'win32' ? 'Scripts' : 'bin');
  const exe = platform === 'win32' ? '.exe' : '';
  return { dir, python: path.join(bin, `python${exe}`), milkLsp: path.join(bin, `milk-lsp${exe}`), marker: path.join(dir, 'milk-lsp-wheel.json') };
}

export interface InstalledMarker {
  wheel: string;
  sha256: string;
  python: string;
  installedAt: string;
}

export function readMarker(layout: OwnServerLayout): InstalledMarker | undefined {
  try {
    const m = JSON.parse(fs.readFileSync(layout.marker, 'utf8')) as Partial<InstalledMarker>;
    return typeof m.wheel === 'string' && typeof m.sha256 === 'string' ? (m as InstalledMarker) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `current`: the venv holds the bundled wheel (or this build carries none); `outdated`: it
 * holds another one (the extension was updated); `absent`: no finished install.
 */
export type OwnServerState = 'current' | 'outdated' | 'absent';

export function ownServerState(
  layout: OwnServerLayout,
  wheel: BundledWheel | undefined,
  isExecutable: (file: string) => boolean,
): OwnServerState {
  const marker = readMarker(layout);
  if (!marker || !isExecutable(layout.milkLsp)) return 'absent';
  if (!wheel) return 'current';
  return marker.wheel === wheel.name && marker.sha256 === wheel.sha256 ? 'current' : 'outdated';
}

export class InstallError extends Error {
  constructor(
    message: string,
    /** the last output lines, for the log and the notification */
    readonly tail: string[],
  ) {
    super(message);
  }
}

export interface InstallInput {
  python: string;
  wheel: BundledWheel;
  layout: OwnServerLayout;
  /** progress: milk's own steps and pip's output lines */
  onLine: (line: string) => void;
  run?: Runner;
  env?: NodeJS.ProcessEnv;
}

const VENV_TIMEOUT_MS = 180000;
/** pip fetches milk-lsp's dependencies from the user's configured indexes */
const PIP_TIMEOUT_MS = 20 * 60000;

/**
 * `<python> -m venv --clear <dir>`, `<venv python> -m pip install <wheel>`, then the marker.
 * Throws InstallError naming the step that failed.
 */
export async function installServer(input: InstallInput): Promise<InstalledMarker> {
  const { python, wheel, layout, onLine } = input;
  const run = input.run ?? runProcess;
  const tail: string[] = [];
  const line = (l: string) => {
    tail.push(l);
    if (tail.length > 20) tail.shift();
    onLine(l);
  };
  const step = async (what: string, command: string, args: string[], timeoutMs: number) => {
    const r = await run(command, args, { env: input.env, timeoutMs, onLine: line });
    if (r.code !== 0) {
      const why = r.error ?? `exit code ${r.code}`;
      throw new InstallError(`${what} failed (${why})${tail.length ? `: ${tail[tail.length - 1]}` : ''}`, [...tail]);
    }
  };
  fs.mkdirSync(path.dirname(layout.dir), { recursive: true });
  fs.rmSync(layout.marker, { force: true });
  onLine(`creating the Python environment ${layout.dir} with ${python}`);
  await step('creating the Python environment', python, ['-m', 'venv', '--clear', layout.dir], VENV_TIMEOUT_MS);
  onLine(`installing ${wheel.name}`);
  await step(
    `installing ${wheel.name}`,
    layout.python,
    ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--', wheel.file],
    PIP_TIMEOUT_MS,
  );
  const marker: InstalledMarker = { wheel: wheel.name, sha256: wheel.sha256, python, installedAt: new Date().toISOString() };
  fs.writeFileSync(layout.marker, `${JSON.stringify(marker, null, 2)}\n`);
  onLine(`installed ${wheel.name}`);
  return marker;
}

/** The extra of milk-lsp that carries the embedded engine (llama.cpp) and the model download. */
export const EMBEDDED_REQUIREMENT = 'milk-lsp[embedded]';

/**
 * `<venv python> -m pip install 'milk-lsp[embedded]'` in milk's own venv: milk-lsp is there
 * already (from the bundled wheel), so pip adds only the extra's packages. Throws InstallError.
 */
export async function installEmbeddedEngine(input: {
  layout: OwnServerLayout;
  onLine: (line: string) => void;
  run?: Runner;
  env?: NodeJS.ProcessEnv;
}): Promise<void> {
  const run = input.run ?? runProcess;
  const tail: string[] = [];
  const line = (l: string) => {
    tail.push(l);
    if (tail.length > 20) tail.shift();
    input.onLine(l);
  };
  const args = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', EMBEDDED_REQUIREMENT];
  input.onLine(`installing ${EMBEDDED_REQUIREMENT} with ${input.layout.python}`);
  const r = await run(input.layout.python, args, { env: input.env, timeoutMs: PIP_TIMEOUT_MS, onLine: line });
  if (r.code !== 0) {
    const why = r.error ?? `exit code ${r.code}`;
    throw new InstallError(`installing ${EMBEDDED_REQUIREMENT} failed (${why})${tail.length ? `: ${tail[tail.length - 1]}` : ''}`, [...tail]);
  }
  input.onLine(`installed ${EMBEDDED_REQUIREMENT}`);
}

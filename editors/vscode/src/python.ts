// The user's Python, for the extension's own milk-lsp: run a program without a shell, ask an
// interpreter its version (and whether it has milk_lsp), and pick the first good one of the
// candidates the caller lists (the setting, the Python extension's interpreter, PATH).
// No `vscode` import.

import * as cp from 'node:child_process';
import * as os from 'node:os';

/** milk-lsp's `requires-python` (pyproject.toml). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

export interface RunResult {
  /** the exit code; null when it did not run or was killed */
  code: number | null;
  stdout: string;
  stderr: string;
  /** why it did not run (spawn error, timeout) */
  error?: string;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** every output line (stdout and stderr; pip redraws lines with \r) as it comes */
  onLine?: (line: string) => void;
}

export type Runner = (command: string, args: string[], options?: RunOptions) => Promise<RunResult>;

/** Run `command args` (never through a shell) and collect its output. */
export const runProcess: Runner = (command, args, options = {}) =>
  new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let error: string | undefined;
    let child: cp.ChildProcess;
    try {
      child = cp.spawn(command, args, {
        cwd: options.cwd ?? os.tmpdir(),
        env: options.env ?? process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
      });
    } catch (err) {
      resolve({ code: null, stdout, stderr, error: String((err as Error)?.message ?? err) });
      return;
    }
    const lineSplitter = () => {
      let partial = '';
      return (chunk: string, flush = false) => {
        partial += chunk;
        const parts = partial.split(/\r\n|\r|\n/);
        partial = flush ? '' : (parts.pop() ?? '');
        for (const l of parts) if (l.trim()) options.onLine?.(l);
      };
    };
    const outLines = lineSplitter();
    const errLines = lineSplitter();
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      outLines(d);
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      errLines(d);
    });
    const timer = options.timeoutMs
      ? setTimeout(() => {
          error = `timed out after ${Math.round(options.timeoutMs! / 1000)} s`;
          child.kill();
        }, options.timeoutMs)
      : undefined;
    child.on('error', (err) => {
      error ??= err.message;
    });
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      outLines('\n', true);
      errLines('\n', true);
      resolve({ code: error ? null : code, stdout, stderr, error });
    });
  });

/** Prints e.g. `(3, 12) True`: the version, and whether `import milk_lsp` would work. */
export const PROBE_CODE = "import sys, importlib.util; print(tuple(sys.version_info[:2]), importlib.util.find_spec('milk_lsp') is not None)";

export type PythonProbe =
  | { ok: true; python: string; version: [number, number]; hasMilkLsp: boolean }
  | { ok: false; python: string; problem: string };

export async function probePython(python: string, run: Runner = runProcess): Promise<PythonProbe> {
  const r = await run(python, ['-c', PROBE_CODE], { timeoutMs: 20000 });
  const m = /\((\d+), (\d+)\)\s+(True|False)/.exec(r.stdout);
  if (r.code === 0 && m) return { ok: true, python, version: [Number(m[1]), Number(m[2])], hasMilkLsp: m[3] === 'True' };
  if (r.error) return { ok: false, python, problem: `${python} does not run (${r.error})` };
  const said = (r.stderr || r.stdout).trim().split(/\r?\n/).pop() ?? '';
  return { ok: false, python, problem: `${python} did not say its version${said ? ` (${said.slice(0, 160)})` : ''}` };
}

export function isRecentEnough(version: readonly [number, number]): boolean {
  return version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]);
}

export interface PythonCandidate {
  /** a path, or a name to find on PATH (already resolved by the caller) */
  python: string;
  /** where it came from, in words: "milk.server.python", "the Python extension", "PATH" */
  from: string;
  /** the user named this one (milk.server.python): no other is tried in its place */
  explicit?: boolean;
}

export type PythonChoice =
  | { ok: true; python: string; version: [number, number]; from: string }
  /** `findings`: what each candidate was (too old, did not run); empty when there was none */
  | { ok: false; message: string; findings: string[] };

const MIN_TEXT = `Python ${MIN_PYTHON.join('.')} or newer`;

/** The one message for a missing or too-old Python: what was found, what to install. */
export function pythonMessage(findings: string[]): string {
  const found = findings.length ? ` (${findings.join('; ')})` : ' and found none';
  return (
    `milk: installing the milk-lsp server needs ${MIN_TEXT}${found}. ` +
    `Install ${MIN_TEXT} (from python.org or your system's package manager) and run "milk: Reinstall Server", ` +
    'or set milk.server.python to one.'
  );
}

/**
 * The first message when no server was found and no usable Python either: said before any
 * Install button (which could only fail), with what was found and what to do.
 */
export function needPythonMessage(findings: string[]): string {
  const found = findings.length ? findings.join('; ') : 'none found on PATH';
  return (
    `milk needs ${MIN_TEXT}: ${found}. milk installs its milk-lsp server with it. ` +
    `Install ${MIN_TEXT} (from python.org or your system's package manager) and run "milk: Reinstall Server", ` +
    'or set milk.server.python to one.'
  );
}

/**
 * The first candidate that runs and is recent enough. A candidate the user named
 * (`explicit`) that fails ends the search: milk does not quietly use another Python.
 */
export async function choosePython(
  candidates: PythonCandidate[],
  probe: (python: string) => Promise<PythonProbe> = (p) => probePython(p),
): Promise<PythonChoice> {
  const findings: string[] = [];
  const seen = new Set<string>();
  for (const c of candidates) {
    if (seen.has(c.python)) continue;
    seen.add(c.python);
    const p = await probe(c.python);
    if (p.ok && isRecentEnough(p.version)) return { ok: true, python: c.python, version: p.version, from: c.from };
    findings.push(p.ok ? `${c.from}: ${c.python} is Python ${p.version.join('.')}` : `${c.from}: ${p.problem}`);
    if (c.explicit) break;
  }
  return { ok: false, message: pythonMessage(findings), findings };
}

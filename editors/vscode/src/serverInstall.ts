// The VS Code side of the extension's own milk-lsp (install.ts, python.ts): the "Install
// milk-lsp" offer, the user's Python (milk.server.python, the Python extension's interpreter,
// PATH), the one message when that Python is missing or too old, and the install's progress.

import * as os from 'node:os';
import * as vscode from 'vscode';
import { defaultIsExecutable, expandHome, findOnPath, INSTALL_HINT, type OwnServer } from './discovery';
import {
  EMBEDDED_REQUIREMENT,
  findBundledWheel,
  InstallError,
  installEmbeddedEngine,
  installServer,
  ownServerLayout,
  ownServerState,
  type BundledWheel,
  type OwnServerLayout,
} from './install';
import { choosePython, MIN_PYTHON, needPythonMessage, probePython, runProcess, type PythonCandidate, type PythonChoice, type Runner } from './python';

/** `installed`; `no-python` / `no-wheel`: nothing was touched; `failed`: pip or venv failed. */
export type InstallOutcome = 'installed' | 'no-python' | 'no-wheel' | 'failed';
export type InstallReason = 'install' | 'update' | 'reinstall';

export const INSTALL_LABEL = 'Install milk-lsp';
export const SET_PYTHON_LABEL = 'Set milk.server.python';
export const INSTALL_EMBEDDED_LABEL = 'Install the embedded engine';

/** The parts of the Python extension's API milk reads (ms-python.python, `environments`). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment?(env: { path: string }): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
}

/** The Python extension's active interpreter for the workspace, when it is installed. */
async function pythonExtensionInterpreter(log: vscode.LogOutputChannel): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!ext) return undefined;
  try {
    const activated = ext.isActive ? Promise.resolve(ext.exports) : ext.activate();
    const api = await Promise.race([activated, new Promise<undefined>((r) => setTimeout(() => r(undefined), 15000))]);
    const envs = api?.environments;
    const active = envs?.getActiveEnvironmentPath?.(vscode.workspace.workspaceFolders?.[0]?.uri);
    if (!active) return undefined;
    const resolved = await envs?.resolveEnvironment?.(active);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  } catch (err) {
    log.warn(`the Python extension did not say its interpreter: ${String((err as Error)?.message ?? err)}`);
    return undefined;
  }
}

export class ServerInstaller {
  readonly layout: OwnServerLayout;
  private wheelCache: BundledWheel | undefined | null = null;
  private running: Promise<InstallOutcome> | undefined;
  private embeddedRunning: Promise<boolean> | undefined;
  /** why the last offer found no usable Python (the status bar and the chat say it) */
  pythonProblem: string | undefined;

  constructor(
    private readonly extensionPath: string,
    globalStoragePath: string,
    private readonly output: vscode.LogOutputChannel,
    private readonly openSettings: (query: string) => Promise<void>,
    /** runs python and pip (a stand-in in the tests) */
    private readonly run: Runner = runProcess,
  ) {
    this.layout = ownServerLayout(globalStoragePath);
  }

  /** The wheel the .vsix carries (read once: it changes only with the extension). */
  get wheel(): BundledWheel | undefined {
    if (this.wheelCache === null) this.wheelCache = findBundledWheel(this.extensionPath);
    return this.wheelCache;
  }

  ownServer(): OwnServer {
    const wheel = this.wheel;
    return { command: this.layout.milkLsp, state: ownServerState(this.layout, wheel, defaultIsExecutable), canInstall: !!wheel };
  }

  /**
   * The offer, when no server was found; undefined when the user did not take it. The Python
   * it needs is looked for first: without one the first message says so (an Install button
   * would only fail after the click), with the way to set one.
   */
  async offer(beforeInstall?: () => Promise<void>): Promise<InstallOutcome | undefined> {
    this.pythonProblem = undefined;
    if (this.wheel) {
      const choice = await this.choosePython();
      if (!choice.ok) {
        const message = needPythonMessage(choice.findings);
        this.pythonProblem = message;
        this.output.warn(message);
        // not awaited: the status bar and the chat say it while the notification is open
        void vscode.window.showErrorMessage(message, SET_PYTHON_LABEL, 'Open Settings').then((pick) => {
          if (pick === SET_PYTHON_LABEL) void this.openSettings('milk.server.python');
          if (pick === 'Open Settings') void this.openSettings('milk.server.path');
        });
        return 'no-python';
      }
    }
    const pick = await vscode.window.showInformationMessage(
      'milk: the milk-lsp server is not installed. Install it? milk puts the copy this extension carries into a Python ' +
        `environment of its own (it needs Python ${MIN_PYTHON.join('.')} or newer).`,
      INSTALL_LABEL,
      'Open Settings',
    );
    if (pick === 'Open Settings') await this.openSettings('milk.server.path');
    if (pick !== INSTALL_LABEL) return undefined;
    return this.install('install', beforeInstall);
  }

  /** One install at a time; `beforeInstall` runs once the Python is known to be good. */
  install(why: InstallReason, beforeInstall?: () => Promise<void>): Promise<InstallOutcome> {
    this.running ??= this.doInstall(why, beforeInstall).finally(() => (this.running = undefined));
    return this.running;
  }

  private async doInstall(why: InstallReason, beforeInstall?: () => Promise<void>): Promise<InstallOutcome> {
    const wheel = this.wheel;
    if (!wheel) {
      void vscode.window.showErrorMessage(`milk: this build of the extension carries no milk-lsp to install. ${INSTALL_HINT}`);
      return 'no-wheel';
    }
    const choice = await this.choosePython();
    if (!choice.ok) {
      this.output.warn(choice.message);
      void vscode.window.showErrorMessage(choice.message, SET_PYTHON_LABEL).then((pick) => {
        if (pick) void this.openSettings('milk.server.python');
      });
      return 'no-python';
    }
    this.output.info(`${why}: milk-lsp from ${wheel.name} with Python ${choice.version.join('.')} (${choice.python}, from ${choice.from})`);
    await beforeInstall?.();
    const title = why === 'update' ? 'milk: updating the milk-lsp server' : 'milk: installing the milk-lsp server';
    const ok = await this.withInstallProgress(title, 'milk-lsp', 'the milk-lsp server', (onLine) =>
      installServer({ python: choice.python, wheel, layout: this.layout, run: this.run, onLine }),
    );
    if (!ok) return 'failed';
    vscode.window.setStatusBarMessage('milk: milk-lsp installed', 5000);
    return 'installed';
  }

  /**
   * Run an install step with its output in the log and its last line in a progress
   * notification; false (the user told, with the log one click away) when it failed.
   * `logged` and `shown` name what was installed in the log and in the message.
   */
  private async withInstallProgress(
    title: string,
    logged: string,
    shown: string,
    job: (onLine: (line: string) => void) => Promise<unknown>,
  ): Promise<boolean> {
    try {
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: false }, (progress) =>
        job((line) => {
          this.output.info(`[install] ${line}`);
          progress.report({ message: line.length > 120 ? `${line.slice(0, 119)}…` : line });
        }),
      );
      return true;
    } catch (err) {
      const message = err instanceof InstallError ? err.message : String((err as Error)?.message ?? err);
      this.output.error(`installing ${logged} failed: ${message}`);
      void vscode.window.showErrorMessage(`milk: installing ${shown} failed: ${message}`, 'Show Server Log').then((pick) => {
        if (pick) this.output.show();
      });
      return false;
    }
  }

  private async choosePython(): Promise<PythonChoice> {
    return choosePython(await this.pythonCandidates(), (p) => probePython(p, this.run));
  }

  /**
   * The embedded engine into milk's own venv: `<venv python> -m pip install
   * 'milk-lsp[embedded]'`, with its progress. True when pip succeeded.
   */
  installEmbedded(): Promise<boolean> {
    this.embeddedRunning ??= this.doInstallEmbedded().finally(() => (this.embeddedRunning = undefined));
    return this.embeddedRunning;
  }

  private async doInstallEmbedded(): Promise<boolean> {
    this.output.info(`installing ${EMBEDDED_REQUIREMENT} into milk's own server environment (${this.layout.dir})`);
    const ok = await this.withInstallProgress(
      'milk: installing the embedded engine',
      'the embedded engine',
      'the embedded engine',
      (onLine) => installEmbeddedEngine({ layout: this.layout, run: this.run, onLine }),
    );
    if (!ok) return false;
    vscode.window.setStatusBarMessage('milk: the embedded engine is installed', 5000);
    return true;
  }

  /**
   * milk's own server says the embedded engine is missing: the message names the engine and
   * offers to install it into that server's venv. True when it was installed (the caller
   * restarts the server).
   */
  async offerEmbeddedEngine(message: string): Promise<boolean> {
    const pick = await vscode.window.showWarningMessage(message, INSTALL_EMBEDDED_LABEL, 'Open Settings');
    if (pick === 'Open Settings') await this.openSettings('milk.local.provider');
    if (pick !== INSTALL_EMBEDDED_LABEL) return false;
    return this.installEmbedded();
  }

  /** milk.server.python alone when set; else the Python extension's, then PATH's. */
  private async pythonCandidates(): Promise<PythonCandidate[]> {
    const find = (name: string) => findOnPath(name, process.env, process.platform, [], defaultIsExecutable);
    const set = vscode.workspace.getConfiguration('milk').get<string>('server.python')?.trim();
    if (set) {
      const p = expandHome(set, os.homedir());
      const named = !p.includes('/') && !p.includes('\\');
      return [{ python: (named && find(p)) || p, from: 'milk.server.python', explicit: true }];
    }
    const candidates: PythonCandidate[] = [];
    const fromExtension = await pythonExtensionInterpreter(this.output);
    if (fromExtension) candidates.push({ python: fromExtension, from: 'the Python extension' });
    for (const name of ['python3', 'python']) {
      const p = find(name);
      if (p) candidates.push({ python: p, from: 'PATH' });
    }
    return candidates;
  }
}

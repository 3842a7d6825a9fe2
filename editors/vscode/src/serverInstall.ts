// The VS Code side of the extension's own milk-lsp (install.ts, python.ts): the "Install
// milk-lsp" offer, the user's Python (milk.server.python, the Python extension's interpreter,
// PATH), the one message when that Python is missing or too old, and the install's progress.

import * as os from 'node:os';
import * as vscode from 'vscode';
import { defaultIsExecutable, expandHome, findOnPath, INSTALL_HINT, type OwnServer } from './discovery';
import { findBundledWheel, InstallError, installServer, ownServerLayout, ownServerState, type BundledWheel, type OwnServerLayout } from './install';
import { choosePython, MIN_PYTHON, type PythonCandidate } from './python';

/** `installed`; `no-python` / `no-wheel`: nothing was touched; `failed`: pip or venv failed. */
export type InstallOutcome = 'installed' | 'no-python' | 'no-wheel' | 'failed';
export type InstallReason = 'install' | 'update' | 'reinstall';

export const INSTALL_LABEL = 'Install milk-lsp';
export const SET_PYTHON_LABEL = 'Set milk.server.python';

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

  constructor(
    private readonly extensionPath: string,
    globalStoragePath: string,
    private readonly output: vscode.LogOutputChannel,
    private readonly openSettings: (query: string) => Promise<void>,
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

  /** The offer, when no server was found; undefined when the user did not take it. */
  async offer(beforeInstall?: () => Promise<void>): Promise<InstallOutcome | undefined> {
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
    const choice = await choosePython(await this.pythonCandidates());
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
    try {
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: false }, (progress) =>
        installServer({
          python: choice.python,
          wheel,
          layout: this.layout,
          onLine: (line) => {
            this.output.info(`[install] ${line}`);
            progress.report({ message: line.length > 120 ? `${line.slice(0, 119)}…` : line });
          },
        }),
      );
    } catch (err) {
      const message = err instanceof InstallError ? err.message : String((err as Error)?.message ?? err);
      this.output.error(`installing milk-lsp failed: ${message}`);
      void vscode.window.showErrorMessage(`milk: installing the milk-lsp server failed: ${message}`, 'Show Server Log').then((pick) => {
        if (pick) this.output.show();
      });
      return 'failed';
    }
    vscode.window.setStatusBarMessage('milk: milk-lsp installed', 5000);
    return 'installed';
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

// The VS Code side: starts milk-lsp through vscode-languageclient, hosts the chat webview,
// the commands, the status bar item and the permission prompt. The logic lives in the
// vscode-free modules next to this file; this one only wires them to the VS Code API.

import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, State, type LanguageClient } from 'vscode-languageclient/node';
import { insertAnswerCode, openAnswerFile } from './answerActions';
import { ChatFolder } from './chatFolder';
import { ChatViewProvider, VIEW_ID } from './chatView';
import { changesText, errorActions, errorSetting, relativeTime, sessionDescription, sessionTitle } from './chatModel';
import { buildServerSettings, classifyChange, CLIENT_SETTING_KEYS, MACHINE_PATH_KEYS, SERVER_SETTING_KEYS } from './config';
import { ChatController, describeError, modelServerSeen } from './controller';
import { discoverServer, notFoundMessage, type DiscoveryResult, type ServerCommand } from './discovery';
import { DoctorView } from './doctorView';
import { createMilkClient } from './languageClient';
import {
  Methods,
  type ContextItem,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type TurnResult,
} from './methods';
import { displayPath } from './paths';
import { permissionAnswer, permissionPrompt, REVIEW_LABEL, STOP_LABEL } from './permission';
import { DiffReview, DOC_SCHEME, ReadOnlyDocs } from './review';
import { ServerInstaller } from './serverInstall';
import { doctorReport, embeddedEngineMissing, embeddedEngineOffer, statusBarView } from './statusModel';
import type { FromWebview } from './viewMessages';

/** how often the status is re-read while the local model is unreachable (it may come back) */
const UNREACHABLE_RECHECK_MS = 10000;
/** the status bar tooltip while milk installs its own server */
const INSTALLING = 'Installing the milk-lsp server (progress in the notification)…';
/** reasons in a turn's error after which the status (model / claude reachable) is re-read */
const STATUS_REASONS = new Set(['local_unreachable', 'claude_not_found', 'claude_not_logged_in', 'local_failed']);

let ext: MilkExtension | undefined;

function settingGetter(): (key: string) => unknown {
  const cfg = vscode.workspace.getConfiguration('milk');
  return (key: string) => cfg.get(key);
}

export class MilkExtension implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly controller: ChatController;
  readonly chatView: ChatViewProvider;
  readonly statusItem: vscode.StatusBarItem;
  readonly docs = new ReadOnlyDocs();
  /** the folder the chat works on (a multi-root window: the one the user picked) */
  readonly folder: ChatFolder;
  readonly doctorView: DoctorView;
  readonly review: DiffReview;
  readonly installer: ServerInstaller;
  client: LanguageClient | undefined;
  serverCommand: ServerCommand | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private starting: Promise<void> | undefined;
  private restarts: number[] = [];
  /** re-reads the status while the local model is unreachable */
  private recheck: ReturnType<typeof setInterval> | undefined;
  /** the offer to install the embedded engine was made (once per server start) */
  private embeddedOffered = false;
  /** the chat's folder the chat shows (a change of the window's folders may move it) */
  private shownFolder: string | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('milk', { log: true });
    this.folder = new ChatFolder(
      () => (vscode.workspace.workspaceFolders ?? []).map((f) => ({ uri: f.uri.toString(), name: f.name })),
      context.workspaceState,
    );
    this.shownFolder = this.folder.uri();
    this.chatView = new ChatViewProvider(context.extensionUri, (m) => void this.onWebviewMessage(m));
    this.controller = new ChatController({
      post: (m) => this.chatView.post(m),
      workspaceFolder: () => this.folder.uri(),
      folderLabel: () => this.folder.label(),
      onBusyChanged: () => this.updateStatusBar(),
      onTurnResult: (r) => this.onTurnResult(r),
      onRouteChanged: () => this.updateStatusBar(),
      onUpdate: (u) => {
        // milk handed the turn to Claude because the local part failed: if the model server
        // is down, the status bar says so now, not after Claude's answer
        if (u.kind === 'escalated' && u.by === 'fallback' && !this.controller.localDown) void this.refreshStatus();
      },
      log: (l) => this.output.info(l),
    });
    this.doctorView = new DoctorView((l) => this.output.info(l));
    this.review = new DiffReview(this.docs, () => this.folder.uri(), (l) => this.output.info(l));
    this.installer = new ServerInstaller(context.extensionUri.fsPath, context.globalStorageUri.fsPath, this.output, (q) => this.openSettings(q));
    this.statusItem = vscode.window.createStatusBarItem('milk.status', vscode.StatusBarAlignment.Right, 100);
    this.statusItem.name = 'milk';
    this.statusItem.command = 'milk.openChat';
    this.controller.setRouteSetting(vscode.workspace.getConfiguration('milk').get<string>('route'));
    this.updateStatusBar();
    this.statusItem.show();

    this.disposables.push(
      this.output,
      this.statusItem,
      vscode.window.registerWebviewViewProvider(VIEW_ID, this.chatView, { webviewOptions: { retainContextWhenHidden: true } }),
      vscode.workspace.registerTextDocumentContentProvider(DOC_SCHEME, this.docs),
      this.doctorView.register(),
      vscode.workspace.onDidChangeConfiguration((e) => void this.onConfigurationChanged(e)),
      vscode.workspace.onDidChangeWorkspaceFolders(() => void this.foldersChanged()),
      this.review,
      ...this.registerCommands(),
    );
    if (vscode.env.remoteName) this.output.info(`remote window (${vscode.env.remoteName}): milk-lsp runs on the remote machine`);
    this.warnIgnoredSettings();
  }

  /**
   * VS Code ignores a workspace's values of the settings that name programs and folders until
   * the workspace is trusted (package.json restrictedConfigurations): say so instead of
   * silently running with the User values.
   */
  private warnIgnoredSettings(): void {
    if (vscode.workspace.isTrusted !== false) return;
    const cfg = vscode.workspace.getConfiguration('milk');
    const ignored = MACHINE_PATH_KEYS.filter((k) => {
      const i = cfg.inspect(k);
      return i?.workspaceValue !== undefined || i?.workspaceFolderValue !== undefined;
    }).map((k) => `milk.${k}`);
    if (!ignored.length) return;
    this.output.warn(`untrusted workspace: its values of ${ignored.join(', ')} are ignored`);
    void vscode.window
      .showWarningMessage(
        `milk: this workspace sets ${ignored.join(', ')}; VS Code ignores it until you trust the workspace (your User settings apply).`,
        'Manage Workspace Trust',
      )
      .then((pick) => {
        if (pick) void vscode.commands.executeCommand('workbench.trust.manage');
      });
  }

  // ---- server lifecycle -----------------------------------------------------------------

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private discover(): Promise<DiscoveryResult> {
    const cfg = vscode.workspace.getConfiguration('milk');
    return discoverServer({
      serverPath: cfg.get<string>('server.path'),
      python: cfg.get<string>('server.python'),
      ownServer: this.installer.ownServer(),
    });
  }

  private async doStart(): Promise<void> {
    this.serverCommand = undefined;
    this.embeddedOffered = false;
    this.controller.setServerState('starting');
    this.updateStatusBar();
    let found = await this.discover();
    for (const note of found.notes ?? []) this.output.info(`${note}: looking further`);
    if (!found.ok && found.install === 'update') {
      // an extension update carries another wheel: the user installed milk's own before
      this.output.info(`the extension carries ${this.installer.wheel?.name}: reinstalling its own milk-lsp`);
      this.installing();
      if ((await this.installer.install('update')) === 'installed') found = await this.discover();
    }
    if (!found.ok) {
      if (found.install) this.serverNotInstalled(found.problem);
      else this.serverFailed(found.problem);
      return;
    }
    this.serverCommand = found.server;
    this.updateStatusBar();
    this.output.info(`starting ${[found.server.command, ...found.server.args].join(' ')} (from ${found.server.source})`);

    const client = createMilkClient(found.server, {
      output: this.output,
      settings: () => buildServerSettings(settingGetter()),
      closed: () => {
        const now = Date.now();
        this.restarts = this.restarts.filter((t) => now - t < 180000);
        this.restarts.push(now);
        if (this.restarts.length <= 3 && this.client?.state === State.Running) {
          this.output.warn('milk-lsp exited; restarting it');
          return true;
        }
        this.serverFailed('The milk-lsp server stopped.');
        return false;
      },
    });
    client.onRequest(Methods.REQUEST_PERMISSION, (p: RequestPermissionParams, token: vscode.CancellationToken) =>
      this.askPermission(p, token),
    );
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        this.controller.attach(client);
        this.controller.setServerState('running');
        void this.refreshStatus();
        void this.refreshStats();
        void this.controller.showActive();
      } else if (e.newState === State.Stopped && this.client === client) {
        this.controller.attach(undefined);
        if (this.controller.serverState !== 'failed') this.controller.setServerState('stopped');
      }
      this.updateStatusBar();
    });
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      this.output.error(`milk-lsp did not start: ${describeError(err).message}`);
      this.serverFailed(`The milk-lsp server did not start (${describeError(err).message}); see the "milk" output.`);
    }
  }

  private serverFailed(problem: string): void {
    const first = this.controller.serverState !== 'failed';
    this.controller.setServerState('failed', problem);
    this.updateStatusBar();
    if (!first) return;
    const remote = vscode.env.remoteName
      ? ` This is a remote window (${vscode.env.remoteName}): milk-lsp must be installed on the remote machine, and a path must exist there (set one that differs from your own computer's under Remote settings).`
      : '';
    const setting = /milk\.server\.python/.test(problem) ? 'milk.server.python' : 'milk.server.path';
    // milk's own install that does not start: reinstalling it is the way out
    const text = this.serverCommand?.source === 'installed' ? `milk: ${problem} Run "milk: Reinstall Server".` : notFoundMessage(problem);
    void vscode.window.showErrorMessage(`${text}${remote}`, 'Open Settings', 'Show Log').then((pick) => {
      if (pick === 'Open Settings') void this.openSettings(setting);
      if (pick === 'Show Log') this.output.show();
    });
  }

  /** No server anywhere: offer to install the extension's own (the wheel it carries). */
  private serverNotInstalled(problem: string): void {
    this.controller.setServerState('failed', problem);
    this.updateStatusBar();
    this.output.info('no milk-lsp found (milk.server.path, milk.server.python, PATH, its own install): offering to install it');
    void this.installer.offer(async () => this.installing()).then((outcome) => {
      if (outcome === 'installed') return this.restart();
      if (outcome === 'failed') this.installFailed();
      if (outcome === 'no-python' && this.installer.pythonProblem) {
        this.controller.setServerState('failed', this.installer.pythonProblem);
        this.updateStatusBar();
      }
      return undefined;
    });
  }

  /** While pip runs: the status bar says so. */
  private installing(): void {
    this.controller.setServerState('starting', INSTALLING);
    this.updateStatusBar();
  }

  private installFailed(): void {
    this.controller.setServerState('failed', 'Installing the milk-lsp server failed; see "milk: Show Server Log".');
    this.updateStatusBar();
  }

  /** milk: Reinstall Server: milk's own milk-lsp afresh from the wheel, then a restart. */
  private async reinstall(): Promise<void> {
    let stopped = false;
    const outcome = await this.installer.install('reinstall', async () => {
      await this.stop();
      stopped = true;
      this.installing();
    });
    if (outcome === 'installed') {
      await this.restart();
      const cmd = this.serverCommand;
      if (cmd && cmd.source !== 'installed') {
        void vscode.window.showInformationMessage(
          `milk: reinstalled its own milk-lsp; the server in use is still ${cmd.command} (from ${cmd.source}), which comes first.`,
        );
      }
    } else if (stopped) {
      this.installFailed();
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.controller.attach(undefined);
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.warn(`stopping milk-lsp: ${describeError(err).message}`);
      }
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    this.restarts = [];
    await this.start();
  }

  private async onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    const what = classifyChange((k) => e.affectsConfiguration(k));
    if (what === 'none') return;
    const route = vscode.workspace.getConfiguration('milk').get<string>('route');
    this.output.info(`settings changed (${what}); milk.route is ${route ?? 'unset'}`);
    this.controller.setRouteSetting(route);
    if (what === 'restart') {
      this.output.info('milk.server.* changed: restarting milk-lsp');
      await this.restart();
      return;
    }
    const client = this.client;
    if (!client || client.state !== State.Running) return;
    // the server pulls section `milk` (answered by the middleware) on this notification
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { milk: buildServerSettings(settingGetter()) },
    });
    setTimeout(() => void this.refreshStatus(), 500);
  }

  async refreshStatus(): Promise<void> {
    try {
      await this.controller.status();
    } catch (err) {
      this.output.warn(`milk/status failed: ${describeError(err).message}`);
    }
    this.updateStatusBar();
    this.offerEmbeddedEngine();
  }

  /**
   * milk's own server (its venv) without the embedded engine that `milk.local.provider`
   * wants: offer to install it there (pip in that venv), then restart. Once per start.
   */
  private offerEmbeddedEngine(): void {
    const s = this.controller.lastStatus;
    if (this.embeddedOffered || this.serverCommand?.source !== 'installed' || !embeddedEngineMissing(s) || !s) return;
    this.embeddedOffered = true;
    void this.installer.offerEmbeddedEngine(embeddedEngineOffer(s)).then(async (installed) => {
      if (installed) await this.restart();
    });
  }

  /** The routing numbers in the status bar tooltip (when the server has `milk/stats`). */
  async refreshStats(): Promise<void> {
    await this.controller.stats();
    this.updateStatusBar();
  }

  /** The Settings editor on one setting (`@id:`, so no other setting that merely matches
   * the words is listed), or filtered by a group (`milk.local`). */
  async openSettings(query: string): Promise<void> {
    const known = [...SERVER_SETTING_KEYS, ...CLIENT_SETTING_KEYS].some((k) => `milk.${k}` === query);
    await vscode.commands.executeCommand('workbench.action.openSettings', known ? `@id:${query}` : query);
  }

  updateStatusBar(): void {
    const v = statusBarView({
      serverState: this.controller.serverState,
      busy: this.controller.busy(),
      status: this.controller.lastStatus,
      problem: this.controller.problem,
      nextRoute: this.controller.shownRoute,
      routeOverride: this.controller.routeOverride,
      stats: this.controller.statsText,
      localDown: this.controller.localDown,
    });
    this.statusItem.text = v.text;
    this.statusItem.tooltip = v.tooltip;
    this.statusItem.backgroundColor = v.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.scheduleRecheck();
  }

  /** While the model is unreachable, look again now and then: "model unreachable" must not
   * outlive the outage (a settings change was the only way out). */
  private scheduleRecheck(): void {
    const unreachable =
      this.controller.serverState === 'running' && (this.controller.lastStatus?.local.reachable === false || !!this.controller.localDown);
    if (unreachable && !this.recheck) {
      this.recheck = setInterval(() => {
        if (!this.controller.busy()) void this.refreshStatus();
      }, UNREACHABLE_RECHECK_MS);
    } else if (!unreachable && this.recheck) {
      clearInterval(this.recheck);
      this.recheck = undefined;
    }
  }

  private onTurnResult(r: TurnResult): void {
    void this.refreshStats();
    const last = this.controller.lastStatus;
    const stale = !!last && (!last.local.reachable || !!last.local.error);
    // a failure that may be the model's or claude's, or a local turn that worked while the
    // status said the model had a problem: read the status again
    if (
      (r.error && STATUS_REASONS.has(r.error.reason)) ||
      modelServerSeen(r) === 'down' ||
      (stale && r.stopReason === 'end_turn' && r.agent === 'local')
    ) {
      void this.refreshStatus();
    }
    // the chat shows the error card; only a hidden chat gets a notification (once, with its actions)
    if (r.stopReason === 'error' && r.error && !this.chatView.view?.visible) {
      const e = r.error;
      const labels: Record<string, string> = { openSettings: 'Open Settings', doctor: 'Doctor', showLog: 'Show Log' };
      const actions = errorActions(e.reason, e.data?.signal ?? undefined).filter((a) => a in labels);
      void vscode.window.showErrorMessage(`milk: ${e.message}`, 'Open Chat', ...actions.map((a) => labels[a])).then((pick) => {
        if (pick === 'Open Chat') void this.chatView.reveal();
        const action = actions.find((a) => labels[a] === pick);
        if (action) void this.errorAction(action, e.reason, e.message);
      });
    }
  }

  private async errorAction(action: string, reason: string, message: string, retry?: { text?: string }): Promise<void> {
    switch (action) {
      case 'openSettings':
        return this.openSettings(errorSetting(reason, message));
      case 'doctor':
        await vscode.commands.executeCommand('milk.doctor');
        return;
      case 'showLog':
        this.output.show();
        return;
      case 'retry':
        if (retry?.text) await this.controller.send(retry.text);
        else await this.controller.escalate();
        return;
    }
  }

  // ---- permission -----------------------------------------------------------------------

  async askPermission(p: RequestPermissionParams, token: vscode.CancellationToken): Promise<RequestPermissionResult> {
    const prompt = permissionPrompt(p, { workspaceFolder: this.folder.uri() });
    this.output.info(`permission asked: ${p.tool} ${JSON.stringify(p.input).slice(0, 2000)}${p.edits?.length ? ` (edits ${p.edits.map((e) => e.uri).join(', ')})` : ''}`);
    // the hand-off question of a local part that found the model server down: warn now
    if (this.controller.noteQuestion(p)) this.updateStatusBar();
    const cancelled = new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined)));
    if (p.sessionId === this.controller.activeSessionId) this.chatView.post({ type: 'asking', turnId: p.turnId, toolCallId: p.toolCallId });
    let answer: RequestPermissionResult | undefined;
    // the close button is VS Code's close affordance (Escape, ×): no extra Cancel button
    const items: vscode.MessageItem[] = [...prompt.labels.map((title) => ({ title })), { title: prompt.close, isCloseAffordance: true }];
    try {
      while (!answer) {
        const item = await Promise.race([
          vscode.window.showWarningMessage(prompt.message, { modal: true, detail: prompt.detail }, ...items),
          cancelled,
        ]);
        const clicked = item?.title;
        if (clicked === STOP_LABEL && !token.isCancellationRequested) {
          // deny, and stop the turn (the server cancels it; the answer is moot then)
          void this.controller.cancelSession(p.sessionId).catch((err) => this.output.warn(`cancel: ${describeError(err).message}`));
        }
        if (clicked === REVIEW_LABEL && !token.isCancellationRequested) {
          const choice = await this.review.reviewEdits(p, token);
          // every diff closed without an answer: ask again
          if (choice) answer = { optionId: choice };
          continue;
        }
        answer = permissionAnswer(p, clicked);
      }
    } finally {
      if (p.sessionId === this.controller.activeSessionId) this.chatView.post({ type: 'asking', turnId: p.turnId });
    }
    this.output.info(`permission answer: ${answer.optionId}${token.isCancellationRequested ? ' (request cancelled)' : ''}`);
    return answer;
  }

  // ---- review and undo ---------------------------------------------------------------------

  /** The chat's "Review": the files the turn changed, in the diff editor. */
  async reviewTurn(turnId: string): Promise<void> {
    const r = await this.controller.turnChanges(turnId);
    if (!r.changes.length) {
      void vscode.window.showInformationMessage('milk: this turn changed no files.');
      return;
    }
    await this.review.openChanges(r.changes, { undone: !!r.undone });
  }

  /** Undo a turn's changes; a conflict (a file changed since) is offered "Undo anyway". */
  async undoTurn(turnId: string): Promise<string[] | undefined> {
    const ws = this.folder.uri();
    const names = (uris: string[]) => uris.map((u) => displayPath(u, ws)).join(', ');
    const done = (restored: string[]) => {
      void this.review.closeChanges().catch((err) => this.output.warn(`closing the turn's diff: ${describeError(err).message}`));
      void vscode.window.showInformationMessage(
        restored.length ? `milk: undone; restored ${names(restored)}.` : 'milk: nothing to undo (already undone).',
      );
      return restored;
    };
    try {
      return done((await this.controller.undoTurn(turnId)).restored);
    } catch (err) {
      const f = describeError(err);
      switch (f.reason) {
        case 'undo_conflict': {
          const files = f.files?.length ? names(f.files) : 'some files';
          const pick = await vscode.window.showWarningMessage(
            `milk: ${files} changed after this turn. Undo anyway puts back the files as they were before the turn; the later changes to them are lost.`,
            'Undo anyway',
          );
          if (pick !== 'Undo anyway') return undefined;
          return done((await this.controller.undoTurn(turnId, { force: true })).restored);
        }
        case 'session_busy':
          void vscode.window.showWarningMessage('milk: a turn is running in this session; undo once it has ended (or Cancel it).');
          return undefined;
        case 'undo_unavailable':
        case 'turn_not_found':
          void vscode.window.showInformationMessage(`milk: ${f.message}`);
          return undefined;
        default:
          throw err;
      }
    }
  }

  /** milk: Undo Last Turn: the newest turn of this session whose changes are not undone. */
  private async undoLastTurn(): Promise<string[] | undefined> {
    const last = await this.controller.lastUndoableTurn();
    if (!last) {
      void vscode.window.showInformationMessage('milk: no turn of this session has changes to undo.');
      return undefined;
    }
    const { head, files } = changesText(last.info.changes ?? [], this.folder.uri());
    const asked = last.userText ? `"${last.userText.length > 80 ? `${last.userText.slice(0, 79)}…` : last.userText}"\n` : '';
    // the focused first button is the safe one (VS Code never focuses the close button):
    // Review… shows the changes, then asks again
    for (;;) {
      const pick = await vscode.window.showWarningMessage(
        `Undo the last turn's changes (${head})?`,
        { modal: true, detail: `${asked}${files}\n\nThe files go back to how they were before that turn.` },
        { title: REVIEW_LABEL },
        { title: 'Undo' },
        { title: 'Cancel', isCloseAffordance: true },
      );
      if (pick?.title === REVIEW_LABEL) {
        await this.reviewTurn(last.info.turnId);
        continue;
      }
      if (pick?.title !== 'Undo') return undefined;
      return this.undoTurn(last.info.turnId);
    }
  }

  // ---- webview --------------------------------------------------------------------------

  private async onWebviewMessage(m: FromWebview): Promise<void> {
    try {
      switch (m?.type) {
        case 'ready':
          await this.controller.showActive();
          break;
        case 'send':
          if (m.text.trim()) await this.controller.send(m.text);
          break;
        case 'escalate':
          await this.controller.escalate(m.text?.trim() || undefined);
          break;
        case 'advise':
          await this.adviseCommand(m.text?.trim() || undefined);
          break;
        case 'cancel':
          await this.controller.cancel();
          break;
        case 'newSession':
          await this.controller.newSession();
          break;
        case 'switchSession':
          await this.controller.switchSession(m.sessionId);
          break;
        case 'chooseFolder':
          await vscode.commands.executeCommand('milk.chooseFolder');
          break;
        case 'deleteSession':
          await this.deleteSession(m.sessionId);
          break;
        case 'showContext':
          await vscode.commands.executeCommand('milk.showContext');
          break;
        case 'openLink':
          if (/^(https?:|mailto:)/i.test(m.href)) await vscode.env.openExternal(vscode.Uri.parse(m.href));
          break;
        case 'openFile':
          if (m.path) await openAnswerFile(m.path, { line: m.line, endLine: m.endLine, folder: this.folder.uri() });
          break;
        case 'copyCode':
          await vscode.env.clipboard.writeText(m.text);
          vscode.window.setStatusBarMessage('milk: code copied', 2000);
          break;
        case 'insertCode':
          await insertAnswerCode(m.text, m.language);
          break;
        case 'backToLocal':
          this.controller.backToLocal();
          break;
        case 'keepRoute':
          this.controller.keepRoute();
          break;
        case 'reviewTurn':
          await this.reviewTurn(m.turnId);
          break;
        case 'undoTurn':
          await this.undoTurn(m.turnId);
          break;
        case 'errorAction':
          await this.errorAction(m.action, m.reason, m.message, { text: m.text });
          break;
      }
    } catch (err) {
      const f = describeError(err);
      this.output.warn(`${m?.type}: ${f.message}`);
      // a chat message already shows its failure in the chat; other actions say it here
      if (m?.type !== 'send' && m?.type !== 'escalate') void vscode.window.showErrorMessage(f.message.startsWith('milk') ? f.message : `milk: ${f.message}`);
    }
  }

  private async deleteSession(sessionId: string): Promise<void> {
    const info = this.controller.sessions.find((s) => s.sessionId === sessionId);
    const name = info ? sessionTitle(info) : 'this session';
    const when = info ? relativeTime(info.updatedAt) : '';
    const pick = await vscode.window.showWarningMessage(
      `Delete the milk session "${name}"?`,
      {
        modal: true,
        detail: `${info ? `${info.turnCount} message${info.turnCount === 1 ? '' : 's'}${when ? `, last one ${when}` : ''}. ` : ''}Its history is removed from storage.`,
      },
      'Delete',
    );
    if (pick === 'Delete') await this.controller.deleteSession(sessionId);
  }

  // ---- commands -------------------------------------------------------------------------

  // ---- the chat's folder (multi-root windows) ----------------------------------------------

  /** `milk.chooseFolder`: the folder the chat works on (`uri`, else asked in a quick pick). */
  private async chooseFolder(uri?: string): Promise<boolean> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length < 2) {
      void vscode.window.showInformationMessage('milk: this window has one folder; the chat works on it.');
      return false;
    }
    if (uri === undefined) {
      const current = this.folder.uri();
      const pick = await vscode.window.showQuickPick(
        folders.map((f) => ({
          label: f.name,
          description: f.uri.toString() === current ? 'the chat works on it now' : undefined,
          detail: f.uri.scheme === 'file' ? f.uri.fsPath : f.uri.toString(),
          uri: f.uri.toString(),
        })),
        { title: 'milk: the folder the chat works on', placeHolder: 'Its sessions, files and paths are the chat\'s' },
      );
      if (!pick) return false;
      uri = pick.uri;
    }
    if (!(await this.folder.choose(uri))) return false;
    this.output.info(`the chat works on ${this.folder.current()?.name ?? uri}`);
    await this.controller.folderChanged();
    return true;
  }

  /** Folders added or removed: when the chat's folder went, the chat moves to the first. */
  private async foldersChanged(): Promise<void> {
    const now = this.folder.uri();
    if (now !== this.shownFolder) {
      this.shownFolder = now;
      await this.controller.folderChanged();
    } else {
      await this.controller.showActive(); // the folder's name shows or goes with the count
    }
  }

  private registerCommands(): vscode.Disposable[] {
    const reg = (id: string, fn: (...args: any[]) => unknown) =>
      vscode.commands.registerCommand(id, async (...args: any[]) => {
        try {
          return await fn(...args);
        } catch (err) {
          const f = describeError(err);
          this.output.warn(`${id}: ${f.message}`);
          void vscode.window.showErrorMessage(f.message.startsWith('milk') ? f.message : `milk: ${f.message}`);
          return undefined;
        }
      });
    return [
      reg('milk.openChat', () => this.chatView.reveal()),
      reg('milk.askAboutSelection', (question?: string) => this.askAboutSelection(question)),
      reg('milk.escalate', (text?: string) => this.escalateCommand(text)),
      reg('milk.cancel', async () => {
        const cancelled = await this.controller.cancel();
        if (!cancelled) void vscode.window.showInformationMessage('milk: nothing is running in this session.');
        return cancelled;
      }),
      reg('milk.newSession', async () => {
        await this.chatView.reveal();
        return this.controller.newSession();
      }),
      reg('milk.switchSession', (sessionId?: string) => this.switchSessionCommand(sessionId)),
      reg('milk.chooseFolder', (uri?: string) => this.chooseFolder(uri)),
      reg('milk.advise', (text?: string) => this.adviseCommand(text)),
      reg('milk.showContext', () => this.showContext()),
      reg('milk.doctor', () => this.doctor()),
      reg('milk.restartServer', () => this.restart()),
      reg('milk.reinstallServer', () => this.reinstall()),
      reg('milk.showLog', () => this.output.show()),
      reg('milk.undoLastTurn', () => this.undoLastTurn()),
      reg('milk.backToLocal', async () => {
        await this.chatView.reveal();
        if (this.controller.shownRoute?.agent !== 'claude' && !this.controller.routeOverride) {
          void vscode.window.showInformationMessage('milk: the next message already goes to the local model.');
          return;
        }
        this.controller.backToLocal();
        this.chatView.post({ type: 'focusInput' });
      }),
      reg('milk.acceptEdit', () => {
        if (!this.review.accept()) void vscode.window.showInformationMessage('milk: no edit is waiting for review.');
      }),
      reg('milk.rejectEdit', () => {
        if (!this.review.reject()) void vscode.window.showInformationMessage('milk: no edit is waiting for review.');
      }),
    ];
  }

  private async askAboutSelection(question?: string): Promise<TurnResult | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) throw new Error('milk: open a file and select some code first.');
    const doc = editor.document;
    const sel = editor.selection;
    const q =
      question ??
      (await vscode.window.showInputBox({
        title: 'milk: Ask About Selection',
        prompt: 'Your question about the selected code',
        placeHolder: 'e.g. what does this do?',
      }));
    if (q === undefined || !q.trim()) return undefined;
    const uri = doc.uri.toString();
    const context: ContextItem[] = [];
    if (!sel.isEmpty) {
      context.push({
        uri,
        range: {
          start: { line: sel.start.line, character: sel.start.character },
          end: { line: sel.end.line, character: sel.end.character },
        },
        text: doc.getText(sel),
      });
    }
    // the file itself; its text only when the editor's content differs from the disk
    const fileItem: ContextItem = { uri };
    if (doc.isDirty || doc.isUntitled) fileItem.text = doc.getText();
    context.push(fileItem);
    const name = doc.uri.path.split('/').pop() ?? uri;
    const attachments = sel.isEmpty ? [name] : [`${name}:${sel.start.line + 1}-${sel.end.line + 1}`];
    await this.chatView.reveal();
    return this.controller.send(q, { context, attachments });
  }

  private async escalateCommand(text?: string): Promise<TurnResult | undefined> {
    let t = text;
    if (t === undefined) {
      t = await vscode.window.showInputBox({
        title: 'milk: Escalate to Claude',
        prompt: 'Message for Claude (optional: leave empty to let Claude carry on with the current need)',
      });
      if (t === undefined) return undefined;
    }
    await this.chatView.reveal();
    return this.controller.escalate(t.trim() || undefined);
  }

  /** `milk.advise` (the Plan button): Claude writes a plan, the local model carries it out. */
  private async adviseCommand(text?: string): Promise<TurnResult | undefined> {
    let t = text;
    if (t === undefined) {
      t = await vscode.window.showInputBox({
        title: 'milk: Plan with Claude, Do Locally',
        prompt: 'What to do: Claude writes a plan, the local model carries it out step by step (Claude does the steps it cannot)',
      });
      if (t === undefined) return undefined;
    }
    if (!t.trim()) {
      void vscode.window.showInformationMessage('milk: say what to plan and do.');
      return undefined;
    }
    await this.chatView.reveal();
    return this.controller.send(t.trim(), { route: 'advise' });
  }

  private async switchSessionCommand(sessionId?: string): Promise<void> {
    if (sessionId) {
      await this.chatView.reveal();
      return this.controller.switchSession(sessionId);
    }
    const sessions = await this.controller.refreshSessions();
    type Item = vscode.QuickPickItem & { sessionId?: string };
    const items: Item[] = sessions.map((s) => ({
      label: `${s.sessionId === this.controller.activeSessionId ? '$(check) ' : ''}${sessionTitle(s)}`,
      description: sessionDescription(s),
      detail: s.currentNeed && s.currentNeed !== sessionTitle(s) ? `Need: ${s.currentNeed}` : undefined,
      sessionId: s.sessionId,
    }));
    items.push({ label: '$(add) New session' });
    const pick = await vscode.window.showQuickPick(items, { title: 'milk: Switch Session', placeHolder: 'Pick a session' });
    if (!pick) return;
    await this.chatView.reveal();
    if (pick.sessionId) await this.controller.switchSession(pick.sessionId);
    else await this.controller.newSession();
  }

  private async showContext(): Promise<vscode.TextEditor> {
    const preview = await this.controller.context();
    const text = [
      `# milk escalation context (mode: ${preview.mode})`,
      '',
      `Claude would run: ${preview.argv.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}`,
      `Context file: ${preview.chars.contextFile.toLocaleString('en-US')} chars; message prefix: ${preview.chars.userMessagePrefix.toLocaleString('en-US')} chars.`,
      '',
      '## <context-file>',
      '',
      preview.contextFile,
      '',
      '## User message prefix',
      '',
      preview.userMessagePrefix || '(none)',
      '',
    ].join('\n');
    return this.docs.open('escalation-context.md', text);
  }

  /** milk: Doctor: the report rendered, read-only (the Markdown preview of a `milk-doctor:` document). */
  private async doctor(): Promise<vscode.Uri> {
    const s = await this.controller.status();
    this.updateStatusBar();
    const cmd = this.serverCommand ? [this.serverCommand.command, ...this.serverCommand.args].join(' ') : undefined;
    const version = (this.context.extension?.packageJSON as { version?: string } | undefined)?.version;
    return this.doctorView.show(doctorReport(s, { serverCommand: cmd, extensionVersion: version }));
  }

  dispose(): void {
    if (this.recheck) clearInterval(this.recheck);
    this.recheck = undefined;
    this.controller.dispose();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<MilkExtension> {
  ext = new MilkExtension(context);
  context.subscriptions.push(ext);
  void ext.start();
  return ext;
}

export async function deactivate(): Promise<void> {
  const e = ext;
  ext = undefined;
  if (e) {
    await e.stop();
    e.dispose();
  }
}

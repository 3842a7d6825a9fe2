// The VS Code side: starts milk-lsp through vscode-languageclient, hosts the chat webview,
// the commands, the status bar item and the permission prompt. The logic lives in the
// vscode-free modules next to this file; this one only wires them to the VS Code API.

import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  State,
  type ClientCapabilities,
  type FeatureState,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { answerConfiguration, buildServerSettings, classifyChange } from './config';
import { ChatController, describeError } from './controller';
import { discoverServer, notFoundMessage, type ServerCommand } from './discovery';
import {
  CLIENT_EXPERIMENTAL_CAPABILITY,
  Methods,
  type ContextItem,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type TurnResult,
} from './methods';
import { permissionAnswer, permissionPrompt } from './permission';
import { doctorReport, statusBarView } from './statusModel';
import type { FromWebview, ToWebview } from './viewMessages';

const VIEW_ID = 'milk.chat';
const DOC_SCHEME = 'milk';
/** reasons in a turn's error after which the status (model / claude reachable) is re-read */
const STATUS_REASONS = new Set(['local_unreachable', 'claude_not_found', 'claude_not_logged_in', 'local_failed']);

let ext: MilkExtension | undefined;

/** Advertise `experimental.milk.requestPermission` (PROTOCOL.md, Initialization). */
class MilkCapabilityFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    experimental.milk = { ...CLIENT_EXPERIMENTAL_CAPABILITY };
    capabilities.experimental = experimental;
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

/** Read-only documents (Show Escalation Context, Doctor) under the `milk:` scheme. */
class ReadOnlyDocs implements vscode.TextDocumentContentProvider {
  private readonly docs = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private counter = 0;

  async open(name: string, content: string): Promise<vscode.TextEditor> {
    const uri = vscode.Uri.parse(`${DOC_SCHEME}:/${++this.counter}/${name}`);
    this.docs.set(uri.path, content);
    const doc = await vscode.workspace.openTextDocument(uri);
    return vscode.window.showTextDocument(doc, { preview: false });
  }
  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(uri.path) ?? '';
  }
}

class ChatViewProvider implements vscode.WebviewViewProvider {
  view: vscode.WebviewView | undefined;
  private ready = false;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (m: FromWebview) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
    view.webview.html = this.html(view.webview);
    view.webview.onDidReceiveMessage((m: FromWebview) => {
      if (m?.type === 'ready') {
        this.ready = true;
        this.waiters.splice(0).forEach((w) => w());
      }
      this.onMessage(m);
    });
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
        this.ready = false;
      }
    });
  }

  post(msg: ToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(msg);
  }

  /** Reveal the chat view and wait until its script has said `ready`. */
  async reveal(): Promise<void> {
    if (this.view && this.ready) {
      this.view.show?.(true);
      return;
    }
    const ready = new Promise<void>((resolve) => this.waiters.push(resolve));
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
    await Promise.race([ready, new Promise((r) => setTimeout(r, 10000))]);
  }

  private html(webview: vscode.Webview): string {
    const nonce = makeNonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css'));
    const csp = [
      "default-src 'none'",
      `img-src ${webview.cspSource} data:`,
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      "connect-src 'none'",
      "frame-src 'none'",
      "form-action 'none'",
      "base-uri 'none'",
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style}" rel="stylesheet">
<title>milk</title>
</head>
<body>
<header id="top">
  <select id="sessions" title="Sessions of this workspace folder" aria-label="Session"></select>
  <button id="new-session" class="icon" title="New session" aria-label="New session"><svg width="14" height="14" viewBox="0 0 16 16" aria-hidden="true"><path d="M7.25 2h1.5v5.25H14v1.5H8.75V14h-1.5V8.75H2v-1.5h5.25z" fill="currentColor"/></svg></button>
  <button id="delete-session" class="icon secondary" title="Delete this session" aria-label="Delete session"><svg width="14" height="14" viewBox="0 0 16 16" aria-hidden="true"><path d="M6 1.5h4l.5 1H14V4H2V2.5h3.5zM3 5h10l-.8 9.2a1 1 0 0 1-1 .8H4.8a1 1 0 0 1-1-.8zm3 2v6h1.2V7zm2.8 0v6H10V7z" fill="currentColor"/></svg></button>
</header>
<div id="server-problem" class="banner error" hidden></div>
<div id="need" class="need" hidden></div>
<main id="log" aria-live="polite"></main>
<footer id="composer">
  <textarea id="input" rows="3" placeholder="Ask milk… (Enter to send, Shift+Enter for a new line)" aria-label="Message"></textarea>
  <div class="row">
    <span id="state" class="state">idle</span>
    <span class="spacer"></span>
    <button id="cancel" class="secondary" title="Cancel the running turn" disabled>Cancel</button>
    <button id="escalate" class="secondary" title="Hand this session to Claude (with the text above, if any)">Escalate</button>
    <button id="send" title="Send (Enter)">Send</button>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}

function makeNonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += chars.charAt(Math.floor(Math.random() * chars.length));
  return s;
}

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
  client: LanguageClient | undefined;
  serverCommand: ServerCommand | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private starting: Promise<void> | undefined;
  private restarts: number[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('milk', { log: true });
    this.chatView = new ChatViewProvider(context.extensionUri, (m) => void this.onWebviewMessage(m));
    this.controller = new ChatController({
      post: (m) => this.chatView.post(m),
      workspaceFolder: () => vscode.workspace.workspaceFolders?.[0]?.uri.toString(),
      onBusyChanged: () => this.updateStatusBar(),
      onTurnResult: (r) => this.onTurnResult(r),
      log: (l) => this.output.info(l),
    });
    this.statusItem = vscode.window.createStatusBarItem('milk.status', vscode.StatusBarAlignment.Right, 100);
    this.statusItem.name = 'milk';
    this.statusItem.command = 'milk.openChat';
    this.updateStatusBar();
    this.statusItem.show();

    this.disposables.push(
      this.output,
      this.statusItem,
      vscode.window.registerWebviewViewProvider(VIEW_ID, this.chatView, { webviewOptions: { retainContextWhenHidden: true } }),
      vscode.workspace.registerTextDocumentContentProvider(DOC_SCHEME, this.docs),
      vscode.workspace.onDidChangeConfiguration((e) => void this.onConfigurationChanged(e)),
      ...this.registerCommands(),
    );
  }

  // ---- server lifecycle -----------------------------------------------------------------

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    this.controller.setServerState('starting');
    const cfg = vscode.workspace.getConfiguration('milk');
    const found = discoverServer({ serverPath: cfg.get<string>('server.path'), python: cfg.get<string>('server.python') });
    if (!found.ok) {
      this.serverFailed(found.problem);
      return;
    }
    this.serverCommand = found.server;
    this.updateStatusBar();
    this.output.info(`starting ${[found.server.command, ...found.server.args].join(' ')} (from ${found.server.source})`);

    const serverOptions: ServerOptions = { command: found.server.command, args: found.server.args, options: { env: process.env } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      initializationOptions: buildServerSettings(settingGetter()),
      middleware: {
        workspace: {
          configuration: (params) => answerConfiguration(params.items, buildServerSettings(settingGetter())),
        },
      },
      initializationFailedHandler: (error) => {
        this.output.error(`initialize failed: ${String(error)}`);
        return false;
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          const now = Date.now();
          this.restarts = this.restarts.filter((t) => now - t < 180000);
          this.restarts.push(now);
          if (this.restarts.length <= 3 && this.client?.state === State.Running) {
            this.output.warn('milk-lsp exited; restarting it');
            return { action: CloseAction.Restart };
          }
          this.serverFailed('The milk-lsp server stopped.');
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new LanguageClient('milk', 'milk', serverOptions, clientOptions);
    client.registerFeature(new MilkCapabilityFeature());
    client.onRequest(Methods.REQUEST_PERMISSION, (p: RequestPermissionParams, token: vscode.CancellationToken) =>
      this.askPermission(p, token),
    );
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        this.controller.attach(client);
        this.controller.setServerState('running');
        void this.refreshStatus();
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
    void vscode.window.showErrorMessage(notFoundMessage(problem), 'Open Settings', 'Show Log').then((pick) => {
      if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'milk.server');
      if (pick === 'Show Log') this.output.show();
    });
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
  }

  updateStatusBar(): void {
    const v = statusBarView({
      serverState: this.controller.serverState,
      busy: this.controller.busy(),
      status: this.controller.lastStatus,
      problem: this.controller.problem,
    });
    this.statusItem.text = v.text;
    this.statusItem.tooltip = v.tooltip;
    this.statusItem.backgroundColor = v.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  private onTurnResult(r: TurnResult): void {
    if (r.error && STATUS_REASONS.has(r.error.reason)) void this.refreshStatus();
    if (r.stopReason === 'error' && r.error && !this.chatView.view?.visible) {
      void vscode.window.showErrorMessage(`milk: ${r.error.message}`);
    }
  }

  // ---- permission -----------------------------------------------------------------------

  async askPermission(p: RequestPermissionParams, token: vscode.CancellationToken): Promise<RequestPermissionResult> {
    const prompt = permissionPrompt(p);
    this.output.info(`permission asked: ${p.tool} ${JSON.stringify(p.input)}`);
    const cancelled = new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined)));
    const clicked = await Promise.race([
      vscode.window.showWarningMessage(prompt.message, { modal: true, detail: prompt.detail }, ...prompt.labels),
      cancelled,
    ]);
    const answer = permissionAnswer(p, clicked);
    this.output.info(`permission answer: ${answer.optionId}${token.isCancellationRequested ? ' (request cancelled)' : ''}`);
    return answer;
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
        case 'cancel':
          await this.controller.cancel();
          break;
        case 'newSession':
          await this.controller.newSession();
          break;
        case 'switchSession':
          await this.controller.switchSession(m.sessionId);
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
      }
    } catch (err) {
      this.output.warn(`${m?.type}: ${describeError(err).message}`);
    }
  }

  private async deleteSession(sessionId: string): Promise<void> {
    const info = this.controller.sessions.find((s) => s.sessionId === sessionId);
    const pick = await vscode.window.showWarningMessage(
      `Delete the milk session "${info?.title || sessionId}"?`,
      { modal: true, detail: 'Its history is removed from storage.' },
      'Delete',
    );
    if (pick === 'Delete') await this.controller.deleteSession(sessionId);
  }

  // ---- commands -------------------------------------------------------------------------

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
      reg('milk.showContext', () => this.showContext()),
      reg('milk.doctor', () => this.doctor()),
      reg('milk.restartServer', () => this.restart()),
      reg('milk.showLog', () => this.output.show()),
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
        title: 'Milk: Ask About Selection',
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
        title: 'Milk: Escalate to Claude',
        prompt: 'Message for Claude (optional: leave empty to let Claude carry on with the current need)',
      });
      if (t === undefined) return undefined;
    }
    await this.chatView.reveal();
    return this.controller.escalate(t.trim() || undefined);
  }

  private async switchSessionCommand(sessionId?: string): Promise<void> {
    if (sessionId) {
      await this.chatView.reveal();
      return this.controller.switchSession(sessionId);
    }
    const sessions = await this.controller.refreshSessions();
    type Item = vscode.QuickPickItem & { sessionId?: string };
    const items: Item[] = sessions.map((s) => ({
      label: `${s.sessionId === this.controller.activeSessionId ? '$(check) ' : ''}${s.title || s.sessionId}`,
      description: `${s.turnCount} message${s.turnCount === 1 ? '' : 's'} · ${s.activeAgent === 'claude' ? 'Claude' : 'local'}`,
      detail: s.currentNeed ? `Need: ${s.currentNeed}` : `Updated ${s.updatedAt}`,
      sessionId: s.sessionId,
    }));
    items.push({ label: '$(add) New session' });
    const pick = await vscode.window.showQuickPick(items, { title: 'Milk: Switch Session', placeHolder: 'Pick a session' });
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

  private async doctor(): Promise<vscode.TextEditor> {
    const s = await this.controller.status();
    this.updateStatusBar();
    const cmd = this.serverCommand ? [this.serverCommand.command, ...this.serverCommand.args].join(' ') : undefined;
    const version = (this.context.extension?.packageJSON as { version?: string } | undefined)?.version;
    return this.docs.open('doctor.md', doctorReport(s, { serverCommand: cmd, extensionVersion: version }));
  }

  dispose(): void {
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

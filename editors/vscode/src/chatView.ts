// The chat webview: its HTML (a strict CSP, one nonce'd script), the messages to and from it,
// and revealing it. The chat's logic is in controller.ts / webview/main.ts.

import * as vscode from 'vscode';
import type { FromWebview, ToWebview } from './viewMessages';

export const VIEW_ID = 'milk.chat';

export class ChatViewProvider implements vscode.WebviewViewProvider {
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
  <button id="folder" class="secondary folder" title="The folder the chat works on: click to choose another" hidden></button>
  <select id="sessions" title="Sessions of this workspace folder" aria-label="Session"></select>
  <button id="new-session" class="icon" title="New session" aria-label="New session"><svg width="14" height="14" viewBox="0 0 16 16" aria-hidden="true"><path d="M7.25 2h1.5v5.25H14v1.5H8.75V14h-1.5V8.75H2v-1.5h5.25z" fill="currentColor"/></svg></button>
  <button id="delete-session" class="icon secondary" title="Delete this session" aria-label="Delete session"><svg width="14" height="14" viewBox="0 0 16 16" aria-hidden="true"><path d="M6 1.5h4l.5 1H14V4H2V2.5h3.5zM3 5h10l-.8 9.2a1 1 0 0 1-1 .8H4.8a1 1 0 0 1-1-.8zm3 2v6h1.2V7zm2.8 0v6H10V7z" fill="currentColor"/></svg></button>
</header>
<div id="server-problem" class="banner error" hidden></div>
<div id="route" class="route" hidden></div>
<main id="log" aria-live="polite"></main>
<footer id="composer">
  <textarea id="input" rows="3" placeholder="Ask milk… (Enter to send, Shift+Enter for a new line, ↑ for your last message, Esc to cancel)" aria-label="Message"></textarea>
  <div class="row">
    <span id="state" class="state">idle</span>
    <span class="spacer"></span>
    <button id="cancel" class="secondary" title="Cancel the running turn (Esc in the message box)" disabled>Cancel</button>
    <button id="advise" class="secondary" title="Claude writes a plan for the text above; the local model carries it out step by step">Plan</button>
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

// The chat webview's script (bundled to dist/webview.js for the browser). It keeps a
// ChatState (src/chatModel.ts) from the extension's messages and renders it. Model output
// goes through renderMarkdown (raw HTML off, safe links only); everything else is set as
// text. The page's CSP allows only this script (by nonce) and the extension's stylesheet.

import {
  addUserMessage,
  agentLabel,
  applyResult,
  applyUpdate,
  emptyState,
  escalationText,
  failPending,
  formatUsage,
  fromHistory,
  isRunning,
  toolSummary,
  type Block,
  type ChatState,
  type ToolView,
  type TurnView,
} from '../src/chatModel';
import { renderMarkdown } from '../src/markdown';
import type { SessionInfo } from '../src/methods';
import type { FromWebview, ServerState, ToWebview } from '../src/viewMessages';

declare function acquireVsCodeApi(): { postMessage(msg: unknown): void };
const vscode = acquireVsCodeApi();
const send = (m: FromWebview) => vscode.postMessage(m);

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const log = $<HTMLElement>('log');
const input = $<HTMLTextAreaElement>('input');
const sendBtn = $<HTMLButtonElement>('send');
const escalateBtn = $<HTMLButtonElement>('escalate');
const cancelBtn = $<HTMLButtonElement>('cancel');
const sessionsSel = $<HTMLSelectElement>('sessions');
const newBtn = $<HTMLButtonElement>('new-session');
const deleteBtn = $<HTMLButtonElement>('delete-session');
const needEl = $<HTMLElement>('need');
const stateEl = $<HTMLElement>('state');
const problemEl = $<HTMLElement>('server-problem');

let state: ChatState = emptyState();
let localModel: string | undefined;
let serverState: ServerState = 'starting';
let sessions: SessionInfo[] = [];
let activeId: string | undefined;
const turnEls = new WeakMap<TurnView, HTMLElement>();

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function nearBottom(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
}

// ---- rendering --------------------------------------------------------------------------

function renderAll(): void {
  log.textContent = '';
  if (!state.turns.length) {
    const empty = el('div', 'empty');
    empty.id = 'empty';
    empty.textContent =
      serverState === 'failed'
        ? 'The milk-lsp server is not running.'
        : 'No messages yet. Ask something below: the local model answers, and you can escalate to Claude.';
    log.appendChild(empty);
  }
  for (const t of state.turns) renderTurn(t);
  renderChrome();
  log.scrollTop = log.scrollHeight;
}

function renderTurn(turn: TurnView): void {
  const stick = nearBottom();
  document.getElementById('empty')?.remove();
  let sec = turnEls.get(turn);
  if (!sec) {
    sec = el('section', 'turn');
    const user = el('div', 'user');
    const blocks = el('div', 'blocks');
    const foot = el('div', 'turn-foot');
    sec.append(user, blocks, foot);
    turnEls.set(turn, sec);
    log.appendChild(sec);
  }
  sec.dataset.turnId = turn.turnId;
  sec.dataset.status = turn.status;
  const [user, blocks, foot] = Array.from(sec.children) as HTMLElement[];

  // the user's message
  if (turn.userText) {
    user.hidden = false;
    if (user.dataset.text !== turn.userText) {
      user.textContent = '';
      user.append(el('div', 'who', 'You'), el('div', 'user-text', turn.userText));
      if (turn.attachments?.length) user.append(el('div', 'attachments', `📎 ${turn.attachments.join(', ')}`));
      user.dataset.text = turn.userText;
    }
  } else {
    user.hidden = true;
  }

  // blocks, keyed
  const existing = new Map<string, HTMLElement>();
  for (const c of Array.from(blocks.children) as HTMLElement[]) existing.set(c.dataset.key ?? '', c);
  let prev: HTMLElement | undefined;
  for (const b of turn.blocks) {
    let node = existing.get(b.key);
    if (!node) {
      node = createBlock(b);
      node.dataset.key = b.key;
    }
    const want = prev ? prev.nextSibling : blocks.firstChild;
    if (want !== node) blocks.insertBefore(node, want);
    updateBlock(node, b);
    prev = node;
  }

  // footer: status, usage, error
  foot.textContent = '';
  const status = el('span', `turn-status st-${turn.status}`, statusText(turn));
  foot.appendChild(status);
  const usage = formatUsage(turn.usage);
  if (usage) foot.appendChild(el('span', 'usage', usage));
  if (turn.error) {
    const err = el('div', 'turn-error', `${turn.error.message}${turn.error.reason ? ` (${turn.error.reason})` : ''}`);
    foot.appendChild(err);
  }
  if (turn.gap) foot.appendChild(el('span', 'gap', 'some updates were missed; the transcript reloads when the turn ends'));
  if (stick) log.scrollTop = log.scrollHeight;
}

function statusText(turn: TurnView): string {
  switch (turn.status) {
    case 'running':
      return turn.agent === 'claude' ? 'Claude is working…' : turn.agent === 'local' ? 'local model is working…' : 'waiting for the server…';
    case 'ok':
      return '';
    case 'cancelled':
      return 'cancelled';
    case 'error':
      return 'error';
    case 'max_turns':
      return 'stopped: too many turns';
  }
}

function createBlock(b: Block): HTMLElement {
  switch (b.kind) {
    case 'agent':
      return el('div', `badge agent-${b.agent}`);
    case 'text':
      return el('div', `md text agent-${b.agent}`);
    case 'thinking': {
      const d = el('details', 'thinking');
      d.append(el('summary', undefined, 'thinking'), el('div', 'md'));
      return d;
    }
    case 'tool': {
      const d = el('details', 'tool');
      const s = el('summary');
      s.append(el('span', 'tool-icon'), el('span', 'tool-name'), el('code', 'tool-arg'), el('span', 'tool-status'));
      const body = el('div', 'tool-body');
      body.append(el('div', 'label', 'input'), el('pre', 'tool-input'), el('div', 'label tool-output-label', 'output'), el('pre', 'tool-output'));
      d.append(s, body);
      return d;
    }
    case 'escalation':
      return el('div', 'banner escalation');
    case 'notice':
      return el('div', `notice sev-${b.severity}`);
  }
}

const TOOL_ICONS: Record<string, string> = { pending: '○', running: '◐', completed: '✓', failed: '✗', denied: '⊘' };

function updateBlock(node: HTMLElement, b: Block): void {
  switch (b.kind) {
    case 'agent': {
      const label = agentLabel(b.agent, localModel);
      node.textContent = '';
      node.append(el('span', 'badge-name', label));
      if (b.reason) node.append(el('span', 'badge-reason', b.reason));
      break;
    }
    case 'text':
      if (node.dataset.len !== String(b.text.length)) {
        node.innerHTML = renderMarkdown(b.text);
        node.dataset.len = String(b.text.length);
      }
      break;
    case 'thinking': {
      const md = node.querySelector('.md') as HTMLElement;
      if (md.dataset.len !== String(b.text.length)) {
        md.innerHTML = renderMarkdown(b.text);
        md.dataset.len = String(b.text.length);
      }
      break;
    }
    case 'tool':
      updateTool(node as HTMLDetailsElement, b.tool);
      break;
    case 'escalation':
      node.textContent = `⤴ ${escalationText(b)}`;
      break;
    case 'notice':
      node.textContent = b.message;
      break;
  }
}

function updateTool(d: HTMLDetailsElement, t: ToolView): void {
  d.dataset.status = t.status;
  d.dataset.toolCallId = t.toolCallId;
  (d.querySelector('.tool-icon') as HTMLElement).textContent = TOOL_ICONS[t.status] ?? '•';
  (d.querySelector('.tool-name') as HTMLElement).textContent = t.name;
  (d.querySelector('.tool-arg') as HTMLElement).textContent = toolSummary(t);
  (d.querySelector('.tool-status') as HTMLElement).textContent = t.status;
  (d.querySelector('.tool-input') as HTMLElement).textContent = JSON.stringify(t.input ?? {}, null, 2);
  const out = d.querySelector('.tool-output') as HTMLElement;
  const outLabel = d.querySelector('.tool-output-label') as HTMLElement;
  const hasOut = t.output !== undefined;
  out.hidden = !hasOut;
  outLabel.hidden = !hasOut;
  out.textContent = t.output ?? '';
  out.classList.toggle('error', !!t.isError);
}

function renderChrome(): void {
  const running = isRunning(state);
  cancelBtn.disabled = !running;
  const ready = serverState === 'running';
  sendBtn.disabled = !ready;
  escalateBtn.disabled = !ready;
  const need = state.need;
  needEl.hidden = !need;
  needEl.textContent = need ? `Need: ${need}` : '';
  const current = state.turns.filter((t) => t.status === 'running').pop();
  stateEl.textContent =
    serverState === 'starting'
      ? 'starting milk-lsp…'
      : serverState !== 'running'
        ? 'server not running'
        : running
          ? current?.agent === 'claude'
            ? 'Claude is answering…'
            : 'local model is answering…'
          : localModel
            ? `idle · ${localModel}`
            : 'idle';
  stateEl.dataset.state = running ? (current?.agent ?? 'pending') : 'idle';
  deleteBtn.disabled = !activeId;
}

function renderSessions(): void {
  sessionsSel.textContent = '';
  if (!activeId) {
    const o = el('option', undefined, sessions.length ? '(new conversation)' : 'No sessions yet');
    o.value = '';
    sessionsSel.appendChild(o);
  }
  for (const s of sessions) {
    const o = el('option', undefined, `${s.title || 'Untitled'} · ${s.turnCount} msg${s.activeAgent === 'claude' ? ' · Claude' : ''}`);
    o.value = s.sessionId;
    o.title = s.currentNeed ? `Need: ${s.currentNeed}` : s.updatedAt;
    if (s.sessionId === activeId) o.selected = true;
    sessionsSel.appendChild(o);
  }
  deleteBtn.disabled = !activeId;
}

// ---- messages from the extension ----------------------------------------------------------

window.addEventListener('message', (ev: MessageEvent<ToWebview>) => {
  const m = ev.data;
  if (!m || typeof m !== 'object') return;
  switch (m.type) {
    case 'history':
      state = m.data ? fromHistory(m.data) : emptyState();
      if (m.data && activeId !== m.data.session.sessionId) {
        activeId = m.data.session.sessionId;
        renderSessions();
      }
      renderAll();
      break;
    case 'sessions':
      sessions = m.sessions;
      activeId = m.activeId;
      renderSessions();
      renderChrome();
      break;
    case 'user':
      renderTurn(addUserMessage(state, m.text, m.attachments));
      renderChrome();
      break;
    case 'update': {
      if (!state.session && m.update.sessionId) {
        // first turn of a new session: the server named it
        activeId = m.update.sessionId;
      }
      const t = applyUpdate(state, m.update);
      if (t) renderTurn(t);
      renderChrome();
      break;
    }
    case 'result': {
      const t = applyResult(state, m.result);
      if (t) renderTurn(t);
      renderChrome();
      break;
    }
    case 'failed': {
      const t = failPending(state, m.message, m.reason);
      if (t) renderTurn(t);
      else showTransient(m.message);
      renderChrome();
      break;
    }
    case 'meta':
      localModel = m.localModel;
      serverState = m.serverState;
      problemEl.hidden = !(m.serverState === 'failed' && m.problem);
      problemEl.textContent = m.problem ?? '';
      // badges show the model name
      for (const t of state.turns) if (turnEls.has(t)) renderTurn(t);
      renderChrome();
      break;
    case 'focusInput':
      input.focus();
      break;
  }
});

function showTransient(message: string): void {
  const n = el('div', 'notice sev-error', message);
  log.appendChild(n);
  log.scrollTop = log.scrollHeight;
  setTimeout(() => n.remove(), 15000);
}

// ---- user input -------------------------------------------------------------------------

function submit(): void {
  const text = input.value;
  if (!text.trim() || sendBtn.disabled) return;
  input.value = '';
  send({ type: 'send', text });
}

input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});
sendBtn.addEventListener('click', submit);
escalateBtn.addEventListener('click', () => {
  const text = input.value.trim();
  input.value = '';
  send({ type: 'escalate', text: text || undefined });
});
cancelBtn.addEventListener('click', () => send({ type: 'cancel' }));
newBtn.addEventListener('click', () => send({ type: 'newSession' }));
deleteBtn.addEventListener('click', () => {
  if (activeId) send({ type: 'deleteSession', sessionId: activeId });
});
sessionsSel.addEventListener('change', () => {
  if (sessionsSel.value) send({ type: 'switchSession', sessionId: sessionsSel.value });
});
// links in model output open outside, through the extension (http(s)/mailto only)
log.addEventListener('click', (e) => {
  const a = (e.target as HTMLElement).closest('a');
  if (!a) return;
  e.preventDefault();
  const href = a.getAttribute('href');
  if (href) send({ type: 'openLink', href });
});

renderAll();
send({ type: 'ready' });

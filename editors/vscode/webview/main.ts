// The chat webview's script (bundled to dist/webview.js for the browser). It keeps a
// ChatState (src/chatModel.ts) from the extension's messages and renders it. Model output
// goes through renderMarkdown (raw HTML off, safe links only; answers through renderAnswer,
// which also makes a local answer's Sources block file links); everything else is set as
// text. The page's CSP allows only this script (by nonce) and the extension's stylesheet.

import {
  addUserMessage,
  agentLabel,
  applyResult,
  applyUpdate,
  changesText,
  emptyState,
  errorActions,
  escalationText,
  failPending,
  formatUsage,
  fromHistory,
  isRunning,
  markAsking,
  markUndone,
  nameLocalModel,
  notRun,
  routeReasonText,
  sessionDescription,
  sessionTitle,
  splitToolOutput,
  toolSummary,
  workingAgent,
  workingText,
  type Block,
  type ChatState,
  type ErrorAction,
  type ToolView,
  type TurnView,
} from '../src/chatModel';
import { InputHistory, inputKeyAction } from '../src/inputHistory';
import { renderMarkdown } from '../src/markdown';
import type { NextRoute, SessionInfo } from '../src/methods';
import { renderAnswer } from '../src/sources';
import type { FromWebview, ServerState, ToWebview } from '../src/viewMessages';
import { keepAttachments, notePending, readSaved, restoreAttachments } from '../src/webviewState';

declare function acquireVsCodeApi(): { postMessage(msg: unknown): void; getState(): unknown; setState(state: unknown): void };
const vscode = acquireVsCodeApi();
const send = (m: FromWebview) => vscode.postMessage(m);

// kept across a reload of the view: the attachment chips, the messages Up brings back
const saved = readSaved(vscode.getState());
const sent = new InputHistory(saved.history);
function persist(): void {
  saved.history = sent.entries;
  vscode.setState(saved);
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const log = $<HTMLElement>('log');
const input = $<HTMLTextAreaElement>('input');
const sendBtn = $<HTMLButtonElement>('send');
const escalateBtn = $<HTMLButtonElement>('escalate');
const adviseBtn = $<HTMLButtonElement>('advise');
const cancelBtn = $<HTMLButtonElement>('cancel');
const folderBtn = $<HTMLButtonElement>('folder');
const sessionsSel = $<HTMLSelectElement>('sessions');
const newBtn = $<HTMLButtonElement>('new-session');
const deleteBtn = $<HTMLButtonElement>('delete-session');
const stateEl = $<HTMLElement>('state');
const problemEl = $<HTMLElement>('server-problem');
const routeEl = $<HTMLElement>('route');

let state: ChatState = emptyState();
let localModel: string | undefined;
let serverState: ServerState = 'starting';
let sessions: SessionInfo[] = [];
let activeId: string | undefined;
let workspaceFolder: string | undefined;
let nextRoute: NextRoute | undefined;
let routeOverride: 'local' | undefined;
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
        : serverState === 'starting'
          ? 'Starting milk-lsp…'
          : 'No messages yet. Ask something below: the local model answers (it can read and edit files in this folder, asking you first), and Escalate hands the session to Claude. Select code and press Ctrl+Alt+M to ask about it.';
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
    const changes = el('div', 'changes');
    const card = el('div', 'error-card');
    sec.append(user, blocks, card, changes, foot);
    turnEls.set(turn, sec);
    log.appendChild(sec);
  }
  sec.dataset.turnId = turn.turnId;
  sec.dataset.status = turn.status;
  const [user, blocks, card, changes, foot] = Array.from(sec.children) as HTMLElement[];

  // the user's message
  if (turn.userText) {
    user.hidden = false;
    if (user.dataset.text !== turn.userText) {
      user.textContent = '';
      user.append(el('div', 'who', 'You'), el('div', 'user-text', turn.userText));
      if (turn.attachments?.length) user.append(el('div', 'attachments', `📎 ${turn.attachments.join(', ')}`));
      if (turn.askedIn) user.append(el('div', 'attachments asked-in', `asked in ${turn.askedIn}`));
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
    updateBlock(node, b, turn);
    prev = node;
  }

  renderErrorCard(card, turn);
  renderChanges(changes, turn);

  // footer: status, usage
  foot.textContent = '';
  foot.dataset.agent = workingAgent(turn) ?? '';
  const status = el('span', `turn-status st-${turn.status}`, statusText(turn));
  foot.appendChild(status);
  const usage = formatUsage(turn.usage);
  if (usage) foot.appendChild(el('span', 'usage', usage));
  if (turn.gap) foot.appendChild(el('span', 'gap', 'some updates were missed; the transcript reloads when the turn ends'));
  if (stick) log.scrollTop = log.scrollHeight;
}

const ACTION_LABELS: Record<ErrorAction, string> = {
  openSettings: 'Open Settings',
  retry: 'Retry',
  doctor: 'Doctor',
  showLog: 'Show Log',
};

/** The turn's failure, once, with what to do about it. */
function renderErrorCard(card: HTMLElement, turn: TurnView): void {
  const e = turn.error;
  card.hidden = !e;
  const sig = e ? `${e.reason}|${e.message}|${turn.status}` : '';
  if (card.dataset.sig === sig) return;
  card.dataset.sig = sig;
  card.textContent = '';
  if (!e) return;
  card.append(el('div', 'error-message', e.message));
  // actions once the result names the reason: turn_ended comes first, and a reason not yet
  // known would offer a card of Retry alone for the moment until the result arrives
  if (turn.status === 'running' || !e.reason) return;
  const row = el('div', 'error-actions');
  for (const action of errorActions(e.reason, e.signal)) {
    if (action === 'retry' && turn.userText === undefined) continue;
    const b = el('button', 'secondary', ACTION_LABELS[action]);
    b.dataset.action = action;
    b.addEventListener('click', () =>
      send({ type: 'errorAction', action, reason: e.reason, message: e.message, turnId: turn.turnId, text: turn.userText }),
    );
    row.appendChild(b);
  }
  if (row.children.length) card.appendChild(row);
}

/** "N files changed · Review · Undo" under a turn that changed files. */
function renderChanges(box: HTMLElement, turn: TurnView): void {
  const list = turn.changes ?? [];
  box.hidden = !list.length;
  const sig = `${list.length}|${turn.undone}|${turn.status}|${JSON.stringify(list)}`;
  if (box.dataset.sig === sig) return;
  box.dataset.sig = sig;
  box.textContent = '';
  if (!list.length) return;
  const { head, files } = changesText(list, workspaceFolder);
  const headEl = el('span', 'changes-head', turn.undone ? `${head} · undone` : head);
  const review = el('a', 'changes-review action-link', 'Review');
  review.setAttribute('role', 'button');
  review.tabIndex = 0;
  review.addEventListener('click', (e) => {
    e.preventDefault();
    send({ type: 'reviewTurn', turnId: turn.turnId });
  });
  box.append(headEl, el('span', 'sep', ' · '), review);
  if (!turn.undone) {
    const undo = el('a', 'changes-undo action-link', 'Undo');
    undo.setAttribute('role', 'button');
    undo.tabIndex = 0;
    undo.title = 'Put back the files as they were before this turn';
    undo.addEventListener('click', (e) => {
      e.preventDefault();
      if (turn.status !== 'running') send({ type: 'undoTurn', turnId: turn.turnId });
    });
    box.append(el('span', 'sep', ' · '), undo);
  }
  box.appendChild(el('div', 'changes-files', files));
}

function statusText(turn: TurnView): string {
  switch (turn.status) {
    case 'running':
      // Claude from the hand-off on (the escalated update), before its first word
      return workingText(turn).turn;
    case 'ok':
      return '';
    case 'cancelled':
      return 'cancelled';
    case 'error':
      return 'failed';
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
      body.append(
        el('div', 'label', 'input'),
        el('pre', 'tool-input'),
        el('div', 'label tool-output-label', 'output'),
        el('pre', 'tool-output'),
        el('div', 'tool-cut'),
      );
      d.append(s, body);
      return d;
    }
    case 'escalation':
      return el('div', 'banner escalation');
    case 'notice':
      return el('div', `notice sev-${b.severity}`);
    case 'plan':
      return el('div', 'plan');
  }
}

const STEP_ICONS: Record<string, string> = { pending: '☐', in_progress: '▸', completed: '☑', failed: '☒' };

/** An advisor turn's checklist: each step, its state, and who did it. */
function updatePlan(
  node: HTMLElement,
  steps: { content: string; status: string; agent?: string | null; byMilk?: boolean | null }[],
): void {
  const sig = JSON.stringify(steps);
  if (node.dataset.sig === sig) return;
  node.dataset.sig = sig;
  node.textContent = '';
  node.append(el('div', 'plan-title', "Claude's plan (the local model does the steps)"));
  const list = el('ol', 'plan-steps');
  for (const step of steps) {
    const item = el('li', `plan-step step-${step.status}`);
    const who = step.byMilk ? 'milk' : step.agent === 'claude' ? 'Claude' : step.agent === 'local' ? 'local model' : '';
    item.append(el('span', 'step-icon', STEP_ICONS[step.status] ?? '•'), el('span', 'step-text', step.content));
    if (who && step.status !== 'pending') item.append(el('span', 'step-who', step.status === 'in_progress' ? `${who}…` : who));
    list.append(item);
  }
  node.append(list);
}

const TOOL_ICONS: Record<string, string> = { pending: '○', running: '◐', completed: '✓', failed: '✗', denied: '⊘', cancelled: '–' };

function updateBlock(node: HTMLElement, b: Block, turn: TurnView): void {
  switch (b.kind) {
    case 'agent': {
      const label = agentLabel(b.agent, b.model);
      const reason = routeReasonText(b.reason);
      if (node.dataset.sig === `${label}|${reason}`) break;
      node.dataset.sig = `${label}|${reason}`;
      node.textContent = '';
      node.append(el('span', 'badge-name', label));
      if (reason) node.append(el('span', 'badge-reason', reason));
      break;
    }
    case 'text': {
      // the quotes of the `citations` update arrive after the text: they re-render it too
      const sig = `${b.text.length}|${turn.citations?.length ?? 0}`;
      if (node.dataset.sig !== sig) {
        node.innerHTML = renderAnswer(b.text, b.agent, turn.citations);
        decorateCode(node);
        node.dataset.sig = sig;
      }
      break;
    }
    case 'thinking': {
      const md = node.querySelector('.md') as HTMLElement;
      if (md.dataset.len !== String(b.text.length)) {
        md.innerHTML = renderMarkdown(b.text);
        md.dataset.len = String(b.text.length);
      }
      break;
    }
    case 'tool':
      updateTool(node as HTMLDetailsElement, b.tool, turn.asking === b.tool.toolCallId && turn.status === 'running');
      break;
    case 'escalation':
      node.textContent = `⤴ ${escalationText(b)}`;
      break;
    case 'notice':
      node.textContent = b.message;
      break;
    case 'plan':
      updatePlan(node, b.steps);
      break;
  }
}

const TOOL_STATUS_WORDS: Record<string, string> = { completed: 'done' };

function updateTool(d: HTMLDetailsElement, t: ToolView, asking: boolean): void {
  d.dataset.status = t.status;
  d.dataset.toolCallId = t.toolCallId;
  d.classList.toggle('asking', asking);
  // a call milk stopped before it ran is "not run", not a red "failed"
  const stopped = notRun(t);
  d.classList.toggle('not-run', stopped);
  (d.querySelector('.tool-icon') as HTMLElement).textContent = stopped ? TOOL_ICONS.cancelled : (TOOL_ICONS[t.status] ?? '•');
  (d.querySelector('.tool-name') as HTMLElement).textContent = t.name;
  (d.querySelector('.tool-arg') as HTMLElement).textContent = toolSummary(t, workspaceFolder);
  (d.querySelector('.tool-status') as HTMLElement).textContent = asking ? 'waiting for your answer' : stopped ? 'not run' : (TOOL_STATUS_WORDS[t.status] ?? t.status);
  (d.querySelector('.tool-input') as HTMLElement).textContent = JSON.stringify(t.input ?? {}, null, 2);
  const out = d.querySelector('.tool-output') as HTMLElement;
  const outLabel = d.querySelector('.tool-output-label') as HTMLElement;
  const cutEl = d.querySelector('.tool-cut') as HTMLElement;
  const hasOut = t.output !== undefined;
  out.hidden = !hasOut;
  outLabel.hidden = !hasOut;
  const { text, cut } = splitToolOutput(t.output ?? '');
  out.textContent = text;
  cutEl.hidden = !cut;
  cutEl.textContent = cut ?? '';
  out.classList.toggle('error', !!t.isError && t.status !== 'denied' && !stopped);
}

/** Copy and Insert buttons on every code block of a rendered answer. */
function decorateCode(container: HTMLElement): void {
  for (const pre of Array.from(container.querySelectorAll('pre'))) {
    const code = pre.querySelector('code');
    const lang = /language-([\w+-]+)/.exec(code?.className ?? '')?.[1];
    const bar = el('div', 'code-actions');
    const copy = el('button', 'code-copy secondary', 'Copy');
    copy.title = 'Copy the code';
    const insert = el('button', 'code-insert secondary', 'Insert');
    insert.title = 'Insert the code at the cursor of the editor';
    bar.append(copy, insert);
    copy.addEventListener('click', () => {
      send({ type: 'copyCode', text: code?.textContent ?? '' });
      copy.textContent = 'Copied';
      setTimeout(() => (copy.textContent = 'Copy'), 1500);
    });
    insert.addEventListener('click', () => send({ type: 'insertCode', text: code?.textContent ?? '', language: lang }));
    const wrap = el('div', 'code-block');
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
}

function renderChrome(): void {
  const running = isRunning(state);
  cancelBtn.disabled = !running;
  const ready = serverState === 'running';
  sendBtn.disabled = !ready;
  escalateBtn.disabled = !ready;
  adviseBtn.disabled = !ready || running;
  // the session's goal is not shown as a line over the chat: milk keeps the first request as
  // the goal until one asks for a change, so a line there went stale over later topics.
  // It is what an empty Escalate hands Claude, so Escalate says it.
  const need = state.need;
  escalateBtn.title = need
    ? `Hand this session to Claude: with the text above, or, with an empty box, to carry on with the session's goal: ${need}`
    : 'Hand this session to Claude (with the text above, if any)';
  renderRoute();
  const current = state.turns.filter((t) => t.status === 'running').pop();
  stateEl.textContent =
    serverState === 'starting'
      ? 'starting milk-lsp…'
      : serverState !== 'running'
        ? 'server not running'
        : running && current
          ? workingText(current).state
          : localModel
            ? `idle · ${localModel}`
            : 'idle';
  stateEl.dataset.state = running ? ((current && workingAgent(current)) ?? 'pending') : 'idle';
  deleteBtn.disabled = !activeId;
}

/** Where the next message goes, with the way back to the local model. */
function renderRoute(): void {
  routeEl.textContent = '';
  const toClaude = nextRoute?.agent === 'claude' && routeOverride !== 'local';
  routeEl.hidden = !nextRoute && !routeOverride;
  routeEl.dataset.agent = routeOverride === 'local' ? 'local' : (nextRoute?.agent ?? 'local');
  if (routeEl.hidden) return;
  if (routeOverride === 'local') {
    routeEl.append(el('span', 'route-text', 'Next message → local model (you chose it)'));
    if (nextRoute?.agent === 'claude') {
      const keep = el('button', 'secondary route-action', 'Keep Claude');
      keep.addEventListener('click', () => send({ type: 'keepRoute' }));
      routeEl.append(keep);
    }
    return;
  }
  const who = toClaude ? 'Claude' : 'local model';
  routeEl.append(el('span', 'route-text', `Next message → ${who}${nextRoute?.reason ? ` (${nextRoute.reason})` : ''}`));
  if (toClaude) {
    const back = el('button', 'secondary route-action', 'Back to local');
    back.id = 'back-to-local';
    back.title = 'Send the next message to the local model (it stops going to Claude)';
    back.addEventListener('click', () => send({ type: 'backToLocal' }));
    routeEl.append(back);
  }
}

function renderSessions(): void {
  sessionsSel.textContent = '';
  if (!activeId) {
    const o = el('option', undefined, sessions.length ? 'New session' : 'No sessions yet');
    o.value = '';
    sessionsSel.appendChild(o);
  }
  for (const s of sessions) {
    const o = el('option', undefined, `${sessionTitle(s)} · ${sessionDescription(s)}`);
    o.value = s.sessionId;
    o.title = s.currentNeed ? `Need: ${s.currentNeed}` : sessionTitle(s);
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
      state = m.data ? fromHistory(m.data, localModel) : emptyState(undefined, localModel);
      // the server's history has no chips: the ones this view kept
      if (restoreAttachments(saved, state).length && keepAttachments(saved, state)) persist();
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
      if (m.attachments?.length) {
        notePending(saved, m.text, m.attachments);
        persist();
      }
      renderChrome();
      // the user sent something: show it, even when scrolled up
      log.scrollTop = log.scrollHeight;
      break;
    case 'update': {
      if (!state.session && m.update.sessionId) {
        // first turn of a new session: the server named it
        activeId = m.update.sessionId;
      }
      const t = applyUpdate(state, m.update);
      if (t) renderTurn(t);
      if (m.update.kind === 'turn_started' && keepAttachments(saved, state)) persist();
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
    case 'meta': {
      const wasStarting = serverState !== 'running' && !state.turns.length;
      localModel = m.localModel;
      state.localModel = m.localModel;
      const named = nameLocalModel(state, m.localModel);
      if (named) renderTurn(named);
      workspaceFolder = m.workspaceFolder;
      folderBtn.hidden = !m.folder;
      folderBtn.textContent = m.folder ? `${m.folder} ▾` : '';
      serverState = m.serverState;
      problemEl.hidden = !(m.serverState === 'failed' && m.problem);
      problemEl.textContent = m.problem ?? '';
      if (wasStarting && !state.turns.length) renderAll();
      renderChrome();
      break;
    }
    case 'route':
      nextRoute = m.nextRoute;
      routeOverride = m.override;
      renderChrome();
      break;
    case 'undone': {
      const t = markUndone(state, m.turnId);
      if (t) renderTurn(t);
      break;
    }
    case 'asking': {
      const t = markAsking(state, m.turnId, m.toolCallId);
      if (t) renderTurn(t);
      break;
    }
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
  sent.add(text);
  persist();
  send({ type: 'send', text });
}

function showRecalled(text: string): void {
  input.value = text;
  // the caret at the end, as a shell puts it
  input.setSelectionRange(text.length, text.length);
}

input.addEventListener('keydown', (e) => {
  const action = inputKeyAction(e, input, { running: isRunning(state), browsing: sent.browsing });
  switch (action) {
    case 'send':
      e.preventDefault();
      submit();
      break;
    case 'cancel':
      // the Cancel button's message
      e.preventDefault();
      send({ type: 'cancel' });
      break;
    case 'older': {
      const text = sent.older(input.value);
      if (text === undefined) break;
      e.preventDefault();
      showRecalled(text);
      break;
    }
    case 'newer': {
      const text = sent.newer();
      if (text === undefined) break;
      e.preventDefault();
      showRecalled(text);
      break;
    }
  }
});
input.addEventListener('input', () => sent.stopBrowsing());
sendBtn.addEventListener('click', submit);
/** The input box's text for a button that sends it (kept for ↑), the box emptied. */
function takeInput(): string | undefined {
  const text = input.value.trim();
  input.value = '';
  if (text) {
    sent.add(text);
    persist();
  }
  return text || undefined;
}
escalateBtn.addEventListener('click', () => send({ type: 'escalate', text: takeInput() }));
adviseBtn.addEventListener('click', () => send({ type: 'advise', text: takeInput() }));
cancelBtn.addEventListener('click', () => send({ type: 'cancel' }));
folderBtn.addEventListener('click', () => send({ type: 'chooseFolder' }));
newBtn.addEventListener('click', () => send({ type: 'newSession' }));
deleteBtn.addEventListener('click', () => {
  if (activeId) send({ type: 'deleteSession', sessionId: activeId });
});
sessionsSel.addEventListener('change', () => {
  if (sessionsSel.value) send({ type: 'switchSession', sessionId: sessionsSel.value });
});
// file names open in the editor (a cited source with its lines selected); links in model
// output open outside, through the extension (http(s)/mailto only)
log.addEventListener('click', (e) => {
  const a = (e.target as HTMLElement).closest('a');
  if (!a) return;
  e.preventDefault();
  if (a.classList.contains('file-link')) {
    const line = a.dataset.line ? Number(a.dataset.line) : undefined;
    const endLine = a.dataset.endLine ? Number(a.dataset.endLine) : undefined;
    send({ type: 'openFile', path: a.dataset.path ?? '', line, endLine });
    return;
  }
  const href = a.getAttribute('href');
  if (href) send({ type: 'openLink', href });
});

renderAll();
send({ type: 'ready' });

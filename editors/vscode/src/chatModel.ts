// The chat transcript as data: built from `milk/session/get` history and kept up to date by
// `milk/update` notifications and `milk/chat` results. Shared by the webview (which renders
// it) and the unit tests. No `vscode` import, no DOM.

import type {
  AgentName,
  ChangeSummary,
  Citation,
  EscalationMode,
  PlanStep,
  SessionGetResult,
  SessionInfo,
  ToolCallRecord,
  ToolStatus,
  TurnInfo,
  TurnError,
  TurnRecord,
  TurnResult,
  Update,
  Usage,
} from './methods';
import { vscodeSettingNames } from './config';
import { displayPath } from './paths';

export interface ToolView {
  toolCallId: string;
  agent: AgentName;
  name: string;
  input: Record<string, unknown>;
  status: ToolStatus;
  output?: string;
  isError?: boolean;
}

export interface EscalationView {
  by?: 'user' | 'agent' | 'fallback';
  reason?: string;
  mode?: EscalationMode | string | null;
  contextChars?: number | null;
}

export type Block =
  /** `model`: the local model that answered, frozen when the badge was made */
  | { key: string; kind: 'agent'; agent: AgentName; reason?: string; model?: string }
  | { key: string; kind: 'text'; agent: AgentName; text: string }
  | { key: string; kind: 'thinking'; agent: AgentName; text: string }
  | { key: string; kind: 'tool'; tool: ToolView }
  | ({ key: string; kind: 'escalation' } & EscalationView)
  | { key: string; kind: 'notice'; severity: 'info' | 'warning' | 'error'; message: string }
  /** an advisor turn's plan: Claude's checklist, its steps ticked as they are done */
  | { key: string; kind: 'plan'; steps: PlanStep[] };

export type TurnStatus = 'running' | 'ok' | 'cancelled' | 'error' | 'max_turns';

export interface TurnView {
  turnId: string;
  /** true until turn_started told us the server's turn id */
  pending: boolean;
  userText?: string;
  /** short labels of attached context items (file names) */
  attachments?: string[];
  /** where the message was asked when another door runs the turn ('the terminal') */
  askedIn?: string;
  blocks: Block[];
  agent?: AgentName;
  route?: string;
  status: TurnStatus;
  usage?: Usage;
  error?: { reason: string; message: string; signal?: string };
  escalated?: { by: 'user' | 'agent' | 'fallback'; reason: string };
  /** the files the turn changed (the `changes` update, the result, or the stored turn info) */
  changes?: ChangeSummary[];
  /** the turn's changes were undone */
  undone?: boolean;
  /** the places a verified local answer cites (the `citations` update): the quotes its
   * Sources links show; the links themselves come from the answer's text */
  citations?: Citation[];
  /** a permission question is open for this tool call (the dialog or the diff review) */
  asking?: string;
  lastSeq: number;
  /** an update was missed (seq jumped); the transcript should be reloaded after the turn */
  gap: boolean;
  nextKey: number;
}

export interface ChatState {
  session?: SessionInfo;
  need?: string;
  turns: TurnView[];
  pendingCounter: number;
  /** the local model now: new local badges keep the name they were made with */
  localModel?: string;
}

export function emptyState(session?: SessionInfo, localModel?: string): ChatState {
  return { session, need: session?.currentNeed ?? undefined, turns: [], pendingCounter: 0, localModel };
}

function newTurn(turnId: string, pending: boolean): TurnView {
  return { turnId, pending, blocks: [], status: 'running', lastSeq: 0, gap: false, nextKey: 0 };
}

function key(turn: TurnView): string {
  return `b${turn.nextKey++}`;
}

function recordStatus(status: TurnRecord['status']): TurnStatus {
  return status === 'ok' ? 'ok' : status;
}

function stopStatus(stop: TurnInfo['stopReason']): TurnStatus {
  return stop === 'end_turn' ? 'ok' : stop;
}

/** Build the transcript from `milk/session/get` (with `turnInfo`: equal to the live view). */
export function fromHistory(result: SessionGetResult, localModel?: string): ChatState {
  const state = emptyState(result.session, localModel);
  state.need = result.bricks?.currentNeed || result.session.currentNeed || undefined;
  const infos = new Map((result.turnInfo ?? []).map((i) => [i.turnId, i]));
  const byId = new Map<string, TurnView>();
  for (const rec of result.turns) {
    let turn = byId.get(rec.turnId);
    if (!turn) {
      turn = newTurn(rec.turnId, false);
      turn.status = recordStatus(rec.status);
      byId.set(rec.turnId, turn);
      state.turns.push(turn);
    }
    if (rec.role === 'user') {
      turn.userText = rec.text;
      continue;
    }
    const info = infos.get(rec.turnId);
    if (rec.agent === 'claude' && !turn.blocks.some((b) => b.kind === 'escalation')) {
      // the banner above Claude's badge, as it was shown live
      if (turn.agent === 'local' || info?.escalated) turn.blocks.push({ key: key(turn), kind: 'escalation', ...escalationOf(info) });
    }
    turn.agent = rec.agent;
    // the model that answered then (when the server stored it), never the current one; the
    // turn's first badge says why the turn went there, as it did live
    const model = rec.agent === 'local' ? (info?.model ?? undefined) : undefined;
    const first = !turn.blocks.some((b) => b.kind === 'agent');
    turn.blocks.push({ key: key(turn), kind: 'agent', agent: rec.agent, model, reason: first ? (info?.routeReason ?? undefined) : undefined });
    const pieces = inShownOrder(rec);
    if (pieces) {
      for (const p of pieces) {
        if (typeof p === 'string') turn.blocks.push({ key: key(turn), kind: 'text', agent: rec.agent, text: p });
        else turn.blocks.push({ key: key(turn), kind: 'tool', tool: toolOf(p, rec.agent) });
      }
    } else {
      // stored by an older server: where the calls stood in the text is unknown
      for (const tc of rec.toolCalls ?? []) turn.blocks.push({ key: key(turn), kind: 'tool', tool: toolOf(tc, rec.agent) });
      if (rec.text) turn.blocks.push({ key: key(turn), kind: 'text', agent: rec.agent, text: rec.text });
    }
    // an advisor turn: its checklist under Claude's plan, as live
    if (rec.agent === 'claude' && info?.plan?.length && !turn.blocks.some((b) => b.kind === 'plan')) {
      turn.blocks.push({ key: key(turn), kind: 'plan', steps: info.plan });
    }
  }
  for (const turn of state.turns) {
    const info = infos.get(turn.turnId);
    if (!info) continue;
    turn.status = stopStatus(info.stopReason);
    if (info.usage) turn.usage = info.usage;
    if (info.error) turn.error = turnError(info.error);
    if (info.escalated) {
      turn.escalated = { by: info.escalated.by, reason: info.escalated.reason };
      // an escalation that never got an answer (Claude failed at once) still shows its banner
      if (!turn.blocks.some((b) => b.kind === 'escalation')) turn.blocks.push({ key: key(turn), kind: 'escalation', ...escalationOf(info) });
    }
    if (!turn.blocks.some((b) => b.kind === 'agent')) {
      // the turn failed before its agent said anything: live, it still had its badge (under
      // the banner when Claude ran it from the start)
      const badge: Block = {
        key: key(turn),
        kind: 'agent',
        agent: info.agent,
        model: info.agent === 'local' ? (info.model ?? undefined) : undefined,
        reason: info.routeReason ?? undefined,
      };
      const banner = turn.blocks.findIndex((b) => b.kind === 'escalation');
      turn.blocks.splice(banner >= 0 && info.agent === 'claude' ? banner + 1 : 0, 0, badge);
    }
    for (const n of info.notices ?? []) turn.blocks.push({ key: key(turn), kind: 'notice', severity: n.severity, message: vscodeSettingNames(n.message) });
    if (info.changes?.length) turn.changes = info.changes;
    if (info.undone) turn.undone = true;
    turn.agent = info.agent;
  }
  return state;
}

function toolOf(tc: ToolCallRecord, agent: AgentName): ToolView {
  const failed = tc.isError === true;
  const status: ToolStatus = tc.status ?? (tc.output === undefined || tc.output === null ? 'completed' : failed ? 'failed' : 'completed');
  return {
    toolCallId: tc.toolCallId,
    agent,
    name: tc.name,
    input: tc.input ?? {},
    status,
    output: tc.output ?? undefined,
    isError: tc.isError ?? undefined,
  };
}

/**
 * A record's text and tool calls in the order the live view showed them (`segments`): text
 * pieces (adjacent ones joined) and calls. Undefined when the record has no segments (an
 * older server) or they do not account for the record exactly (every call once, the texts
 * joined equal to `text`): then nothing may be lost, and the caller keeps the old layout.
 */
export function inShownOrder(rec: TurnRecord): (string | ToolCallRecord)[] | undefined {
  if (!Array.isArray(rec.segments) || !rec.segments.length) return undefined;
  const unplaced = [...(rec.toolCalls ?? [])];
  const pieces: (string | ToolCallRecord)[] = [];
  let text = '';
  for (const seg of rec.segments) {
    if (typeof seg?.toolCallId === 'string') {
      const at = unplaced.findIndex((tc) => tc.toolCallId === seg.toolCallId);
      if (at < 0) return undefined;
      pieces.push(unplaced.splice(at, 1)[0]);
    } else if (typeof seg?.text === 'string') {
      text += seg.text;
      if (!seg.text) continue;
      const last = pieces.length - 1;
      if (typeof pieces[last] === 'string') pieces[last] += seg.text;
      else pieces.push(seg.text);
    } else {
      return undefined;
    }
  }
  if (unplaced.length || text !== rec.text) return undefined;
  return pieces;
}

function escalationOf(info: TurnInfo | undefined): EscalationView {
  const e = info?.escalated;
  if (!e) return {};
  return { by: e.by, reason: e.reason, mode: e.mode ?? undefined, contextChars: e.contextChars ?? undefined };
}

/** The user's message appears at once, before the server has named the turn. */
export function addUserMessage(state: ChatState, text: string, attachments?: string[]): TurnView {
  const turn = newTurn(`pending-${++state.pendingCounter}`, true);
  turn.userText = text;
  if (attachments?.length) turn.attachments = attachments;
  state.turns.push(turn);
  return turn;
}

function findTurn(state: ChatState, turnId: string): TurnView | undefined {
  for (let i = state.turns.length - 1; i >= 0; i--) if (state.turns[i].turnId === turnId) return state.turns[i];
  return undefined;
}

/** The front doors an `elsewhere` turn can be asked in, as the chat names them. */
const DOORS: Record<string, string> = {
  terminal: 'the terminal (milk-lsp chat)',
  nvim: 'Neovim',
  vscode: 'another VS Code window',
  lsp: 'another editor',
  acp: 'an ACP client',
};

/** turn_started for a turn we do not know: adopt the oldest pending turn, else start one. */
function adoptTurn(state: ChatState, turnId: string): TurnView {
  const pending = state.turns.find((t) => t.pending);
  if (pending) {
    pending.turnId = turnId;
    pending.pending = false;
    return pending;
  }
  const turn = newTurn(turnId, false);
  state.turns.push(turn);
  return turn;
}

function ensureAgentHeader(state: ChatState, turn: TurnView, agent: AgentName, reason?: string): void {
  if (turn.agent === agent && turn.blocks.some((b) => b.kind === 'agent')) return;
  turn.agent = agent;
  const model = agent === 'local' ? state.localModel : undefined;
  turn.blocks.push({ key: key(turn), kind: 'agent', agent, reason, model });
}

function findTool(turn: TurnView, toolCallId: string): ToolView | undefined {
  for (const b of turn.blocks) if (b.kind === 'tool' && b.tool.toolCallId === toolCallId) return b.tool;
  return undefined;
}

function addUsage(a: Usage | undefined, b: Usage): Usage {
  const sum = (x?: number | null, y?: number | null) =>
    x == null && y == null ? undefined : (x ?? 0) + (y ?? 0);
  return {
    inputTokens: (a?.inputTokens ?? 0) + (b.inputTokens ?? 0),
    outputTokens: (a?.outputTokens ?? 0) + (b.outputTokens ?? 0),
    cacheReadTokens: sum(a?.cacheReadTokens, b.cacheReadTokens),
    cacheCreationTokens: sum(a?.cacheCreationTokens, b.cacheCreationTokens),
    costUsd: sum(a?.costUsd, b.costUsd),
  };
}

/**
 * Apply one `milk/update`. Returns the turn it changed, or undefined when the update was
 * ignored (another session, or a repeated seq).
 */
export function applyUpdate(state: ChatState, u: Update): TurnView | undefined {
  if (state.session && u.sessionId !== state.session.sessionId) return undefined;
  let turn = findTurn(state, u.turnId);
  if (!turn) {
    if (u.elsewhere || (u.kind !== 'turn_started' && !state.turns.some((t) => t.pending))) {
      turn = newTurn(u.turnId, false);
      state.turns.push(turn);
    } else {
      turn = adoptTurn(state, u.turnId);
    }
  }
  if (u.seq <= turn.lastSeq) return undefined;
  if (u.seq !== turn.lastSeq + 1) turn.gap = true;
  turn.lastSeq = u.seq;

  switch (u.kind) {
    case 'turn_started':
      turn.status = 'running';
      turn.route = u.route;
      if (u.elsewhere) {
        turn.userText = u.userText ?? '';
        turn.askedIn = DOORS[u.door ?? ''] ?? 'another door';
      }
      ensureAgentHeader(state, turn, u.agent, u.reason);
      break;
    case 'text':
    case 'thinking': {
      if (!u.delta) break;
      ensureAgentHeader(state, turn, u.agent);
      const last = turn.blocks[turn.blocks.length - 1];
      if (last && last.kind === u.kind && last.agent === u.agent) last.text += u.delta;
      else turn.blocks.push({ key: key(turn), kind: u.kind, agent: u.agent, text: u.delta });
      break;
    }
    case 'tool_call': {
      const existing = findTool(turn, u.toolCallId);
      if (existing) {
        existing.status = u.status;
        if (u.input && Object.keys(u.input).length) existing.input = u.input;
      } else {
        ensureAgentHeader(state, turn, u.agent);
        turn.blocks.push({
          key: key(turn),
          kind: 'tool',
          tool: { toolCallId: u.toolCallId, agent: u.agent, name: u.name, input: u.input ?? {}, status: u.status },
        });
      }
      break;
    }
    case 'tool_result': {
      let tool = findTool(turn, u.toolCallId);
      if (!tool) {
        tool = { toolCallId: u.toolCallId, agent: u.agent, name: 'tool', input: {}, status: 'completed' };
        turn.blocks.push({ key: key(turn), kind: 'tool', tool });
      }
      tool.output = u.output;
      tool.isError = u.isError;
      if (tool.status === 'pending' || tool.status === 'running') tool.status = u.isError ? 'failed' : 'completed';
      break;
    }
    case 'escalated': {
      turn.escalated = { by: u.by, reason: u.reason };
      const banner: Block = {
        key: key(turn),
        kind: 'escalation',
        by: u.by,
        reason: u.reason,
        mode: u.mode,
        contextChars: u.contextChars,
      };
      const last = turn.blocks[turn.blocks.length - 1];
      if (last && last.kind === 'agent' && last.agent === 'claude') {
        // a turn that Claude runs from its start: the banner goes above Claude's badge
        turn.blocks.splice(turn.blocks.length - 1, 0, banner);
      } else {
        turn.blocks.push(banner);
        turn.agent = undefined; // the next speaker (Claude) gets its own badge
      }
      break;
    }
    case 'need':
      state.need = u.currentNeed;
      if (state.session) state.session.currentNeed = u.currentNeed;
      break;
    case 'usage':
      turn.usage = addUsage(turn.usage, u);
      break;
    case 'notice':
      // the turn's failure: shown once, as the error card under the turn (the result names it)
      if (u.severity === 'error' && !turn.error) turn.error = { reason: '', message: u.message };
      else turn.blocks.push({ key: key(turn), kind: 'notice', severity: u.severity, message: u.message });
      break;
    case 'changes':
      turn.changes = u.changes;
      break;
    case 'citations':
      // no block of its own: the text already ends with the Sources block, shown as links
      if (Array.isArray(u.citations)) turn.citations = u.citations;
      break;
    case 'plan': {
      const shown = turn.blocks.find((b) => b.kind === 'plan');
      if (shown && shown.kind === 'plan') shown.steps = u.steps;
      else turn.blocks.push({ key: key(turn), kind: 'plan', steps: u.steps });
      break;
    }
    case 'turn_ended':
      turn.status = u.stopReason === 'end_turn' ? 'ok' : u.stopReason;
      turn.asking = undefined;
      for (const b of turn.blocks) {
        if (b.kind === 'tool' && (b.tool.status === 'pending' || b.tool.status === 'running') && u.stopReason !== 'end_turn') {
          b.tool.status = u.stopReason === 'cancelled' ? 'cancelled' : 'failed';
        }
      }
      break;
  }
  return turn;
}

/** Apply the `milk/chat` / `milk/escalate` result (sent after turn_ended). */
export function applyResult(state: ChatState, r: TurnResult): TurnView | undefined {
  if (state.session && r.sessionId !== state.session.sessionId) return undefined;
  let turn = findTurn(state, r.turnId);
  if (!turn) {
    turn = adoptTurn(state, r.turnId);
    if (r.text) turn.blocks.push({ key: key(turn), kind: 'text', agent: r.agent, text: r.text });
  }
  turn.status = r.stopReason === 'end_turn' ? 'ok' : r.stopReason;
  if (r.usage) turn.usage = r.usage;
  if (r.error) {
    // an error notice of another failure stays a notice
    if (turn.error && turn.error.message !== r.error.message) {
      turn.blocks.push({ key: key(turn), kind: 'notice', severity: 'error', message: turn.error.message });
    }
    turn.error = turnError(r.error);
  }
  if (r.escalated) turn.escalated = r.escalated;
  if (r.changes?.length) turn.changes = r.changes;
  turn.agent = r.agent;
  return turn;
}

/**
 * The local model became known (the status was read again after a turn that worked while the
 * model had been unreachable): the newest turn's local badges, made without a name, get it,
 * as the turn's stored info has it. A turn whose local part said nothing keeps its badge.
 */
export function nameLocalModel(state: ChatState, model: string | undefined): TurnView | undefined {
  const turn = state.turns[state.turns.length - 1];
  if (!model || !turn || turn.status !== 'ok') return undefined;
  const answered = turn.blocks.some((b) => (b.kind === 'text' || b.kind === 'tool') && (b.kind === 'text' ? b.agent : b.tool.agent) === 'local');
  let named = false;
  for (const b of turn.blocks) {
    if (b.kind === 'agent' && b.agent === 'local' && !b.model && answered) {
      b.model = model;
      named = true;
    }
  }
  return named ? turn : undefined;
}

/** The turn's changes were undone (milk/turn/undo answered). */
export function markUndone(state: ChatState, turnId: string): TurnView | undefined {
  const turn = findTurn(state, turnId);
  if (turn) turn.undone = true;
  return turn;
}

/** A permission question for `toolCallId` opened (or closed: undefined). */
export function markAsking(state: ChatState, turnId: string, toolCallId: string | undefined): TurnView | undefined {
  const turn = findTurn(state, turnId);
  if (turn) turn.asking = toolCallId;
  return turn;
}

/** A request failed before any turn started (e.g. session_busy): mark the pending turn. */
export function failPending(state: ChatState, message: string, reason = 'request_failed'): TurnView | undefined {
  const turn = state.turns.find((t) => t.pending);
  if (!turn) return undefined;
  turn.pending = false;
  turn.turnId = `failed-${state.pendingCounter}`;
  turn.status = 'error';
  turn.error = { reason, message };
  return turn;
}

export function isRunning(state: ChatState): boolean {
  return state.turns.some((t) => t.status === 'running');
}

/**
 * Who works on a running turn now: Claude from the hand-off on (the `escalated` update),
 * even before Claude's first word; undefined while the server has not started the turn.
 */
export function workingAgent(turn: Pick<TurnView, 'status' | 'agent' | 'escalated'>): AgentName | undefined {
  if (turn.status !== 'running') return undefined;
  return turn.agent ?? (turn.escalated ? 'claude' : undefined);
}

/** The running turn's line under it and the chat's state line. */
export function workingText(turn: Pick<TurnView, 'status' | 'agent' | 'escalated'>): { turn: string; state: string } {
  switch (workingAgent(turn)) {
    case 'claude':
      return { turn: 'Claude is working…', state: 'Claude is answering…' };
    case 'local':
      return { turn: 'local model is working…', state: 'local model is answering…' };
    default:
      return { turn: 'waiting for the server…', state: 'waiting for the server…' };
  }
}

// ---- formatting helpers shared by the webview and the extension -------------------------

export function formatUsage(u: Usage | undefined): string {
  if (!u) return '';
  const n = (x: number) => x.toLocaleString('en-US');
  const parts = [`${n(u.inputTokens ?? 0)} in`, `${n(u.outputTokens ?? 0)} out`];
  if (u.cacheReadTokens) parts.push(`${n(u.cacheReadTokens)} cache read`);
  if (u.cacheCreationTokens) parts.push(`${n(u.cacheCreationTokens)} cache write`);
  let s = `${parts.join(' · ')} tokens`;
  if (u.costUsd != null) s += ` · $${u.costUsd === 0 ? '0' : u.costUsd < 1 ? u.costUsd.toFixed(4) : u.costUsd.toFixed(2)}`;
  return s;
}

export function agentLabel(agent: AgentName, localModel?: string | null): string {
  if (agent === 'claude') return 'Claude';
  return localModel ? `local · ${localModel}` : 'local';
}

/** One-line summary of a tool call's input, e.g. `echo hi` for a command; a file inside the
 * workspace by its relative path, as the permission question names it. */
export function toolSummary(tool: Pick<ToolView, 'name' | 'input'>, workspaceFolder?: string): string {
  const input = tool.input ?? {};
  for (const k of ['command', 'cmd', 'file_path', 'notebook_path', 'path', 'pattern', 'query', 'url']) {
    const v = (input as Record<string, unknown>)[k];
    if (typeof v === 'string' && v) return oneLine(k.endsWith('path') ? displayPath(v, workspaceFolder) : v, 120);
  }
  const json = JSON.stringify(input);
  return json === '{}' ? '' : oneLine(json, 120);
}

export function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `2,515` → `2.5k` */
export function shortCount(n: number): string {
  if (n < 1000) return String(n);
  if (n < 10000) return `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  return `${Math.round(n / 1000)}k`;
}

const MODE_WORDS: Record<string, string> = {
  first: 'a new Claude conversation',
  resume: "Claude's conversation, resumed",
  returning: "back in Claude's conversation, with what happened since",
  fresh: 'a fresh Claude conversation',
};

/** The escalation banner in plain words: who, why, and what Claude was given. */
export function escalationText(b: EscalationView): string {
  const who = b.by === 'user' ? 'you' : b.by === 'agent' ? 'the local agent' : undefined;
  let s = who
    ? `Escalated to Claude by ${who}`
    : b.by === 'fallback'
      ? 'The local model failed; handed to Claude'
      : 'Handed to Claude';
  if (b.reason) s += `: ${b.reason}`;
  const extra: string[] = [];
  if (b.contextChars != null) extra.push(`sent with a ${shortCount(b.contextChars)}-char summary`);
  if (b.mode && MODE_WORDS[b.mode]) extra.push(MODE_WORDS[b.mode]);
  if (extra.length) s += ` (${extra.join(', ')})`;
  return s;
}

const ROUTE_REASON_WORDS: Record<string, string> = {
  default: '',
  'user chose the local agent': 'you chose the local model',
  'user asked': 'you asked for Claude',
  'session escalated by the user': 'you sent this session to Claude',
  'session waiting on Claude': "answering Claude's question",
};

/** A `turn_started.reason` in plain words ('' when there is nothing worth saying). */
export function routeReasonText(reason: string | undefined): string {
  if (!reason) return '';
  return reason in ROUTE_REASON_WORDS ? ROUTE_REASON_WORDS[reason] : reason;
}

/** `5 min ago`, `yesterday`, `3 days ago`, or the date. */
export function relativeTime(iso: string | undefined, now: number = Date.now()): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 45) return 'just now';
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min ago`;
  const h = Math.round(min / 60);
  if (h < 24) return `${h} hour${h === 1 ? '' : 's'} ago`;
  const d = Math.round(h / 24);
  if (d === 1) return 'yesterday';
  if (d < 30) return `${d} days ago`;
  return new Date(t).toISOString().slice(0, 10);
}

/** How a session is named in lists: its title, never its id. */
export function sessionTitle(s: Pick<SessionInfo, 'title' | 'currentNeed'>): string {
  return s.title?.trim() || s.currentNeed?.trim() || 'New session';
}

/** `3 messages · Claude · 5 min ago` */
export function sessionDescription(s: Pick<SessionInfo, 'turnCount' | 'activeAgent' | 'updatedAt'>, now?: number): string {
  const parts = [s.turnCount ? `${s.turnCount} message${s.turnCount === 1 ? '' : 's'}` : 'empty'];
  if (s.activeAgent === 'claude') parts.push('Claude');
  const when = relativeTime(s.updatedAt, now);
  if (when) parts.push(when);
  return parts.join(' · ');
}

const CUT_LINE = /\n?… \(cut: (\d+) more characters?\)\n?$/;

/** Tool output and the note that the server cut it (its last line `… (cut: N more characters)`). */
export function splitToolOutput(output: string): { text: string; cut?: string } {
  const m = CUT_LINE.exec(output);
  if (m) return { text: output.slice(0, m.index), cut: `… cut, ${Number(m[1]).toLocaleString('en-US')} more characters` };
  return { text: output };
}

/** `2 files changed` and `a.py +3 −1, b.py (new) +10` for the turn's changes line. */
export function changesText(changes: ChangeSummary[], workspaceFolder?: string): { head: string; files: string } {
  const n = changes.length;
  const head = `${n} file${n === 1 ? '' : 's'} changed`;
  const files = changes
    .map((c) => {
      const name = displayPath(c.uri, workspaceFolder);
      const what = c.kind === 'created' ? ' (new)' : c.kind === 'deleted' ? ' (deleted)' : '';
      const counts = [c.added ? `+${c.added}` : '', c.removed ? `−${c.removed}` : ''].filter(Boolean).join(' ');
      return `${name}${what}${counts ? ` ${counts}` : ''}`;
    })
    .join(', ');
  return { head, files };
}

export type ErrorAction = 'openSettings' | 'retry' | 'doctor' | 'showLog';

/** A turn's error as the chat keeps it: the signal only when there is one. */
function turnError(e: TurnError): { reason: string; message: string; signal?: string } {
  const signal = e.data?.signal;
  return signal ? { reason: e.reason, message: e.message, signal } : { reason: e.reason, message: e.message };
}

/** Signals of a model server that failed: its settings and Doctor may help. Any other signal
 * is milk's verdict on what a working model did (a guess, an edit not made, a denied edit):
 * there the settings and Doctor are beside the point, and Retry is what fits. */
const SERVER_SIGNALS = new Set(['model_unreachable', 'model_error', 'context_overflow']);

/** The actions an error card offers, by the failure's reason and, for a local part that
 * ended on a hand-off signal, by that signal. */
export function errorActions(reason: string, signal?: string): ErrorAction[] {
  if (reason === 'local_failed' && signal && !SERVER_SIGNALS.has(signal)) return ['retry'];
  switch (reason) {
    case 'local_unreachable':
    case 'local_failed':
    case 'claude_not_found':
      return ['openSettings', 'retry', 'doctor'];
    case 'claude_not_logged_in':
      return ['doctor', 'retry'];
    case 'storage_failed':
      return ['openSettings', 'doctor'];
    case 'session_busy':
      return [];
    case 'claude_failed':
    case 'internal':
      return ['retry', 'showLog'];
    default:
      return ['retry'];
  }
}

/** The setting an error card's Open Settings shows: the first `milk.*` name in the message,
 * else the one setting behind the reason (never a whole group to search through). */
export function errorSetting(reason: string, message: string): string {
  const named = /\bmilk\.[A-Za-z]+(?:\.[A-Za-z]+)?/.exec(message);
  if (named) return named[0];
  if (reason === 'tool_rounds_exceeded') return 'milk.local.maxToolRounds';
  if (reason.startsWith('local')) return 'milk.local.baseUrl';
  if (reason.startsWith('claude')) return 'milk.claude.path';
  if (reason === 'storage_failed') return 'milk.storageDir';
  return 'milk';
}

/** A call milk stopped before it ran (its output starts `not run:`): not a failure of the tool. */
export function notRun(tool: Pick<ToolView, 'status' | 'output'>): boolean {
  return tool.status === 'failed' && /^not run\b/.test(tool.output ?? '');
}

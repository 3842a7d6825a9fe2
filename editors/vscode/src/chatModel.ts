// The chat transcript as data: built from `milk/session/get` history and kept up to date by
// `milk/update` notifications and `milk/chat` results. Shared by the webview (which renders
// it) and the unit tests. No `vscode` import, no DOM.

import type {
  AgentName,
  SessionGetResult,
  SessionInfo,
  ToolStatus,
  TurnRecord,
  TurnResult,
  Update,
  Usage,
} from './methods';

export interface ToolView {
  toolCallId: string;
  agent: AgentName;
  name: string;
  input: Record<string, unknown>;
  status: ToolStatus;
  output?: string;
  isError?: boolean;
}

export type Block =
  | { key: string; kind: 'agent'; agent: AgentName; reason?: string }
  | { key: string; kind: 'text'; agent: AgentName; text: string }
  | { key: string; kind: 'thinking'; agent: AgentName; text: string }
  | { key: string; kind: 'tool'; tool: ToolView }
  | { key: string; kind: 'escalation'; by?: 'user' | 'agent' | 'fallback'; reason?: string; mode?: string; contextChars?: number }
  | { key: string; kind: 'notice'; severity: 'info' | 'warning' | 'error'; message: string };

export type TurnStatus = 'running' | 'ok' | 'cancelled' | 'error' | 'max_turns';

export interface TurnView {
  turnId: string;
  /** true until turn_started told us the server's turn id */
  pending: boolean;
  userText?: string;
  /** short labels of attached context items (file names) */
  attachments?: string[];
  blocks: Block[];
  agent?: AgentName;
  route?: string;
  status: TurnStatus;
  usage?: Usage;
  error?: { reason: string; message: string };
  escalated?: { by: 'user' | 'agent' | 'fallback'; reason: string };
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
}

export function emptyState(session?: SessionInfo): ChatState {
  return { session, need: session?.currentNeed ?? undefined, turns: [], pendingCounter: 0 };
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

/** Build the transcript from `milk/session/get`. */
export function fromHistory(result: SessionGetResult): ChatState {
  const state = emptyState(result.session);
  state.need = result.bricks?.currentNeed || result.session.currentNeed || undefined;
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
    if (turn.agent && turn.agent !== rec.agent && rec.agent === 'claude') {
      turn.blocks.push({ key: key(turn), kind: 'escalation' });
    }
    turn.agent = rec.agent;
    turn.blocks.push({ key: key(turn), kind: 'agent', agent: rec.agent });
    for (const tc of rec.toolCalls ?? []) {
      const failed = tc.isError === true;
      turn.blocks.push({
        key: key(turn),
        kind: 'tool',
        tool: {
          toolCallId: tc.toolCallId,
          agent: rec.agent,
          name: tc.name,
          input: tc.input ?? {},
          status: tc.output === undefined || tc.output === null ? 'completed' : failed ? 'failed' : 'completed',
          output: tc.output ?? undefined,
          isError: tc.isError ?? undefined,
        },
      });
    }
    if (rec.text) turn.blocks.push({ key: key(turn), kind: 'text', agent: rec.agent, text: rec.text });
  }
  return state;
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

function ensureAgentHeader(turn: TurnView, agent: AgentName, reason?: string): void {
  if (turn.agent === agent && turn.blocks.some((b) => b.kind === 'agent')) return;
  turn.agent = agent;
  turn.blocks.push({ key: key(turn), kind: 'agent', agent, reason });
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
    if (u.kind !== 'turn_started' && !state.turns.some((t) => t.pending)) {
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
      ensureAgentHeader(turn, u.agent, u.reason);
      break;
    case 'text':
    case 'thinking': {
      if (!u.delta) break;
      ensureAgentHeader(turn, u.agent);
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
        ensureAgentHeader(turn, u.agent);
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
      turn.blocks.push({ key: key(turn), kind: 'notice', severity: u.severity, message: u.message });
      break;
    case 'turn_ended':
      turn.status = u.stopReason === 'end_turn' ? 'ok' : u.stopReason;
      for (const b of turn.blocks) {
        if (b.kind === 'tool' && (b.tool.status === 'pending' || b.tool.status === 'running') && u.stopReason !== 'end_turn') {
          b.tool.status = u.stopReason === 'cancelled' ? 'denied' : 'failed';
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
  if (r.error) turn.error = r.error;
  if (r.escalated) turn.escalated = r.escalated;
  turn.agent = r.agent;
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

/** One-line summary of a tool call's input, e.g. `echo hi` for a command. */
export function toolSummary(tool: Pick<ToolView, 'name' | 'input'>): string {
  const input = tool.input ?? {};
  for (const k of ['command', 'cmd', 'file_path', 'path', 'pattern', 'query', 'url']) {
    const v = (input as Record<string, unknown>)[k];
    if (typeof v === 'string' && v) return oneLine(v, 120);
  }
  const json = JSON.stringify(input);
  return json === '{}' ? '' : oneLine(json, 120);
}

export function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function escalationText(b: { by?: 'user' | 'agent' | 'fallback'; reason?: string; mode?: string; contextChars?: number }): string {
  const who = b.by === 'user' ? 'you' : b.by === 'agent' ? 'the local agent' : undefined;
  let s = who
    ? `Escalated to Claude by ${who}`
    : b.by === 'fallback'
      ? 'The local model failed; handed to Claude'
      : 'Handed to Claude';
  if (b.reason) s += `: ${b.reason}`;
  const extra: string[] = [];
  if (b.mode) extra.push(`${b.mode} conversation`);
  if (b.contextChars != null) extra.push(`${b.contextChars.toLocaleString('en-US')} chars of context`);
  if (extra.length) s += ` (${extra.join(', ')})`;
  return s;
}

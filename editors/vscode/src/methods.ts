// The milk-lsp wire contract (shared/design/PROTOCOL.md, version 1), mirroring the server's
// milk_lsp/wire/. Nothing else in the extension spells a method name: handlers and requests
// use these constants. No `vscode` import here (used by the unit tests and the webview).

export const PROTOCOL_VERSION = 1;

export const Methods = {
  SESSION_NEW: 'milk/session/new',
  SESSION_LIST: 'milk/session/list',
  SESSION_GET: 'milk/session/get',
  SESSION_DELETE: 'milk/session/delete',
  CHAT: 'milk/chat',
  ESCALATE: 'milk/escalate',
  CANCEL: 'milk/cancel',
  CONTEXT: 'milk/context',
  STATUS: 'milk/status',
  /** the routing numbers of a workspace folder (`text`: them in a few lines) */
  STATS: 'milk/stats',
  /** the files a turn changed, whole (diff review) */
  TURN_CHANGES: 'milk/turn/changes',
  /** put back the files a turn changed */
  TURN_UNDO: 'milk/turn/undo',
  /** notification, server to client */
  UPDATE: 'milk/update',
  /** request, server to client */
  REQUEST_PERMISSION: 'milk/requestPermission',
} as const;

export type AgentName = 'local' | 'claude';
/** `advise` (issue 32): Claude writes a plan, the local model carries it out */
export type Route = 'auto' | 'local' | 'claude' | 'advise';
export type StopReason = 'end_turn' | 'cancelled' | 'error' | 'max_turns';
export type SessionState = 'routing' | 'local' | 'escalation' | 'escalation_waiting';
export type EscalationMode = 'first' | 'resume' | 'returning' | 'fresh';

/** LSP `Position` / `Range` (0-based, UTF-16 characters). */
export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

// ---- params ---------------------------------------------------------------------------

export interface SessionNewParams {
  workspaceFolder?: string;
  title?: string;
}
export interface SessionListParams {
  workspaceFolder?: string;
}
export interface SessionGetParams {
  sessionId: string;
  /** newest `limit` turns (default 50) */
  limit?: number;
}
export interface SessionIdParams {
  sessionId: string;
}
/** A file or selection the user attached; `text` is the editor's (possibly unsaved) content. */
export interface ContextItem {
  uri: string;
  range?: Range;
  text?: string;
}
export interface ChatParams {
  sessionId?: string;
  workspaceFolder?: string;
  text: string;
  route?: Route;
  context?: ContextItem[];
}
export interface EscalateParams {
  sessionId: string;
  /** with no text, Claude carries on with the current need */
  text?: string;
  /** shown in the `escalated` update and recorded on the turn */
  reason?: string;
}
export interface ContextParams {
  sessionId: string;
  reason?: string;
}
export interface TurnParams {
  sessionId: string;
  turnId: string;
}
export interface TurnUndoParams extends TurnParams {
  /** write the pre-images even when a file changed again after the turn */
  force?: boolean;
}

// ---- results --------------------------------------------------------------------------

export interface SessionInfo {
  sessionId: string;
  workspaceFolder: string;
  title: string;
  state: SessionState;
  activeAgent: AgentName;
  /** ISO 8601 UTC */
  createdAt: string;
  updatedAt: string;
  /** number of user messages */
  turnCount: number;
  currentNeed?: string | null;
  claudeSessionId?: string | null;
  /** where the next `milk/chat` with route `auto` goes, and why (plain words) */
  nextRoute?: NextRoute | null;
}
export interface NextRoute {
  agent: AgentName;
  reason: string;
}
export interface SessionListResult {
  sessions: SessionInfo[];
}
export interface ToolCallRecord {
  toolCallId: string;
  name: string;
  input: Record<string, unknown>;
  output?: string | null;
  isError?: boolean | null;
  /** the final status as shown live (turns stored by older servers have none) */
  status?: FinalToolStatus | null;
}
export type FinalToolStatus = 'completed' | 'failed' | 'denied' | 'cancelled';
export interface TurnRecord {
  turnId: string;
  role: 'user' | 'assistant';
  agent: AgentName;
  text: string;
  toolCalls?: ToolCallRecord[] | null;
  status: 'ok' | 'cancelled' | 'error';
  createdAt: string;
  /**
   * an assistant record with tool calls: its text cut where each call started, with the
   * calls in between, in the live order (records stored by older servers have none)
   */
  segments?: Segment[] | null;
}
/** One piece of an assistant record in the order it was shown: text, or a tool call. */
export interface Segment {
  text?: string | null;
  toolCallId?: string | null;
}
export interface Bricks {
  currentNeed: string;
  escalationBrief: string;
  lastLocalSummary: string;
  lastClaudeSummary: string;
}
export type ChangeKind = 'created' | 'modified' | 'deleted';
/** One file a turn changed, counted in lines. */
export interface ChangeSummary {
  uri: string;
  kind: ChangeKind;
  added: number;
  removed: number;
}
/** One file a turn changed, whole (`before` absent when created, `after` when deleted). */
export interface FileChange {
  uri: string;
  kind: ChangeKind;
  before?: string | null;
  after?: string | null;
  binary?: boolean | null;
  truncated?: boolean | null;
}
export interface TurnChangesResult {
  changes: FileChange[];
  undone?: boolean | null;
}
export interface TurnUndoResult {
  restored: string[];
}
export interface EscalatedInfo {
  by: 'user' | 'agent' | 'fallback';
  reason: string;
  mode?: EscalationMode | null;
  contextChars?: number | null;
}
/** How a stored turn ended, so a reloaded chat shows what the live one did. */
export interface TurnInfo {
  turnId: string;
  agent: AgentName;
  /** the local model that answered, when the server records it */
  model?: string | null;
  stopReason: StopReason;
  escalated?: EscalatedInfo | null;
  error?: TurnError | null;
  usage?: Usage | null;
  changes?: ChangeSummary[] | null;
  undone?: boolean | null;
  /** the `turn_started` reason, shown next to the first badge */
  routeReason?: string | null;
  /** the turn's notices other than its error, in order */
  notices?: { severity: 'info' | 'warning' | 'error'; message: string }[] | null;
  /** an advisor turn's plan, each step as it ended */
  plan?: PlanStep[] | null;
}
/** One step of an advisor turn's plan; `agent`: who did it (or is doing it) */
export interface PlanStep {
  content: string;
  status: 'pending' | 'in_progress' | 'completed' | 'failed';
  agent?: AgentName | null;
  /** Since issue 39: milk applied the step itself (Claude's exact replacement), agent 'local' */
  byMilk?: boolean | null;
}
export interface SessionGetResult {
  session: SessionInfo;
  turns: TurnRecord[];
  bricks: Bricks;
  /** for the returned turns stored by a server that records it */
  turnInfo?: TurnInfo[] | null;
}
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number | null;
  cacheCreationTokens?: number | null;
  costUsd?: number | null;
}
export interface TurnError {
  reason: string;
  message: string;
  /** `signal`: what the local part ended on (docs/protocol.md, "hand-off signals") */
  data?: { signal?: string } | null;
}
export interface TurnResult {
  sessionId: string;
  turnId: string;
  agent: AgentName;
  stopReason: StopReason;
  text: string;
  /** `signal` (a fallback): the hand-off signal, e.g. `model_unreachable` (docs/protocol.md) */
  escalated?: { by: 'user' | 'agent' | 'fallback'; reason: string; signal?: string | null } | null;
  usage?: Usage | null;
  error?: TurnError | null;
  /** the files the turn changed (left out when none) */
  changes?: ChangeSummary[] | null;
  nextRoute?: NextRoute | null;
  /** an advisor turn's plan, each step as it ended */
  plan?: PlanStep[] | null;
}
export interface ContextPreview {
  mode: EscalationMode;
  argv: string[];
  contextFile: string;
  userMessagePrefix: string;
  chars: { contextFile: number; userMessagePrefix: number };
}
export interface Status {
  version: string;
  local: {
    baseUrl: string;
    model?: string | null;
    reachable: boolean;
    error?: string | null;
    /** milk addition: the resolved `local.provider` */
    provider?: 'openai' | 'embedded' | null;
    loadState?: 'stopped' | 'loading' | 'running' | 'failed' | null;
  };
  claude: {
    path?: string | null;
    found: boolean;
    version?: string | null;
    error?: string | null;
    skipPermissions?: boolean | null;
  };
  storage: string;
}

export interface StatsParams {
  workspaceFolder?: string;
}
/** Where one local model's turns went (`total` sums every model). */
export interface ModelStats {
  model: string;
  answeredLocally: number;
  handedOff: number;
  handedOffBySignal: Record<string, number>;
  escalatedByUser: number;
  localEditsKept: number;
  localEditsUndone: number;
}
export interface Stats {
  workspaceFolder: string;
  total: ModelStats;
  byModel: ModelStats[];
  claudeTurns: number;
  claudeCostUsd: number;
  averageClaudeTurnCostUsd: number | null;
  estimatedAllClaudeCostUsd: number | null;
  estimatedSavedUsd: number | null;
  budget: { limitUsd: number | null; spentTodayUsd: number; day: string };
  /** the figures in words, a few short lines (the status bar tooltip shows them) */
  text: string;
}

// ---- milk/update ----------------------------------------------------------------------

export type ToolStatus = 'pending' | 'running' | 'completed' | 'failed' | 'denied' | 'cancelled';

interface UpdateBase {
  sessionId: string;
  turnId: string;
  /** starts at 1 for each turn, +1 per update */
  seq: number;
  /** a turn another door (another server process) runs on this folder, relayed live */
  elsewhere?: boolean;
}
export interface TurnStartedUpdate extends UpdateBase {
  kind: 'turn_started';
  agent: AgentName;
  route: Route;
  reason: string;
  /** `elsewhere` turns: the user's message, and the door it was asked in */
  userText?: string;
  door?: string;
}
export interface TextUpdate extends UpdateBase {
  kind: 'text' | 'thinking';
  agent: AgentName;
  delta: string;
}
export interface ToolCallUpdate extends UpdateBase {
  kind: 'tool_call';
  agent: AgentName;
  toolCallId: string;
  name: string;
  input: Record<string, unknown>;
  status: ToolStatus;
}
export interface ToolResultUpdate extends UpdateBase {
  kind: 'tool_result';
  agent: AgentName;
  toolCallId: string;
  /** cut to 2000 characters */
  output: string;
  isError: boolean;
}
export interface EscalatedUpdate extends UpdateBase {
  kind: 'escalated';
  by: 'user' | 'agent' | 'fallback';
  reason: string;
  mode: EscalationMode;
  contextChars: number;
}
export interface NeedUpdate extends UpdateBase {
  kind: 'need';
  currentNeed: string;
}
export interface UsageUpdate extends UpdateBase, Usage {
  kind: 'usage';
  agent: AgentName;
}
export interface NoticeUpdate extends UpdateBase {
  kind: 'notice';
  severity: 'info' | 'warning' | 'error';
  message: string;
}
/** sent just before turn_ended when the turn changed files */
export interface ChangesUpdate extends UpdateBase {
  kind: 'changes';
  changes: ChangeSummary[];
}
/** an advisor turn's plan, whole, each time a step changes */
export interface PlanUpdate extends UpdateBase {
  kind: 'plan';
  steps: PlanStep[];
}
/** A place a verified local answer cites (`quote`: the cited text, at most 300 characters). */
export interface Citation {
  path: string;
  uri: string;
  line: number;
  endLine: number;
  quote: string;
}
/** A file a verified local answer proposes that does not exist yet. */
export interface ProposedFile {
  path: string;
  uri: string;
}
/**
 * sent once after the text of a local answer milk verified (which ends with its Sources
 * block), before `changes` and turn_ended: the same places, with their quotes
 */
export interface CitationsUpdate extends UpdateBase {
  kind: 'citations';
  agent: AgentName;
  citations: Citation[];
  proposed?: ProposedFile[];
}
export interface TurnEndedUpdate extends UpdateBase {
  kind: 'turn_ended';
  agent: AgentName;
  stopReason: StopReason;
}
export type Update =
  | TurnStartedUpdate
  | TextUpdate
  | ToolCallUpdate
  | ToolResultUpdate
  | EscalatedUpdate
  | NeedUpdate
  | UsageUpdate
  | NoticeUpdate
  | ChangesUpdate
  | PlanUpdate
  | CitationsUpdate
  | TurnEndedUpdate;

// ---- milk/requestPermission -----------------------------------------------------------

export type PermissionOptionId = 'allow_once' | 'allow_session' | 'deny';
export interface PermissionOption {
  optionId: PermissionOptionId;
  label: string;
}
export interface RequestPermissionParams {
  sessionId: string;
  turnId: string;
  agent: AgentName;
  toolCallId: string;
  tool: string;
  input: Record<string, unknown>;
  description?: string | null;
  options: PermissionOption[];
  /** present when the tool changes files: the whole text before and after */
  edits?: FileEdit[] | null;
  /** the hand-off question: whether the local model gave an answer the user could keep */
  localAnswer?: boolean | null;
}
/** A file a tool would change (no `before` for a new file, no `after` for a deleted one). */
export interface FileEdit {
  uri: string;
  before?: string | null;
  after?: string | null;
  /** a side was cut; its text ends with a line `… (cut: N more characters)` */
  truncated?: boolean | null;
}
export interface RequestPermissionResult {
  optionId: PermissionOptionId;
}

// ---- errors ---------------------------------------------------------------------------

export const ErrorCodes = {
  InvalidParams: -32602,
  RequestFailed: -32803,
  RequestCancelled: -32800,
} as const;

export type RequestFailedReason =
  | 'session_not_found'
  | 'session_busy'
  | 'workspace_unknown'
  | 'local_unreachable'
  | 'claude_not_found'
  | 'claude_failed'
  | 'storage_failed'
  | 'turn_not_found'
  | 'undo_conflict'
  | 'undo_unavailable';

/** Client capability advertised in `initialize` (experimental.milk). */
export const CLIENT_EXPERIMENTAL_CAPABILITY = { requestPermission: true } as const;

// Chat session logic between the server and the chat view: which session is active, sending
// chat/escalate/cancel, history, the session list, and which agent is running. No `vscode`
// import: it talks to anything with sendRequest/onNotification (a vscode-languageclient
// LanguageClient, or a vscode-jsonrpc MessageConnection in the tests).

import { vscodeSettingNames } from './config';
import {
  Methods,
  type NextRoute,
  type TurnChangesResult,
  type TurnInfo,
  type TurnUndoResult,
  type ChatParams,
  type ContextItem,
  type ContextPreview,
  type EscalateParams,
  type Route,
  type SessionGetResult,
  type SessionInfo,
  type SessionListResult,
  type Stats,
  type Status,
  type TurnResult,
  type Update,
} from './methods';
import type { ServerState, ToWebview } from './viewMessages';
import type { Busy, LocalDown } from './statusModel';

/** The permission question that asks whether Claude takes over a failed local part. */
export const HAND_OFF_TOOL = 'hand_off_to_claude';
/** The hand-off signal of a model server that cannot be reached. */
export const MODEL_UNREACHABLE = 'model_unreachable';

/**
 * What a finished turn says about the model server: `down` (the turn failed on it, or was
 * handed to Claude because of it), `up` (the local model answered: a local turn that worked,
 * or a hand-off after the model replied), or undefined (it does not tell: Claude alone ran,
 * or the model answered with an error).
 */
export function modelServerSeen(r: Pick<TurnResult, 'agent' | 'error' | 'escalated' | 'stopReason'>): 'down' | 'up' | undefined {
  if (r.error?.reason === 'local_unreachable' || r.error?.data?.signal === MODEL_UNREACHABLE || r.escalated?.signal === MODEL_UNREACHABLE) return 'down';
  if (r.escalated) {
    if (r.escalated.by === 'agent') return 'up';
    if (r.escalated.by === 'fallback' && r.escalated.signal && r.escalated.signal !== 'model_error') return 'up';
    return undefined;
  }
  if (r.agent === 'local' && !r.error && r.stopReason === 'end_turn') return 'up';
  return undefined;
}

export interface Disposable {
  dispose(): void;
}

export interface RpcLike {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
}

export interface ControllerHost {
  /** to the chat webview (dropped when there is none) */
  post(msg: ToWebview): void;
  /** URI of the workspace folder chats belong to */
  workspaceFolder(): string | undefined;
  /** the chat folder's name when the window has several to choose from */
  folderLabel?(): string | undefined;
  onBusyChanged?(busy: Busy): void;
  onTurnResult?(result: TurnResult): void;
  /** where the next message of the active session goes changed */
  onRouteChanged?(): void;
  /** every `milk/update` (any session), after the controller took it in */
  onUpdate?(update: Update): void;
  log?(line: string): void;
}

export interface RequestFailure {
  message: string;
  code?: number;
  reason?: string;
  /** `undo_conflict`: the files that changed again after the turn */
  files?: string[];
}

/** JSON-RPC's "method not found": a server older than the request. */
export const METHOD_NOT_FOUND = -32601;

/** Normalize a JSON-RPC error (vscode-jsonrpc ResponseError or anything thrown). */
export function describeError(err: unknown): RequestFailure {
  const e = err as { message?: string; code?: number; reason?: string; files?: string[]; data?: { reason?: string; files?: unknown } };
  const files = Array.isArray(e?.data?.files) ? (e.data.files as unknown[]).filter((f): f is string => typeof f === 'string') : e?.files;
  return {
    message: vscodeSettingNames(e?.message ?? String(err)),
    code: typeof e?.code === 'number' ? e.code : undefined,
    reason: e?.data?.reason ?? e?.reason,
    files,
  };
}

/** Server texts shown in VS Code name the VS Code settings (`milk.claude.path`). */
function localizeUpdate(u: Update): Update {
  return u.kind === 'notice' ? { ...u, message: vscodeSettingNames(u.message) } : u;
}

function localizeResult(r: TurnResult): TurnResult {
  return r.error ? { ...r, error: { ...r.error, message: vscodeSettingNames(r.error.message) } } : r;
}

function localizeHistory(data: SessionGetResult): SessionGetResult {
  if (!data.turnInfo) return data;
  const turnInfo = data.turnInfo.map((i) => (i.error ? { ...i, error: { ...i.error, message: vscodeSettingNames(i.error.message) } } : i));
  return { ...data, turnInfo };
}

export class ChatController {
  activeSessionId: string | undefined;
  sessions: SessionInfo[] = [];
  localModel: string | undefined;
  lastStatus: Status | undefined;
  /** `milk/stats` text of the workspace folder; undefined until (or unless) the server has it */
  statsText: string | undefined;
  /** the server answered `milk/stats` with MethodNotFound (an older milk-lsp) */
  private statsUnsupported = false;
  serverState: ServerState = 'starting';
  problem: string | undefined;
  /** running (or about to run) turns, by session id ('' = not yet known) */
  readonly running = new Map<string, Busy>();
  private rpc: RpcLike | undefined;
  private sub: Disposable | undefined;
  private gapTurns = new Set<string>();
  /** Cancel pressed before the server started the turn: cancel as soon as it starts. */
  private cancelWanted = new Set<string>();
  /** where the next `auto` message of the active session goes (the server's SessionInfo/TurnResult) */
  nextRoute: NextRoute | undefined;
  /** "Back to local": the next message of the active session goes with this route */
  routeOverride: 'local' | undefined;
  /** the `milk.route` setting: the server routes a message without a route by it */
  routeSetting: Route | undefined;
  /**
   * A turn found the model server down (its error, its hand-off, or the hand-off question):
   * the status bar warns until a later turn runs locally or a status finds it reachable.
   */
  localDown: LocalDown | undefined;
  /** +1 each time localDown is set: a status asked before that does not clear it */
  private localDownSeq = 0;

  constructor(private readonly host: ControllerHost) {}

  attach(rpc: RpcLike | undefined): void {
    this.sub?.dispose();
    this.sub = undefined;
    this.rpc = rpc;
    this.statsUnsupported = false;
    this.statsText = undefined;
    if (rpc) this.sub = rpc.onNotification(Methods.UPDATE, (u: Update) => this.onUpdate(u));
    if (!rpc) {
      this.running.clear();
      this.busyChanged();
    }
  }

  setServerState(state: ServerState, problem?: string): void {
    this.serverState = state;
    this.problem = problem;
    this.postMeta();
  }

  private request<R>(method: string, params: unknown): Promise<R> {
    if (!this.rpc) return Promise.reject(new Error(this.problem ?? 'milk: the server is not running'));
    return this.rpc.sendRequest<R>(method, params);
  }

  private postMeta(): void {
    this.host.post({
      type: 'meta',
      localModel: this.localModel,
      serverState: this.serverState,
      problem: this.problem,
      workspaceFolder: this.host.workspaceFolder(),
      folder: this.host.folderLabel?.(),
    });
  }

  busy(): Busy {
    for (const v of this.running.values()) if (v === 'claude') return 'claude';
    for (const v of this.running.values()) if (v === 'local') return 'local';
    for (const v of this.running.values()) if (v === 'pending') return 'pending';
    return undefined;
  }

  isActiveRunning(): boolean {
    return this.activeSessionId !== undefined && this.running.has(this.activeSessionId);
  }

  private busyChanged(): void {
    this.host.onBusyChanged?.(this.busy());
  }

  private onUpdate(u: Update): void {
    if (!u || typeof u !== 'object') return;
    // the first turn of a window without a session: the server picked or created one
    if (this.activeSessionId === undefined && this.running.has('') && !u.elsewhere) {
      this.activeSessionId = u.sessionId;
      this.running.delete('');
      this.routeOverride = undefined;
      if (this.cancelWanted.delete('')) this.cancelWanted.add(u.sessionId);
      void this.refreshSessions();
    }
    switch (u.kind) {
      case 'turn_started':
        this.running.set(u.sessionId, u.agent);
        this.busyChanged();
        if (this.cancelWanted.delete(u.sessionId)) {
          this.request(Methods.CANCEL, { sessionId: u.sessionId }).catch((err) =>
            this.host.log?.(`cancel failed: ${describeError(err).message}`),
          );
        }
        break;
      case 'escalated':
        this.running.set(u.sessionId, 'claude');
        this.busyChanged();
        break;
      case 'turn_ended':
        this.running.delete(u.sessionId);
        this.busyChanged();
        break;
    }
    if (u.sessionId === this.activeSessionId) this.host.post({ type: 'update', update: localizeUpdate(u) });
    this.host.onUpdate?.(u);
  }

  /** The model server was found down (`detail`: what the server said). */
  markLocalDown(detail?: string): void {
    this.localDown = { detail: detail ? vscodeSettingNames(detail) : undefined };
    this.localDownSeq++;
  }

  /**
   * A permission question: the hand-off question of a local part that could not reach the
   * model server marks it down at once (before the user answers, before Claude runs).
   * True when it did.
   */
  noteQuestion(p: { tool: string; input?: Record<string, unknown> | null }): boolean {
    if (p.tool !== HAND_OFF_TOOL || p.input?.signal !== MODEL_UNREACHABLE) return false;
    this.markLocalDown(typeof p.input.detail === 'string' ? p.input.detail : undefined);
    return true;
  }

  /** What a finished turn says about the model server (`modelServerSeen`). */
  private noteModelServer(r: TurnResult): void {
    const seen = modelServerSeen(r);
    if (seen === 'down') this.markLocalDown(r.error?.reason === 'local_unreachable' ? r.error.message : (r.escalated?.reason ?? r.error?.message));
    else if (seen === 'up') this.localDown = undefined;
  }

  /** Where the next message goes as shown: the session's route, unless `milk.route` names
   * an agent (then every message without a route goes there). */
  get shownRoute(): NextRoute | undefined {
    if (this.routeSetting === 'claude') return { agent: 'claude', reason: 'the milk.route setting is "claude"' };
    if (this.routeSetting === 'local') return { agent: 'local', reason: 'the milk.route setting is "local"' };
    return this.nextRoute;
  }

  /** `milk.route` changed in Settings: the route line and the status bar follow it. */
  setRouteSetting(route: string | undefined): void {
    const next = route === 'claude' || route === 'local' || route === 'auto' ? route : undefined;
    if (next === this.routeSetting) return;
    this.routeSetting = next;
    this.postRoute();
  }

  private postRoute(): void {
    this.host.post({ type: 'route', nextRoute: this.shownRoute, override: this.routeOverride });
    this.host.onRouteChanged?.();
  }

  private setNextRoute(route: NextRoute | null | undefined): void {
    this.nextRoute = route ?? undefined;
    this.postRoute();
  }

  /** The active session changed: its next route comes with its info; an override does not carry over. */
  private activeChanged(): void {
    this.routeOverride = undefined;
    this.setNextRoute(this.sessions.find((s) => s.sessionId === this.activeSessionId)?.nextRoute);
  }

  /** "Back to local": the next message goes to the local model (route local clears a sticky escalation). */
  backToLocal(): void {
    this.routeOverride = 'local';
    this.postRoute();
  }

  /** Undo "Back to local" before sending. */
  keepRoute(): void {
    this.routeOverride = undefined;
    this.postRoute();
  }

  /** Snapshot for a (re)opened chat view: sessions, meta and the active session's history. */
  async showActive(): Promise<void> {
    this.postMeta();
    if (!this.rpc) {
      this.host.post({ type: 'history', data: null });
      return;
    }
    await this.refreshSessions();
    if (this.activeSessionId === undefined && this.sessions.length) {
      this.activeSessionId = this.sessions[0].sessionId;
      this.host.post({ type: 'sessions', sessions: this.sessions, activeId: this.activeSessionId });
      this.activeChanged();
    }
    await this.loadHistory();
  }

  async loadHistory(): Promise<void> {
    if (this.activeSessionId === undefined) {
      this.host.post({ type: 'history', data: null });
      return;
    }
    try {
      const data = await this.request<SessionGetResult>(Methods.SESSION_GET, { sessionId: this.activeSessionId });
      this.host.post({ type: 'history', data: localizeHistory(data) });
      if (data.session.sessionId === this.activeSessionId && data.session.nextRoute !== undefined) this.setNextRoute(data.session.nextRoute);
    } catch (err) {
      const f = describeError(err);
      if (f.reason === 'session_not_found') {
        this.activeSessionId = undefined;
        this.host.post({ type: 'history', data: null });
        await this.refreshSessions();
        return;
      }
      this.host.post({ type: 'failed', ...f });
    }
  }

  async refreshSessions(): Promise<SessionInfo[]> {
    const ws = this.host.workspaceFolder();
    try {
      const r = await this.request<SessionListResult>(Methods.SESSION_LIST, ws ? { workspaceFolder: ws } : {});
      this.sessions = r?.sessions ?? [];
      const active = this.sessions.find((s) => s.sessionId === this.activeSessionId);
      if (active && active.nextRoute !== undefined && !this.isActiveRunning()) this.setNextRoute(active.nextRoute);
    } catch (err) {
      this.host.log?.(`session/list failed: ${describeError(err).message}`);
    }
    this.host.post({ type: 'sessions', sessions: this.sessions, activeId: this.activeSessionId });
    return this.sessions;
  }

  async status(): Promise<Status> {
    const seq = this.localDownSeq;
    const s = await this.request<Status>(Methods.STATUS, {});
    this.lastStatus = s;
    // reachable again: the warning a turn left goes (unless a turn found it down meanwhile)
    if (s?.local?.reachable && seq === this.localDownSeq) this.localDown = undefined;
    this.localModel = s?.local?.model ?? undefined;
    this.postMeta();
    return s;
  }

  /** The routing numbers in words; an older server without `milk/stats` is asked once. */
  async stats(): Promise<string | undefined> {
    if (this.statsUnsupported || !this.rpc) return this.statsText;
    const ws = this.host.workspaceFolder();
    try {
      const s = await this.request<Stats>(Methods.STATS, ws ? { workspaceFolder: ws } : {});
      this.statsText = typeof s?.text === 'string' && s.text.trim() ? s.text.trim() : undefined;
    } catch (err) {
      const f = describeError(err);
      if (f.code === METHOD_NOT_FOUND) this.statsUnsupported = true;
      else this.host.log?.(`milk/stats failed: ${f.message}`);
    }
    return this.statsText;
  }

  private async runTurn(method: string, params: ChatParams | EscalateParams, key: string): Promise<TurnResult | undefined> {
    this.running.set(key, this.running.get(key) ?? 'pending');
    this.busyChanged();
    try {
      const result = localizeResult(await this.request<TurnResult>(method, params));
      this.noteModelServer(result);
      if (result.sessionId === this.activeSessionId) {
        this.host.post({ type: 'result', result });
        if (result.nextRoute !== undefined) this.setNextRoute(result.nextRoute);
      }
      this.host.onTurnResult?.(result);
      if (this.gapTurns.delete(result.turnId) && result.sessionId === this.activeSessionId) await this.loadHistory();
      void this.refreshSessions();
      return result;
    } catch (err) {
      const f = describeError(err);
      if (f.code !== -32800) this.host.post({ type: 'failed', ...f });
      throw Object.assign(new Error(f.message), f);
    } finally {
      // the server always sends turn_ended first; this covers requests that failed before a turn
      if (this.running.get(key) === 'pending') this.running.delete(key);
      this.cancelWanted.delete(key);
      this.busyChanged();
    }
  }

  /** Send a chat message in the active session (or let the server pick/create one). */
  async send(text: string, opts: { context?: ContextItem[]; route?: Route; attachments?: string[] } = {}): Promise<TurnResult | undefined> {
    const ws = this.host.workspaceFolder();
    const params: ChatParams = { text };
    if (this.activeSessionId) params.sessionId = this.activeSessionId;
    else if (ws) params.workspaceFolder = ws;
    const route = opts.route ?? this.routeOverride;
    if (route) params.route = route;
    if (this.routeOverride) {
      this.routeOverride = undefined;
      this.postRoute();
    }
    if (opts.context?.length) params.context = opts.context;
    this.host.post({ type: 'user', text, attachments: opts.attachments });
    return this.runTurn(Methods.CHAT, params, this.activeSessionId ?? '');
  }

  /** Hand the active session to Claude (`text` optional: Claude carries on with the need). */
  async escalate(text?: string, reason?: string): Promise<TurnResult | undefined> {
    if (!this.activeSessionId) {
      // nothing to escalate yet: a first message straight to Claude
      if (text) return this.send(text, { route: 'claude' });
      const msg = 'milk: there is no session to escalate yet; type a message first.';
      this.host.post({ type: 'failed', message: msg, reason: 'session_not_found' });
      throw new Error(msg);
    }
    const params: EscalateParams = { sessionId: this.activeSessionId };
    if (text) params.text = text;
    if (reason) params.reason = reason;
    this.host.post({ type: 'user', text: text ?? '' });
    return this.runTurn(Methods.ESCALATE, params, this.activeSessionId);
  }

  async cancel(): Promise<boolean> {
    const id = this.activeSessionId;
    if (this.running.get(id ?? '') === 'pending') {
      // the request is out but the turn has not started yet
      this.cancelWanted.add(id ?? '');
      return true;
    }
    if (!id) return false;
    const r = await this.request<{ cancelled: boolean }>(Methods.CANCEL, { sessionId: id });
    return !!r?.cancelled;
  }

  /** Cancel the running turn of any session (a permission question's "Stop the turn"). */
  async cancelSession(sessionId: string): Promise<boolean> {
    const r = await this.request<{ cancelled: boolean }>(Methods.CANCEL, { sessionId });
    return !!r?.cancelled;
  }

  /**
   * A new session. Without a title, an empty session of this folder is reused: pressing "+"
   * again does not pile up empty sessions.
   */
  async newSession(title?: string): Promise<SessionInfo> {
    const ws = this.host.workspaceFolder();
    if (!title) {
      await this.refreshSessions();
      const empty = this.sessions.find((s) => s.turnCount === 0 && !this.running.has(s.sessionId));
      if (empty) {
        await this.switchSession(empty.sessionId);
        return empty;
      }
    }
    const params: Record<string, string> = {};
    if (ws) params.workspaceFolder = ws;
    if (title) params.title = title;
    const info = await this.request<SessionInfo>(Methods.SESSION_NEW, params);
    this.activeSessionId = info.sessionId;
    await this.refreshSessions();
    this.activeChanged();
    await this.loadHistory();
    return info;
  }

  /** The chat works on another folder now (a multi-root window): its latest session shows. */
  async folderChanged(): Promise<void> {
    this.activeSessionId = undefined;
    this.activeChanged();
    await this.showActive();
  }

  async switchSession(sessionId: string): Promise<void> {
    this.activeSessionId = sessionId;
    this.host.post({ type: 'sessions', sessions: this.sessions, activeId: sessionId });
    this.activeChanged();
    await this.loadHistory();
  }

  /** The files a turn of the active session changed, whole (for the diff editor). */
  async turnChanges(turnId: string, sessionId = this.activeSessionId): Promise<TurnChangesResult> {
    if (!sessionId) throw new Error('milk: there is no session yet.');
    return this.request<TurnChangesResult>(Methods.TURN_CHANGES, { sessionId, turnId });
  }

  /** Put back the files a turn changed; tells the view. Errors (undo_conflict, …) are thrown as RequestFailure. */
  async undoTurn(turnId: string, opts: { force?: boolean; sessionId?: string } = {}): Promise<TurnUndoResult> {
    const sessionId = opts.sessionId ?? this.activeSessionId;
    if (!sessionId) throw new Error('milk: there is no session yet.');
    const params: Record<string, unknown> = { sessionId, turnId };
    if (opts.force) params.force = true;
    try {
      const r = await this.request<TurnUndoResult>(Methods.TURN_UNDO, params);
      if (sessionId === this.activeSessionId) this.host.post({ type: 'undone', turnId });
      return r;
    } catch (err) {
      throw Object.assign(new Error(describeError(err).message), describeError(err));
    }
  }

  /** The newest turn of the active session with changes not undone yet (from the stored turn info). */
  async lastUndoableTurn(): Promise<{ info: TurnInfo; userText?: string } | undefined> {
    if (!this.activeSessionId) return undefined;
    const data = await this.request<SessionGetResult>(Methods.SESSION_GET, { sessionId: this.activeSessionId });
    const infos = data.turnInfo ?? [];
    for (let i = infos.length - 1; i >= 0; i--) {
      const info = infos[i];
      if (info.changes?.length && !info.undone) {
        const user = data.turns.find((t) => t.turnId === info.turnId && t.role === 'user');
        return { info, userText: user?.text };
      }
    }
    return undefined;
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.request<null>(Methods.SESSION_DELETE, { sessionId });
    const wasActive = sessionId === this.activeSessionId;
    await this.refreshSessions();
    if (wasActive) {
      this.activeSessionId = this.sessions[0]?.sessionId;
      this.host.post({ type: 'sessions', sessions: this.sessions, activeId: this.activeSessionId });
      this.activeChanged();
      await this.loadHistory();
    }
  }

  async context(reason?: string): Promise<ContextPreview> {
    if (!this.activeSessionId) throw new Error('milk: there is no session yet; type a message first.');
    const params: Record<string, string> = { sessionId: this.activeSessionId };
    if (reason) params.reason = reason;
    return this.request<ContextPreview>(Methods.CONTEXT, params);
  }

  dispose(): void {
    this.sub?.dispose();
  }
}

// Messages between the extension host and the chat webview. No `vscode` import.

import type { SessionGetResult, SessionInfo, TurnResult, Update } from './methods';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

export type ToWebview =
  | { type: 'history'; data: SessionGetResult | null }
  | { type: 'sessions'; sessions: SessionInfo[]; activeId?: string }
  | { type: 'user'; text: string; attachments?: string[] }
  | { type: 'update'; update: Update }
  | { type: 'result'; result: TurnResult }
  | { type: 'failed'; message: string; reason?: string }
  | { type: 'meta'; localModel?: string; serverState: ServerState; problem?: string }
  | { type: 'focusInput' };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'escalate'; text?: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'switchSession'; sessionId: string }
  | { type: 'deleteSession'; sessionId: string }
  | { type: 'showContext' }
  | { type: 'openLink'; href: string };

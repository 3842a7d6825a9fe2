// Messages between the extension host and the chat webview. No `vscode` import.

import type { NextRoute, SessionGetResult, SessionInfo, TurnResult, Update } from './methods';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

export type ToWebview =
  | { type: 'history'; data: SessionGetResult | null }
  | { type: 'sessions'; sessions: SessionInfo[]; activeId?: string }
  | { type: 'user'; text: string; attachments?: string[] }
  | { type: 'update'; update: Update }
  | { type: 'result'; result: TurnResult }
  | { type: 'failed'; message: string; reason?: string }
  /** `folder`: the chat folder's name, in a window with several folders */
  | { type: 'meta'; localModel?: string; serverState: ServerState; problem?: string; workspaceFolder?: string; folder?: string }
  | { type: 'focusInput' }
  /** where the next message goes; `override`: the user chose "Back to local" for it */
  | { type: 'route'; nextRoute?: NextRoute; override?: 'local' }
  /** the turn's changes were undone */
  | { type: 'undone'; turnId: string }
  /** a permission question for this tool call opened (or closed: no toolCallId) */
  | { type: 'asking'; turnId: string; toolCallId?: string };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'escalate'; text?: string }
  /** the Plan button: the text (or, empty, asked for) on route advise */
  | { type: 'advise'; text?: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'switchSession'; sessionId: string }
  /** the folder button: pick the folder the chat works on */
  | { type: 'chooseFolder' }
  | { type: 'deleteSession'; sessionId: string }
  | { type: 'showContext' }
  | { type: 'openLink'; href: string }
  /** a file name in an answer: open it in the editor; `endLine`: a cited source, its lines
   * `line`..`endLine` selected */
  | { type: 'openFile'; path: string; line?: number; endLine?: number }
  | { type: 'copyCode'; text: string }
  | { type: 'insertCode'; text: string; language?: string }
  | { type: 'backToLocal' }
  | { type: 'keepRoute' }
  | { type: 'reviewTurn'; turnId: string }
  | { type: 'undoTurn'; turnId: string }
  /** an error card's action */
  | { type: 'errorAction'; action: 'openSettings' | 'retry' | 'doctor' | 'showLog'; reason: string; message: string; turnId: string; text?: string };

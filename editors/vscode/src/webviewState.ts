// What the chat webview keeps across a reload (vscode.setState / getState): the attachment
// chips of the messages sent (the server's history has the text of a message, not the labels
// of the files and selections attached to it) and the messages Up brings back. Pure
// functions for webview/main.ts and the unit tests. No `vscode` import, no DOM.

import type { ChatState, TurnView } from './chatModel';
import { HISTORY_MAX } from './inputHistory';

/** How many turns' chips are kept (the oldest go first). */
export const ATTACHMENTS_MAX = 200;

export interface SavedView {
  version: 1;
  /** the chips of a message, by its turn id */
  attachments: Record<string, string[]>;
  /** chips of messages sent whose turn has no id yet (the server has not started it) */
  pending: { text: string; attachments: string[] }[];
  /** messages sent, oldest first (Up in the input) */
  history: string[];
}

export function emptySaved(): SavedView {
  return { version: 1, attachments: {}, pending: [], history: [] };
}

const labels = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.length && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;

/** The saved state as getState() gives it (anything: an older page's, or none). */
export function readSaved(raw: unknown): SavedView {
  const out = emptySaved();
  if (!raw || typeof raw !== 'object') return out;
  const r = raw as Partial<Record<keyof SavedView, unknown>>;
  if (r.attachments && typeof r.attachments === 'object') {
    for (const [turnId, list] of Object.entries(r.attachments as Record<string, unknown>)) {
      const l = labels(list);
      if (l) out.attachments[turnId] = [...l];
    }
  }
  if (Array.isArray(r.pending)) {
    for (const p of r.pending as unknown[]) {
      const e = p as { text?: unknown; attachments?: unknown };
      const l = labels(e?.attachments);
      if (typeof e?.text === 'string' && l) out.pending.push({ text: e.text, attachments: [...l] });
    }
  }
  if (Array.isArray(r.history)) out.history = (r.history as unknown[]).filter((t): t is string => typeof t === 'string').slice(-HISTORY_MAX);
  return out;
}

/** A message sent with chips: kept until its turn has an id. */
export function notePending(saved: SavedView, text: string, attachments: string[] | undefined): void {
  if (!attachments?.length) return;
  saved.pending.push({ text, attachments: [...attachments] });
  if (saved.pending.length > 20) saved.pending.splice(0, saved.pending.length - 20);
}

/**
 * The chips of the turns that have their id now are kept by it (and leave `pending`).
 * Returns whether the saved state changed (then the caller saves it).
 */
export function keepAttachments(saved: SavedView, state: ChatState): boolean {
  let changed = false;
  for (const t of state.turns) {
    if (t.pending || !t.attachments?.length || isSame(saved.attachments[t.turnId], t.attachments)) continue;
    saved.attachments[t.turnId] = [...t.attachments];
    const at = saved.pending.findIndex((p) => p.text === t.userText && isSame(p.attachments, t.attachments));
    if (at >= 0) saved.pending.splice(at, 1);
    changed = true;
  }
  const ids = Object.keys(saved.attachments);
  if (ids.length > ATTACHMENTS_MAX) {
    for (const id of ids.slice(0, ids.length - ATTACHMENTS_MAX)) delete saved.attachments[id];
    changed = true;
  }
  return changed;
}

/**
 * After a reload (the transcript rebuilt from the server's history): the chips back on their
 * turns, by turn id; a message whose id was not known yet, by its text (the newest turn with
 * that text and no chips). Returns the turns that got chips.
 */
export function restoreAttachments(saved: SavedView, state: ChatState): TurnView[] {
  const restored: TurnView[] = [];
  for (const t of state.turns) {
    const kept = saved.attachments[t.turnId];
    if (kept && !t.attachments?.length) {
      t.attachments = [...kept];
      restored.push(t);
    }
  }
  for (const p of [...saved.pending]) {
    for (let i = state.turns.length - 1; i >= 0; i--) {
      const t = state.turns[i];
      if (t.userText !== p.text || t.attachments?.length) continue;
      t.attachments = [...p.attachments];
      restored.push(t);
      break;
    }
  }
  return restored;
}

function isSame(a: string[] | undefined, b: string[] | undefined): boolean {
  return !!a && !!b && a.length === b.length && a.every((x, i) => x === b[i]);
}

// The chat input's keys: Enter sends, Up / Down walk through the messages sent before (as a
// shell does), Escape cancels the running turn. Pure logic for the webview (webview/main.ts)
// and the unit tests. No `vscode` import, no DOM.

/** How many sent messages Up can bring back. */
export const HISTORY_MAX = 50;

/**
 * The messages sent, oldest first, and where Up / Down stand in them. Up from the newest
 * keeps what was typed (the draft); Down past the newest brings it back.
 */
export class InputHistory {
  private items: string[];
  /** -1: not browsing; else the index of the message shown */
  private index = -1;
  private draft = '';

  constructor(
    items: readonly string[] = [],
    private readonly max = HISTORY_MAX,
  ) {
    this.items = items.filter((t) => typeof t === 'string' && t.trim() !== '').slice(-max);
  }

  get entries(): string[] {
    return [...this.items];
  }

  get browsing(): boolean {
    return this.index !== -1;
  }

  /** A message was sent: the newest entry (not twice in a row); browsing ends. */
  add(text: string): void {
    this.index = -1;
    this.draft = '';
    if (!text.trim()) return;
    if (this.items[this.items.length - 1] !== text) this.items.push(text);
    if (this.items.length > this.max) this.items.splice(0, this.items.length - this.max);
  }

  /** Up: the message before the one shown (the newest first); undefined when there is none. */
  older(current: string): string | undefined {
    if (!this.items.length) return undefined;
    if (this.index === -1) {
      this.draft = current;
      this.index = this.items.length - 1;
    } else if (this.index > 0) {
      this.index--;
    } else {
      return undefined;
    }
    return this.items[this.index];
  }

  /** Down: the message after the one shown, then the draft; undefined when not browsing. */
  newer(): string | undefined {
    if (this.index === -1) return undefined;
    if (this.index < this.items.length - 1) {
      this.index++;
      return this.items[this.index];
    }
    this.index = -1;
    return this.draft;
  }

  /** The user edited the text: it is no longer a message of the history. */
  stopBrowsing(): void {
    this.index = -1;
  }
}

export interface InputKey {
  key: string;
  shiftKey?: boolean;
  altKey?: boolean;
  ctrlKey?: boolean;
  metaKey?: boolean;
  isComposing?: boolean;
}

export interface InputBox {
  value: string;
  selectionStart: number;
  selectionEnd: number;
}

export type InputAction = 'send' | 'cancel' | 'older' | 'newer' | undefined;

/**
 * What a key in the chat input does. Up recalls when the input is empty or the caret is on
 * its first line (elsewhere it moves the caret); Down goes forward while browsing, from the
 * last line; Escape cancels only while a turn runs.
 */
export function inputKeyAction(e: InputKey, box: InputBox, opts: { running: boolean; browsing: boolean }): InputAction {
  if (e.isComposing) return undefined;
  if (e.key === 'Enter') return e.shiftKey ? undefined : 'send';
  const modified = !!(e.shiftKey || e.altKey || e.ctrlKey || e.metaKey);
  if (e.key === 'Escape') return opts.running && !modified ? 'cancel' : undefined;
  if (modified) return undefined;
  const collapsed = box.selectionStart === box.selectionEnd;
  if (e.key === 'ArrowUp') {
    if (box.value === '') return 'older';
    return collapsed && !box.value.slice(0, box.selectionStart).includes('\n') ? 'older' : undefined;
  }
  if (e.key === 'ArrowDown') {
    return opts.browsing && collapsed && !box.value.slice(box.selectionEnd).includes('\n') ? 'newer' : undefined;
  }
  return undefined;
}

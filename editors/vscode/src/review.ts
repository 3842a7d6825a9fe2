// Diffs in VS Code's own diff editor: an edit a tool wants to make (permission "Review…",
// answered with Accept / Reject in a notification or the diff editor's title bar), and the
// files a finished turn changed (the chat's "Review"). Both sides are read-only virtual
// documents under the `milk:` scheme, named after the file so the editor highlights them.

import * as vscode from 'vscode';
import type { FileChange, FileEdit, PermissionOptionId, RequestPermissionParams } from './methods';
import { baseName, displayPath } from './paths';
import { editKind, reviewChoices } from './permission';

export const DOC_SCHEME = 'milk';
/** context key: an edit's diff is open and waits for Accept / Reject */
export const REVIEWING_CONTEXT = 'milk.reviewingEdit';

/** Read-only documents (Show Escalation Context, Doctor, diff sides) under the `milk:` scheme. */
export class ReadOnlyDocs implements vscode.TextDocumentContentProvider {
  private readonly docs = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private counter = 0;

  /** A new document `milk:/<n>/<name>` with `content` (not opened). */
  add(name: string, content: string): vscode.Uri {
    const uri = vscode.Uri.parse(`${DOC_SCHEME}:/${++this.counter}/${name.replace(/^\/+/, '')}`);
    this.docs.set(docKey(uri), content);
    return uri;
  }

  /**
   * One side of a diff: `milk:/<relative path>?<n>-<side>`. Both sides of a file have the
   * same path (the file's own, so the editor labels it with its plain name and highlights it)
   * and differ in the query only: VS Code's changes editor shows a pair whose paths differ as
   * a rename ("R", and the internal paths).
   */
  addSide(name: string, side: string, content: string): vscode.Uri {
    const uri = vscode.Uri.parse(`${DOC_SCHEME}:/`).with({ path: `/${name.replace(/^\/+/, '')}`, query: `${++this.counter}-${side}` });
    this.docs.set(docKey(uri), content);
    return uri;
  }

  async open(name: string, content: string): Promise<vscode.TextEditor> {
    const doc = await vscode.workspace.openTextDocument(this.add(name, content));
    return vscode.window.showTextDocument(doc, { preview: false });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(docKey(uri)) ?? '';
  }

  forget(uris: (vscode.Uri | undefined)[]): void {
    for (const u of uris) if (u) this.docs.delete(docKey(u));
  }
}

function docKey(uri: vscode.Uri): string {
  return uri.query ? `${uri.path}?${uri.query}` : uri.path;
}

/** The title of the turn's changes (VS Code's changes editor adds the file count itself). */
export const TURN_CHANGES_TITLE = 'milk: changes of the turn';

interface PendingReview {
  finish(choice: PermissionOptionId | undefined): void;
}

export class DiffReview implements vscode.Disposable {
  private pending: PendingReview | undefined;

  constructor(
    private readonly docs: ReadOnlyDocs,
    private readonly workspaceFolder: () => string | undefined,
    private readonly log: (line: string) => void,
  ) {}

  /** The diff editor's Accept (title bar or palette). */
  accept(): boolean {
    if (!this.pending) return false;
    this.pending.finish('allow_once');
    return true;
  }

  /** The diff editor's Reject. */
  reject(): boolean {
    if (!this.pending) return false;
    this.pending.finish('deny');
    return true;
  }

  get reviewing(): boolean {
    return this.pending !== undefined;
  }

  /**
   * Open the diff of each edit and wait for Accept / Reject. Resolves with the answer, or
   * undefined when every diff was closed without one (the caller asks the question again).
   */
  async reviewEdits(p: RequestPermissionParams, token: vscode.CancellationToken): Promise<PermissionOptionId | undefined> {
    this.pending?.finish(undefined);
    const edits = p.edits ?? [];
    const who = p.agent === 'claude' ? 'Claude' : 'the local agent';
    const sides: { before: vscode.Uri; after: vscode.Uri }[] = [];
    for (const e of edits) {
      const name = displayPath(e.uri, this.workspaceFolder());
      sides.push({ before: this.docs.addSide(name, 'current', e.before ?? ''), after: this.docs.addSide(name, 'proposed', e.after ?? '') });
    }
    // the first file's diff ends up in front
    for (let i = edits.length - 1; i >= 0; i--) {
      await vscode.commands.executeCommand('vscode.diff', sides[i].before, sides[i].after, editTitle(edits[i], who), {
        preview: false,
      });
    }
    await vscode.commands.executeCommand('setContext', REVIEWING_CONTEXT, true);
    const choices = reviewChoices(p);
    const first = edits[0];
    const what =
      edits.length === 1
        ? `${who === 'Claude' ? 'Claude' : 'The local agent'} wants to ${{ created: 'create', deleted: 'delete', modified: 'edit' }[editKind(first)]} ${displayPath(first.uri, this.workspaceFolder())}`
        : `${who === 'Claude' ? 'Claude' : 'The local agent'} wants to change ${edits.length} files`;
    const listeners: vscode.Disposable[] = [];
    try {
      return await new Promise<PermissionOptionId | undefined>((resolve) => {
        let done = false;
        const finish = (choice: PermissionOptionId | undefined) => {
          if (done) return;
          done = true;
          if (this.pending === review) this.pending = undefined;
          resolve(choice);
        };
        const review: PendingReview = { finish };
        this.pending = review;
        // Accept / Reject in the status bar while the diff is open (and in the diff editor's
        // title bar): unlike a notification, they go away once the question is answered
        listeners.push(...this.statusButtons(choices, what));
        listeners.push(token.onCancellationRequested(() => finish('deny')));
        const tabs = vscode.window.tabGroups;
        if (tabs?.onDidChangeTabs) {
          listeners.push(
            tabs.onDidChangeTabs(() => {
              if (!this.openDiffTabs(sides.map((s) => s.after)).length) finish(undefined);
            }),
          );
        }
      });
    } finally {
      for (const l of listeners) l.dispose();
      if (!this.pending) await vscode.commands.executeCommand('setContext', REVIEWING_CONTEXT, false);
      await this.closeDiffs(sides.map((s) => s.after));
      this.docs.forget(sides.flatMap((s) => [s.before, s.after]));
    }
  }

  /**
   * Open the files a turn changed: one diff, or the changes editor listing each file by its
   * plain relative name (a created file marked A, a deleted one D).
   */
  async openChanges(changes: FileChange[], opts: { undone?: boolean } = {}): Promise<void> {
    const ws = this.workspaceFolder();
    const shown = changes.filter((c) => !c.binary);
    const binary = changes.filter((c) => c.binary).map((c) => displayPath(c.uri, ws));
    if (binary.length) void vscode.window.showInformationMessage(`milk: no diff for binary files: ${binary.join(', ')}.`);
    if (!shown.length) return;
    const label = opts.undone ? 'changes of the turn (undone)' : 'changes of the turn';
    const entries = shown.map((c) => {
      const name = displayPath(c.uri, ws);
      return {
        change: c,
        name,
        before: this.docs.addSide(name, 'before', c.before ?? ''),
        after: this.docs.addSide(name, 'after', c.after ?? ''),
      };
    });
    if (entries.length > 1) {
      try {
        // the title as is: the changes editor adds "(N files)" to it
        await vscode.commands.executeCommand(
          'vscode.changes',
          opts.undone ? `${TURN_CHANGES_TITLE} (undone)` : TURN_CHANGES_TITLE,
          entries.map((e) => [
            vscode.Uri.parse(e.change.uri),
            e.change.kind === 'created' ? undefined : e.before,
            e.change.kind === 'deleted' ? undefined : e.after,
          ]),
        );
        return;
      } catch (err) {
        this.log(`vscode.changes unavailable (${String(err)}); one diff per file`);
      }
    }
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i];
      const kind = e.change.kind === 'created' ? ' (new file)' : e.change.kind === 'deleted' ? ' (deleted)' : '';
      await vscode.commands.executeCommand('vscode.diff', e.before, e.after, `${baseName(e.change.uri)}${kind}: ${label}`, { preview: false });
    }
  }

  /** The turn's diff tabs (`openChanges`): closed once the turn is undone, as they show
   * changes that are gone. */
  async closeChanges(): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => /changes of the turn/.test(t.label));
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }

  /** Status bar buttons answering the open review; disposed with it. */
  private statusButtons(choices: { label: string; optionId: PermissionOptionId }[], what: string): vscode.Disposable[] {
    const items: vscode.Disposable[] = [];
    let priority = 1000;
    for (const c of choices) {
      const item = vscode.window.createStatusBarItem(`milk.review.${c.optionId}`, vscode.StatusBarAlignment.Left, priority--);
      item.name = `milk: ${c.label} edit`;
      item.text = c.optionId === 'deny' ? '$(close) Reject edit' : '$(check) Accept edit';
      item.tooltip = `${what}: ${c.optionId === 'deny' ? 'reject' : 'accept'} the change`;
      item.command = c.optionId === 'deny' ? 'milk.rejectEdit' : 'milk.acceptEdit';
      item.backgroundColor = new vscode.ThemeColor(c.optionId === 'deny' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground');
      item.show();
      items.push(item);
    }
    return items;
  }

  private openDiffTabs(afterUris: vscode.Uri[]): vscode.Tab[] {
    const wanted = new Set(afterUris.map((u) => u.toString()));
    const out: vscode.Tab[] = [];
    for (const group of vscode.window.tabGroups?.all ?? []) {
      for (const tab of group.tabs) {
        const input = tab.input as { modified?: vscode.Uri } | undefined;
        if (input?.modified && wanted.has(input.modified.toString())) out.push(tab);
      }
    }
    return out;
  }

  private async closeDiffs(afterUris: vscode.Uri[]): Promise<void> {
    const tabs = this.openDiffTabs(afterUris);
    if (!tabs.length) return;
    try {
      await vscode.window.tabGroups.close(tabs);
    } catch (err) {
      this.log(`closing the diff: ${String(err)}`);
    }
  }

  dispose(): void {
    this.pending?.finish('deny');
  }
}

function editTitle(e: FileEdit, who: string): string {
  const name = baseName(e.uri);
  switch (editKind(e)) {
    case 'created':
      return `${name} (new file): proposed by ${who}`;
    case 'deleted':
      return `${name} (deleted): proposed by ${who}`;
    default:
      return `${name}: current ↔ proposed by ${who}`;
  }
}

// What the chat's answers open: a file name (the chat folder's file, by path or else by name,
// at its line; a cited source with its lines selected) and a code block's Insert (at the
// cursor of the editor, or a new document).

import * as vscode from 'vscode';
import { displayPath } from './paths';
import { DOC_SCHEME } from './review';

/** Where in a file an answer points, and the folder its relative path is in. */
export interface AnswerPlace {
  line?: number;
  /** a cited range: lines `line`..`endLine` are selected */
  endLine?: number;
  /** the chat's folder (a URI): in a multi-root window not always the first */
  folder?: string;
}

/** A file name in an answer: the chat folder's file (by path, else by name), at its line. */
export async function openAnswerFile(p: string, at: AnswerPlace = {}): Promise<void> {
  const folder = at.folder ? vscode.Uri.parse(at.folder) : vscode.workspace.workspaceFolders?.[0]?.uri;
  const candidates: vscode.Uri[] = [];
  if (p.startsWith('/')) candidates.push(vscode.Uri.file(p));
  else if (folder) candidates.push(vscode.Uri.joinPath(folder, p.replace(/^\.\//, '')));
  let target: vscode.Uri | undefined;
  for (const c of candidates) {
    try {
      await vscode.workspace.fs.stat(c);
      target = c;
      break;
    } catch {
      /* not there */
    }
  }
  if (!target && folder && !p.startsWith('/')) {
    const found = await vscode.workspace.findFiles(`**/${p.replace(/^\.\//, '')}`, '**/{node_modules,.git}/**', 20);
    if (found.length === 1) target = found[0];
    else if (found.length > 1) {
      const pick = await vscode.window.showQuickPick(
        found.map((u) => ({ label: displayPath(u.toString(), folder.toString()), uri: u })),
        { title: `milk: open ${p}`, placeHolder: 'Several files have this name' },
      );
      target = pick?.uri;
      if (!target) return;
    }
  }
  if (!target) {
    void vscode.window.showInformationMessage(`milk: there is no ${p} in this workspace.`);
    return;
  }
  await vscode.window.showTextDocument(target, { preview: true, selection: answerSelection(at.line, at.endLine) });
}

/**
 * The caret at the start of `line`; with `endLine`, the lines `line`..`endLine` selected whole
 * (to the start of the line after, as selecting lines does: VS Code clamps it at the end).
 */
export function answerSelection(line?: number, endLine?: number): vscode.Range | undefined {
  if (!line || line < 1) return undefined;
  const start = new vscode.Position(line - 1, 0);
  const end = endLine && endLine >= line ? new vscode.Position(endLine, 0) : start;
  return new vscode.Range(start, end);
}

export async function insertAnswerCode(text: string, language?: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme !== DOC_SCHEME);
  if (!editor) {
    const doc = await vscode.workspace.openTextDocument({ content: text, language });
    await vscode.window.showTextDocument(doc);
    return;
  }
  await editor.edit((b) => {
    for (const sel of editor.selections) b.replace(sel, text);
  });
  await vscode.window.showTextDocument(editor.document, editor.viewColumn);
}

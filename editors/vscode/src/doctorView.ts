// milk: Doctor, rendered and read-only: the report is a virtual Markdown document under the
// `milk-doctor:` scheme (a TextDocumentContentProvider: VS Code opens such documents
// read-only) shown in VS Code's Markdown preview. Without the preview (the built-in Markdown
// extension disabled) the same read-only document opens as text.

import * as vscode from 'vscode';

export const DOCTOR_SCHEME = 'milk-doctor';

export class DoctorView implements vscode.TextDocumentContentProvider {
  /** one document: a second Doctor refreshes the open preview instead of piling up tabs */
  readonly uri = vscode.Uri.parse(`${DOCTOR_SCHEME}:/milk-doctor.md`);
  private text = '';
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  constructor(private readonly log: (line: string) => void = () => undefined) {}

  register(): vscode.Disposable {
    return vscode.Disposable.from(vscode.workspace.registerTextDocumentContentProvider(DOCTOR_SCHEME, this), this.emitter);
  }

  provideTextDocumentContent(): string {
    return this.text;
  }

  /** Show `markdown` rendered; returns the document's URI. */
  async show(markdown: string): Promise<vscode.Uri> {
    this.text = markdown;
    this.emitter.fire(this.uri);
    try {
      await vscode.commands.executeCommand('markdown.showPreview', this.uri);
      return this.uri;
    } catch (err) {
      this.log(`the Markdown preview is not available (${String((err as Error)?.message ?? err)}): the report opens as text`);
    }
    const doc = await vscode.workspace.openTextDocument(this.uri);
    await vscode.window.showTextDocument(doc, { preview: false });
    return this.uri;
  }
}

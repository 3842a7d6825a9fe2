// milk/requestPermission as a modal question: message, detail and buttons; a dismissed
// dialog (or anything unexpected) is a deny. Deny is the first button, so it is the default
// of Enter as well as of Escape (VS Code focuses the first button of a modal). A question about
// an edit (`edits`) names the files in full, shows a short diff and offers "Review…", which
// opens the whole change in the diff editor. No `vscode` import.

import { countChanges, unifiedDiff } from './diff';
import type { FileEdit, PermissionOption, PermissionOptionId, RequestPermissionParams, RequestPermissionResult } from './methods';
import { displayPath } from './paths';

export const DEFAULT_OPTIONS: PermissionOption[] = [
  { optionId: 'allow_once', label: 'Allow once' },
  { optionId: 'allow_session', label: 'Allow for this session' },
  { optionId: 'deny', label: 'Deny' },
];

/** The extra button of a question about an edit: opens the diff editor. */
export const REVIEW_LABEL = 'Review…';

export interface PermissionPrompt {
  message: string;
  detail: string;
  /** button labels: deny first (the default), then Review… for an edit, then the others */
  labels: string[];
}

const MAX_DETAIL = 1500;
const MAX_DIFF_LINES = 24;

export function formatInput(tool: string, input: Record<string, unknown>, description?: string | null): string {
  // the description is shown above the input already
  const inp = Object.fromEntries(
    Object.entries(input ?? {}).filter(([k, v]) => !(k === 'description' && description && v === description)),
  );
  const cmd = (inp as Record<string, unknown>).command;
  if (typeof cmd === 'string' && Object.keys(inp).length <= 3) {
    const rest = Object.fromEntries(Object.entries(inp).filter(([k]) => k !== 'command'));
    return `$ ${cmd}${Object.keys(rest).length ? `\n${JSON.stringify(rest, null, 2)}` : ''}`;
  }
  let s = JSON.stringify(inp, null, 2);
  if (s === undefined) s = String(inp);
  return s;
}

export type EditKind = 'created' | 'deleted' | 'modified';

export function editKind(e: FileEdit): EditKind {
  if (e.before == null) return 'created';
  if (e.after == null) return 'deleted';
  return 'modified';
}

/** `src/a.py: 3 lines added, 1 removed` and the like. */
export function editSummary(e: FileEdit, workspaceFolder?: string): string {
  const name = displayPath(e.uri, workspaceFolder);
  const { added, removed } = countChanges(e.before, e.after);
  const lines = (n: number) => `${n} line${n === 1 ? '' : 's'}`;
  switch (editKind(e)) {
    case 'created':
      return `${name}: new file, ${lines(added)}`;
    case 'deleted':
      return `${name}: deleted (${lines(removed)})`;
    default:
      return `${name}: ${lines(added)} added, ${removed} removed`;
  }
}

/** The dialog collapses runs of spaces: diff lines keep their indentation as no-break spaces. */
export function keepIndent(text: string): string {
  return text.replace(/^([ +-]?)( +)/gm, (_all, mark: string, spaces: string) => `${mark === ' ' ? '\u00a0' : mark}${'\u00a0'.repeat(spaces.length)}`).replace(/^ $/gm, '\u00a0');
}

function optionsOf(p: RequestPermissionParams): PermissionOption[] {
  return p.options?.length ? p.options : DEFAULT_OPTIONS;
}

export function permissionPrompt(p: RequestPermissionParams, opts: { workspaceFolder?: string } = {}): PermissionPrompt {
  const who = p.agent === 'claude' ? 'Claude' : 'The local agent';
  const edits = p.edits ?? [];
  let message: string;
  let detail = '';
  if (p.description) detail += `${p.description}\n\n`;
  if (edits.length) {
    const verb = { created: 'create', deleted: 'delete', modified: 'edit' }[editKind(edits[0])];
    message =
      edits.length === 1
        ? `${who} wants to ${verb} ${displayPath(edits[0].uri, opts.workspaceFolder)}`
        : `${who} wants to change ${edits.length} files`;
    detail += edits.map((e) => editSummary(e, opts.workspaceFolder)).join('\n');
    const first = edits[0];
    const diff = unifiedDiff(first.before, first.after, 2, MAX_DIFF_LINES);
    if (diff) detail += `\n\n${keepIndent(diff)}`;
    if (edits.some((e) => e.truncated)) detail += '\n\n(The file is too long to show whole: its text is cut.)';
    detail += `\n\n${REVIEW_LABEL.replace('…', '')} opens the whole change in the diff editor, with Accept and Reject (${p.tool}).`;
  } else {
    message = `${who} wants to use ${p.tool}`;
    detail += formatInput(p.tool, p.input, p.description);
  }
  if (detail.length > MAX_DETAIL) detail = `${detail.slice(0, MAX_DETAIL)}\n… (${detail.length - MAX_DETAIL} more characters)`;
  const options = optionsOf(p);
  const deny = options.filter((o) => o.optionId === 'deny');
  const rest = options.filter((o) => o.optionId !== 'deny');
  const labels = [...deny.map((o) => o.label), ...(edits.length ? [REVIEW_LABEL] : []), ...rest.map((o) => o.label)];
  return { message, detail, labels };
}

/** Map the clicked label back to an option id; undefined (dismissed) or unknown means deny. */
export function permissionAnswer(p: RequestPermissionParams, clicked: string | undefined): RequestPermissionResult {
  const hit = optionsOf(p).find((o) => o.label === clicked);
  const id: PermissionOptionId = hit ? hit.optionId : 'deny';
  return { optionId: id };
}

/** The answers while the diff of an edit is open: Accept (this once) or Reject. */
export function reviewChoices(p: RequestPermissionParams): { label: string; optionId: PermissionOptionId }[] {
  const ids = new Set(optionsOf(p).map((o) => o.optionId));
  const out: { label: string; optionId: PermissionOptionId }[] = [];
  if (ids.has('allow_once')) out.push({ label: 'Accept', optionId: 'allow_once' });
  out.push({ label: 'Reject', optionId: 'deny' });
  return out;
}

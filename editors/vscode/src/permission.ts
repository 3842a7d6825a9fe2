// milk/requestPermission as a modal question: message, detail and buttons; a dismissed
// dialog (or anything unexpected) is a deny. The focused first button (Enter) never allows:
// Deny, or Review… for an edit; there is no Cancel that means Deny again (see `labels`). A
// question about an edit (`edits`) names the files, shows a short diff and offers "Review…",
// which opens the whole change in the diff editor. milk's hand-off question is a question in
// words with only the choices that exist. No `vscode` import.

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

/** The tool of milk's own question: does Claude take over a turn the local model failed? */
export const HAND_OFF_TOOL = 'hand_off_to_claude';
/** The tool of milk's own question: may Claude run once past the day's budget? */
export const BUDGET_TOOL = 'claude_budget';
/** The close button of a question that is not about an edit: it denies and stops the turn. */
export const STOP_LABEL = 'Stop the turn';

export interface PermissionPrompt {
  message: string;
  detail: string;
  /**
   * The buttons, the first one focused (Enter). VS Code adds a Cancel button to every modal
   * unless one is the close affordance (Escape, ×), and never focuses that one: so the close
   * button is `close`, and the focused first button never allows anything. Edit: Review…
   * first, Deny closes. Other tools: Deny first, "Stop the turn" closes. Hand-off: Hand to
   * Claude first, the way to decline closes.
   */
  labels: string[];
  close: string;
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

function labelOf(p: RequestPermissionParams, id: PermissionOptionId): string | undefined {
  return optionsOf(p).find((o) => o.optionId === id)?.label;
}

/** milk's hand-off question, in words: the reason, what each choice does, only real choices. */
function handOffPrompt(p: RequestPermissionParams): PermissionPrompt {
  const why = typeof p.input?.detail === 'string' ? p.input.detail.trim().replace(/\.$/, '') : '';
  const yes = labelOf(p, 'allow_once') ?? 'Hand to Claude';
  const no = labelOf(p, 'deny') ?? (p.localAnswer === false ? "Don't hand off" : 'Keep the local answer');
  const lines = [why ? `Why: ${why}.` : '', `${yes}: Claude Code takes this turn over, with the session's context.`];
  lines.push(p.localAnswer === false ? `${no}: the turn ends as failed (the local model gave no answer).` : `${no}: the turn ends as failed, with the local model's text.`);
  return { message: 'The local model could not finish this turn. Hand it to Claude?', detail: lines.filter(Boolean).join('\n\n'), labels: [yes], close: no };
}

/** milk's budget question, in words: the day's figures and what each choice does. */
function budgetPrompt(p: RequestPermissionParams): PermissionPrompt {
  const yes = labelOf(p, 'allow_once') ?? 'Go on once';
  const no = labelOf(p, 'deny') ?? 'Stop here';
  const input = p.input ?? {};
  const money = (v: unknown) => (typeof v === 'number' ? `$${v.toFixed(2)}` : '?');
  const lines = [
    `Spent on Claude today (${String(input.day ?? 'today')}): ${money(input.spentTodayUsd)} of the ${money(input.limitUsd)} a day set by milk.claude.budgetUsd.`,
    `${yes}: Claude takes this turn anyway; the budget stays as set.`,
    `${no}: the turn ends before Claude starts.`,
  ];
  return { message: "Claude's daily budget for this workspace is reached. Go on with Claude for this turn?", detail: lines.join('\n\n'), labels: [yes], close: no };
}

export function permissionPrompt(p: RequestPermissionParams, opts: { workspaceFolder?: string } = {}): PermissionPrompt {
  if (p.tool === HAND_OFF_TOOL) return handOffPrompt(p);
  if (p.tool === BUDGET_TOOL) return budgetPrompt(p);
  const who = p.agent === 'claude' ? 'Claude' : 'The local agent';
  const edits = p.edits ?? [];
  let message: string;
  let detail = '';
  if (edits.length) {
    // the summary and the diff say what changes: the description would say it again (or,
    // for Claude's Write, only name the file)
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
    if (p.description) detail += `${p.description}\n\n`;
    detail += formatInput(p.tool, p.input, p.description);
  }
  if (detail.length > MAX_DETAIL) detail = `${detail.slice(0, MAX_DETAIL)}\n… (${detail.length - MAX_DETAIL} more characters)`;
  const options = optionsOf(p);
  const deny = labelOf(p, 'deny') ?? 'Deny';
  const allows = options.filter((o) => o.optionId !== 'deny').map((o) => o.label);
  if (edits.length) return { message, detail, labels: [REVIEW_LABEL, ...allows], close: deny };
  return { message, detail, labels: [deny, ...allows], close: STOP_LABEL };
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

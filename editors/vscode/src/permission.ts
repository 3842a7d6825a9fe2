// milk/requestPermission as a modal question: message, detail and buttons; a dismissed
// dialog (or anything unexpected) is a deny. No `vscode` import.

import type { PermissionOption, PermissionOptionId, RequestPermissionParams, RequestPermissionResult } from './methods';

export const DEFAULT_OPTIONS: PermissionOption[] = [
  { optionId: 'allow_once', label: 'Allow once' },
  { optionId: 'allow_session', label: 'Allow for this session' },
  { optionId: 'deny', label: 'Deny' },
];

export interface PermissionPrompt {
  message: string;
  detail: string;
  /** button labels, in the server's order */
  labels: string[];
}

const MAX_DETAIL = 1500;

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

export function permissionPrompt(p: RequestPermissionParams): PermissionPrompt {
  const who = p.agent === 'claude' ? 'Claude' : 'The local agent';
  const message = `${who} wants to use ${p.tool}`;
  let detail = '';
  if (p.description) detail += `${p.description}\n\n`;
  detail += formatInput(p.tool, p.input, p.description);
  if (detail.length > MAX_DETAIL) detail = `${detail.slice(0, MAX_DETAIL)}\n… (${detail.length - MAX_DETAIL} more characters)`;
  const options = p.options?.length ? p.options : DEFAULT_OPTIONS;
  return { message, detail, labels: options.map((o) => o.label) };
}

/** Map the clicked label back to an option id; undefined (dismissed) or unknown means deny. */
export function permissionAnswer(p: RequestPermissionParams, clicked: string | undefined): RequestPermissionResult {
  const options = p.options?.length ? p.options : DEFAULT_OPTIONS;
  const hit = options.find((o) => o.label === clicked);
  const id: PermissionOptionId = hit ? hit.optionId : 'deny';
  return { optionId: id };
}

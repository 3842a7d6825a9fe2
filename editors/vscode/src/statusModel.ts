// What the status bar item shows. No `vscode` import.

import type { NextRoute, Status } from './methods';
import type { Busy } from './controller';
import type { ServerState } from './viewMessages';

export interface StatusBarView {
  text: string;
  tooltip: string;
  /** the item's background goes to the warning colour */
  warning: boolean;
}

export function statusBarView(input: {
  serverState: ServerState;
  busy: Busy;
  status?: Status;
  problem?: string;
  /** where the next message of the active session goes */
  nextRoute?: NextRoute;
  /** the user chose "Back to local" for the next message */
  routeOverride?: 'local';
  /** `milk/stats` text: the routing numbers, added to a running server's tooltip */
  stats?: string;
}): StatusBarView {
  const v = baseView(input);
  const running = input.serverState === 'running';
  return running && input.stats ? { ...v, tooltip: `${v.tooltip}\n\n${input.stats}` } : v;
}

function baseView(input: Parameters<typeof statusBarView>[0]): StatusBarView {
  const { serverState, busy, status } = input;
  const model = status?.local?.model || undefined;
  // the embedded engine (milk runs llama.cpp itself) says so: "embedded · model"
  const embedded = status?.local?.provider === 'embedded' ? ' · embedded' : '';
  const modelPart = model ? `${embedded} · ${model}` : embedded;
  if (serverState === 'failed' || serverState === 'stopped') {
    return {
      text: '$(error) milk: server not running',
      tooltip: input.problem ?? 'The milk-lsp server is not running. Click to open the chat.',
      warning: true,
    };
  }
  if (serverState === 'starting') {
    // `problem` while starting: what the start waits for (milk installing its own server)
    return { text: '$(loading~spin) milk: starting', tooltip: input.problem ?? 'Starting milk-lsp…', warning: false };
  }
  if (busy === 'claude') return { text: '$(sync~spin) milk: Claude running', tooltip: 'Claude Code is answering. Click to open the chat.', warning: false };
  if (busy === 'local' || busy === 'pending') {
    return { text: `$(sync~spin) milk: local running${modelPart}`, tooltip: 'The local model is answering. Click to open the chat.', warning: false };
  }
  const problems: string[] = [];
  if (status && !status.local.reachable) {
    problems.push(`Local model unreachable at ${status.local.baseUrl}${status.local.error ? `: ${status.local.error}` : ''}`);
  }
  if (status && !status.claude.found) {
    problems.push(`claude not found${status.claude.error ? `: ${status.claude.error}` : ''}`);
  }
  if (problems.length) {
    const what = status && !status.local.reachable ? 'model unreachable' : 'claude not found';
    return { text: `$(warning) milk: ${what}`, tooltip: `${problems.join('\n')}\nRun "milk: Doctor" for details.`, warning: true };
  }
  if (input.nextRoute?.agent === 'claude' && input.routeOverride !== 'local') {
    return {
      text: `$(comment-discussion) milk${modelPart} · next: Claude`,
      tooltip:
        `Your next message goes to Claude (${input.nextRoute.reason}). ` +
        'To go back to the local model, click "Back to local" in the chat or run "milk: Back to Local Model".',
      warning: false,
    };
  }
  return {
    text: `$(comment-discussion) milk${modelPart}`,
    tooltip: `milk is idle${model ? ` (local model ${model}` : ''}${model ? ')' : ''}. ${
      input.nextRoute ? `Your next message goes to the local model (${input.nextRoute.reason}). ` : ''
    }Click to open the chat.`,
    warning: false,
  };
}

/** milk: Doctor as Markdown. */
export function doctorReport(s: Status, extra: { serverCommand?: string; extensionVersion?: string } = {}): string {
  const ok = (b: boolean) => (b ? '✅' : '❌');
  const lines = [
    '# milk doctor',
    '',
    `- milk-lsp version: ${s.version}`,
    extra.serverCommand ? `- server command: \`${extra.serverCommand}\`` : '',
    extra.extensionVersion ? `- extension version: ${extra.extensionVersion}` : '',
    `- storage: \`${s.storage}\``,
    '',
    '## Local model',
    '',
    `- ${ok(s.local.reachable)} endpoint: ${s.local.baseUrl}`,
    `- model: ${s.local.model ?? '(none found)'}`,
    s.local.error ? `- error: ${s.local.error}` : '',
    '',
    '## Claude Code',
    '',
    `- ${ok(s.claude.found)} path: ${s.claude.path ?? '(not found)'}`,
    s.claude.version ? `- version: ${s.claude.version}` : '',
    s.claude.error ? `- error: ${s.claude.error}` : '',
    s.claude.skipPermissions ? '- ⚠️ claude.skipPermissions is on: Claude uses tools without asking' : '',
    '',
    '```json',
    JSON.stringify(s, null, 2),
    '```',
    '',
  ];
  return lines.filter((l, i, a) => !(l === '' && a[i - 1] === '')).filter((l) => l !== undefined).join('\n');
}

// What the status bar item shows. No `vscode` import.

import { vscodeSettingNames } from './config';
import type { AgentName, NextRoute, Status } from './methods';
import type { ServerState } from './viewMessages';

/** Which agent runs a turn of the session (or `pending`: asked, not started), if any. */
export type Busy = AgentName | 'pending' | undefined;

/** A turn found the model server down (controller.ts `localDown`): what it said. */
export interface LocalDown {
  detail?: string;
}

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
  /** the last turn found the model server down (until a local turn works or the status says it answers) */
  localDown?: LocalDown;
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
  const down = localDownLine(status, input.localDown);
  const downWord = status?.local?.provider === 'embedded' ? 'embedded engine not available' : 'model server down';
  if (busy === 'claude') {
    // handed to Claude because the model server is down: say so while Claude (paid) answers
    if (down) {
      return { text: `$(sync~spin) milk: Claude running · ${downWord}`, tooltip: `Claude Code is answering.\n${down}\nClick to open the chat.`, warning: true };
    }
    return { text: '$(sync~spin) milk: Claude running', tooltip: 'Claude Code is answering. Click to open the chat.', warning: false };
  }
  if (busy === 'local' || busy === 'pending') {
    return { text: `$(sync~spin) milk: local running${modelPart}`, tooltip: 'The local model is answering. Click to open the chat.', warning: false };
  }
  const problems: string[] = [];
  if (down) problems.push(down);
  if (status && !status.claude.found) {
    problems.push(`claude not found${status.claude.error ? `: ${vscodeSettingNames(status.claude.error)}` : ''}`);
  }
  if (problems.length) {
    const what = down ? `milk · ${downWord}` : 'milk: claude not found';
    return { text: `$(warning) ${what}`, tooltip: `${problems.join('\n')}\nRun "milk: Doctor" for details.`, warning: true };
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

/**
 * The one line saying the local model cannot be reached: the URL (or the embedded engine,
 * which has none) named once, with the server's reason. Undefined when nothing says so.
 */
export function localDownLine(status: Status | undefined, localDown: LocalDown | undefined): string | undefined {
  const statusDown = !!status && status.local.reachable === false;
  if (!statusDown && !localDown) return undefined;
  const detail = localDown?.detail?.trim() || (statusDown ? status?.local.error?.trim() : undefined) || '';
  const error = vscodeSettingNames(detail).replace(/[.;\s]+$/, '');
  if (status?.local?.provider === 'embedded') return `The embedded engine is not available${error ? `: ${error}` : ''}.`;
  const url = status?.local?.baseUrl?.trim();
  if (error && (!url || error.includes(url))) return `The model server is down: ${error}.`;
  if (url) return `The model server at ${url} is down${error ? `: ${error}` : ''}.`;
  return 'The model server is down.';
}

/** The embedded engine is not installed where the server runs (its status says how to install it). */
export function embeddedEngineMissing(s: Status | undefined): boolean {
  return !!s && s.local.provider === 'embedded' && !s.local.reachable && /milk-lsp\[embedded\]/.test(s.local.error ?? '');
}

/** The notification offering to install the embedded engine into milk's own server environment. */
export function embeddedEngineOffer(s: Status): string {
  const why = vscodeSettingNames(s.local.error ?? '').replace(/[.;\s]+$/, '');
  return (
    `milk: the embedded engine is not available${why ? ` (${why})` : ''}. ` +
    "Install it into milk's own server environment? milk runs pip install 'milk-lsp[embedded]' there and restarts the server."
  );
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
    s.local.provider === 'embedded' && !s.local.baseUrl
      ? `- ${ok(s.local.reachable)} the embedded engine${s.local.loadState ? ` (${s.local.loadState})` : ''}`
      : `- ${ok(s.local.reachable)} endpoint: ${s.local.baseUrl}`,
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

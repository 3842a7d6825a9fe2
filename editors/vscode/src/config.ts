// Settings: the `milk.*` keys of package.json mapped to the nested object the server reads
// from initializationOptions and workspace/configuration section `milk` (PROTOCOL.md's
// configuration table). No `vscode` import: the caller passes a getter.

/** Keys sent to the server, as dotted paths below `milk`. */
export const SERVER_SETTING_KEYS = [
  'local.baseUrl',
  'local.model',
  'local.apiKey',
  'local.maxToolRounds',
  'local.turnBudgetSeconds',
  'local.requestTimeoutSeconds',
  'local.temperature',
  'local.textToolCalls',
  'local.maxTokens',
  'local.checkCommand',
  'local.handOff',
  'local.memoryTags',
  'local.strategy',
  'local.provider',
  'local.modelPath',
  'local.contextSize',
  'local.maxReplyTokens',
  'local.threads',
  'local.idleStopSeconds',
  'claude.path',
  'claude.allowedTools',
  'claude.addDirs',
  'claude.model',
  'claude.skipPermissions',
  'claude.permissionTimeoutSeconds',
  'claude.budgetUsd',
  'contextBudgetChars',
  'route',
  'storageDir',
] as const;

/** Keys that only the extension reads (how to start the server): changing one restarts it. */
export const CLIENT_SETTING_KEYS = ['server.path', 'server.python'] as const;

/**
 * Keys naming a file or folder of the machine the server runs on. They are read from the User
 * settings in remote windows too (scope `window`), and never from an untrusted workspace
 * (package.json `restrictedConfigurations`): a workspace must not pick the binaries milk runs.
 */
export const MACHINE_PATH_KEYS = ['server.path', 'server.python', 'claude.path', 'storageDir', 'local.modelPath'] as const;

const DOTTED_SERVER_KEYS = SERVER_SETTING_KEYS.filter((k) => k.includes('.') || k === 'storageDir' || k === 'contextBudgetChars');
const SERVER_KEY_IN_TEXT = new RegExp(
  `(?<![\\w.\\-/])(${DOTTED_SERVER_KEYS.map((k) => k.replace('.', '\\.')).join('|')})(?![\\w])`,
  'g',
);

/**
 * The server's messages name its settings as `claude.path`, `local.baseUrl`; in VS Code they
 * are `milk.claude.path`, `milk.local.baseUrl`. Names already prefixed are left alone.
 */
export function vscodeSettingNames(text: string): string {
  return String(text ?? '').replace(SERVER_KEY_IN_TEXT, 'milk.$1');
}

export type SettingGetter = (key: string) => unknown;

/**
 * Build `{"local": {...}, "claude": {...}, ...}` from the flat `milk.*` settings.
 * Empty strings mean "not set" (the server's default applies, e.g. `local.model`: the first
 * model the endpoint lists), so they are left out, as are `undefined`/`null`.
 */
export function buildServerSettings(get: SettingGetter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    const value = get(key);
    if (value === undefined || value === null) continue;
    if (typeof value === 'string' && value.trim() === '') continue;
    setPath(out, key, Array.isArray(value) ? [...value] : value);
  }
  return out;
}

function setPath(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    if (typeof cur[part] !== 'object' || cur[part] === null) cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]] = value;
}

/** What a configuration change means for the running client. */
export function classifyChange(affects: (key: string) => boolean): 'restart' | 'push' | 'none' {
  if (CLIENT_SETTING_KEYS.some((k) => affects(`milk.${k}`))) return 'restart';
  if (affects('milk')) return 'push';
  return 'none';
}

/** Answer to a workspace/configuration request: one entry per item, ours for section `milk`. */
export function answerConfiguration(
  items: { section?: string }[],
  settings: Record<string, unknown>,
): unknown[] {
  return items.map((item) => {
    if (item.section === 'milk') return settings;
    if (item.section && item.section.startsWith('milk.')) {
      let cur: unknown = settings;
      for (const part of item.section.slice('milk.'.length).split('.')) {
        cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[part] : undefined;
      }
      return cur ?? null;
    }
    return null;
  });
}

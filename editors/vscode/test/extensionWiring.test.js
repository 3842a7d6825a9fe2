// Issue 31: the REAL bundled extension (dist/extension.js) under the mocked `vscode`, with a
// scripted in-memory RPC in place of the server (no milk-lsp process): the status bar after a
// turn that found the model server down (item 1), Doctor rendered read-only (item 6), and the
// embedded engine's install button on milk's own server (item 9).
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createMock, installMock, Uri } = require('./support/mock-vscode');
const { Methods } = require('../out/lib/methods.js');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'milk-wiring-test-'));
const globalStorage = path.join(tmp, 'globalStorage');
let mock, uninstall, ext, api;
let status;
const sent = [];

const STATUS_OK = {
  version: '0.1.0',
  local: { baseUrl: 'http://127.0.0.1:9/v1', model: 'qwen3', reachable: true, provider: 'openai' },
  claude: { path: '/usr/bin/claude', found: true },
  storage: '/tmp/s',
};
const UNREACHABLE = 'no local model reachable at http://127.0.0.1:9/v1: connection refused; start Ollama/llama-server or set local.baseUrl';
let chatResult;

/** What the server would answer, per method. */
const rpc = {
  sendRequest(method, params) {
    sent.push({ method, params });
    switch (method) {
      case Methods.STATUS:
        return Promise.resolve(status());
      case Methods.CHAT:
        return Promise.resolve({ sessionId: 's1', turnId: `t${sent.length}`, text: '', ...chatResult });
      case Methods.SESSION_LIST:
        return Promise.resolve({ sessions: [] });
      case Methods.STATS:
        return Promise.reject(Object.assign(new Error('no'), { code: -32601 }));
      default:
        return Promise.resolve(null);
    }
  },
  onNotification: () => ({ dispose() {} }),
};

const statusText = () => mock.statusItems[0].text;
const settle = () => new Promise((r) => setTimeout(r, 20));

before(async () => {
  mock = createMock();
  Object.assign(mock.settings, { 'milk.server.path': path.join(tmp, 'no-such-milk-lsp'), 'milk.server.python': '', 'milk.route': 'auto' });
  uninstall = installMock(mock);
  ext = require('../dist/extension.js');
  const root = path.join(tmp, 'extension');
  fs.mkdirSync(root, { recursive: true });
  api = await ext.activate({
    subscriptions: [],
    extensionUri: Uri.file(root),
    extensionPath: root,
    workspaceState: (() => { const m = new Map(); return { get: (k) => m.get(k), update: async (k, v) => void m.set(k, v), keys: () => [...m.keys()] }; })(),
    globalStorageUri: Uri.file(globalStorage),
    asAbsolutePath: (p) => path.join(root, p),
    extension: { packageJSON: require('../package.json') },
  });
  // no server (milk.server.path names none): the scripted RPC stands in for a running one
  for (let i = 0; i < 200 && api.controller.serverState !== 'failed'; i++) await settle();
  api.controller.attach(rpc);
  api.controller.setServerState('running');
  api.controller.activeSessionId = 's1';
});

after(async () => {
  try {
    if (ext) await ext.deactivate();
  } finally {
    uninstall?.();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('item 1: a turn handed to Claude because the model server is down turns the status bar to a warning at once', async () => {
  status = () => STATUS_OK;
  await api.refreshStatus();
  assert.equal(statusText(), '$(comment-discussion) milk · qwen3');
  status = () => ({ ...STATUS_OK, local: { ...STATUS_OK.local, reachable: false, error: UNREACHABLE } });
  chatResult = { agent: 'claude', stopReason: 'end_turn', escalated: { by: 'fallback', reason: UNREACHABLE, signal: 'model_unreachable' } };
  await api.controller.send('fix it');
  // no status read needed: the result says it
  assert.equal(statusText(), '$(warning) milk · model server down');
  assert.ok(mock.statusItems[0].backgroundColor?.id === 'statusBarItem.warningBackground');
  const tip = mock.statusItems[0].tooltip;
  assert.equal(tip.split('http://127.0.0.1:9/v1').length - 1, 1, tip);
  await settle();
  assert.match(statusText(), /model server down/, 'the status read after it agrees');
  // the model server is back: a local turn that works clears it
  status = () => STATUS_OK;
  chatResult = { agent: 'local', stopReason: 'end_turn' };
  await api.controller.send('again');
  await settle();
  assert.equal(statusText(), '$(comment-discussion) milk · qwen3');
});

test('item 1: the hand-off question of an unreachable model server warns before it is answered', async () => {
  status = () => STATUS_OK;
  await api.refreshStatus();
  assert.doesNotMatch(statusText(), /down/);
  let whileAsked;
  mock.answerWarning = (message, opts, items) => {
    whileAsked = statusText();
    return opts.modal ? items.find((i) => i === "Don't hand off") : undefined;
  };
  const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) };
  const answer = await api.askPermission(
    {
      sessionId: 's1',
      turnId: 't9',
      agent: 'local',
      toolCallId: 'handoff-t9',
      tool: 'hand_off_to_claude',
      input: { signal: 'model_unreachable', detail: UNREACHABLE },
      description: 'The model server is unreachable. Hand this turn to Claude?',
      options: [
        { optionId: 'allow_once', label: 'Hand to Claude' },
        { optionId: 'deny', label: "Don't hand off" },
      ],
      localAnswer: false,
    },
    token,
  );
  mock.answerWarning = () => undefined;
  assert.equal(answer.optionId, 'deny');
  assert.match(whileAsked, /model server down/, 'while the question was open');
});

test('item 6: milk: Doctor opens the report rendered and read-only (Markdown preview of a milk-doctor: document)', async () => {
  status = () => STATUS_OK;
  const shown = mock.shownDocuments.length;
  mock.executed.length = 0;
  await mock.vscode.commands.executeCommand('milk.doctor');
  const preview = mock.executed.find(([id]) => id === 'markdown.showPreview');
  assert.ok(preview, mock.executed.map(([id]) => id).join(', '));
  const uri = preview[1];
  assert.equal(uri.scheme, 'milk-doctor');
  const provider = mock.contentProviders.get('milk-doctor');
  assert.ok(provider, 'a read-only content provider for the scheme');
  assert.match(provider.provideTextDocumentContent(uri), /^# milk doctor/);
  assert.match(provider.provideTextDocumentContent(uri), /endpoint: http:\/\/127\.0\.0\.1:9\/v1/);
  assert.equal(mock.shownDocuments.length, shown, 'no text editor: nothing editable, no raw Markdown');
  assert.ok(!mock.executed.some(([id]) => id === 'vscode.open' || id === 'workbench.action.files.newUntitledFile'));
});

test("item 9: milk's own server without the embedded engine: the offer names it and its button runs pip in milk's venv", async () => {
  api.serverCommand = { command: path.join(globalStorage, 'venv', 'bin', 'milk-lsp'), args: [], source: 'installed' };
  status = () => ({
    ...STATUS_OK,
    local: { baseUrl: '', model: 'qwen', reachable: false, provider: 'embedded', loadState: 'stopped', error: "local.provider is embedded but xllamacpp is not installed: install the embedded engine: pip install 'milk-lsp[embedded]'" },
  });
  mock.errors.length = 0;
  mock.warnings.length = 0;
  mock.progress.length = 0;
  mock.answerWarning = (message, opts, items) => (items.includes('Install the embedded engine') ? 'Install the embedded engine' : undefined);
  try {
    await api.refreshStatus();
    assert.match(statusText(), /embedded engine not available/);
    assert.doesNotMatch(mock.statusItems[0].tooltip, /at :/);
    const offer = mock.warnings.find((w) => w.items.includes('Install the embedded engine'));
    assert.ok(offer, 'offered');
    assert.match(offer.message, /the embedded engine is not available/);
    // the venv has no python here, so pip does not run: the failure names the venv's python
    const venvPython = path.join(globalStorage, 'venv', process.platform === 'win32' ? 'Scripts' : 'bin', process.platform === 'win32' ? 'python.exe' : 'python');
    let err;
    for (let i = 0; i < 200 && !err; i++, await settle()) err = mock.errors.find((e) => /installing the embedded engine failed/.test(e.message));
    assert.ok(err, 'the install ran and failed');
    assert.ok(err.message.includes(venvPython), err.message);
    assert.match(err.message, /milk-lsp\[embedded\]/);
    assert.ok(mock.progress.some((p) => p.options.title === 'milk: installing the embedded engine'));
    // once per start
    const offers = mock.warnings.length;
    await api.refreshStatus();
    assert.equal(mock.warnings.length, offers);
  } finally {
    mock.answerWarning = () => undefined;
    api.serverCommand = undefined;
  }
});

test("issue 38: a cited source's link opens the file of the chat's folder (a multi-root window), its lines selected", async () => {
  const roots = { api: path.join(tmp, 'ws', 'api'), web: path.join(tmp, 'ws', 'web') };
  for (const root of Object.values(roots)) {
    fs.mkdirSync(path.join(root, 'src'), { recursive: true });
    fs.mkdirSync(path.join(root, 'données'), { recursive: true });
    fs.writeFileSync(path.join(root, 'src', 'my app.py'), 'a\nb\nc\nd\ne\n');
    fs.writeFileSync(path.join(root, 'données', 'é.py'), 'x = 1\n');
  }
  const before = mock.vscode.workspace.workspaceFolders;
  mock.vscode.workspace.workspaceFolders = [
    { uri: Uri.file(roots.api), name: 'api', index: 0 },
    { uri: Uri.file(roots.web), name: 'web', index: 1 },
  ];
  const opened = async (m) => {
    const n = mock.shownDocuments.length;
    mock.webview.send(m);
    for (let i = 0; i < 200 && mock.shownDocuments.length === n; i++) await settle();
    assert.equal(mock.shownDocuments.length, n + 1, `opened for ${JSON.stringify(m)}`);
    const sel = mock.shownOptions.at(-1).selection;
    return { file: mock.shownDocuments.at(-1).fsPath, selection: sel && [sel.start.line, sel.start.character, sel.end.line, sel.end.character] };
  };
  try {
    // the chat works on the second folder
    assert.equal(await mock.vscode.commands.executeCommand('milk.chooseFolder', Uri.file(roots.web).toString()), true);
    await mock.vscode.commands.executeCommand('milk.openChat');
    // `- src/my app.py:2-4`: lines 2 to 4 selected whole
    assert.deepEqual(await opened({ type: 'openFile', path: 'src/my app.py', line: 2, endLine: 4 }), {
      file: path.join(roots.web, 'src', 'my app.py'),
      selection: [1, 0, 4, 0],
    });
    // `- données/é.py:1`: its one line selected
    assert.deepEqual(await opened({ type: 'openFile', path: 'données/é.py', line: 1, endLine: 1 }), {
      file: path.join(roots.web, 'données', 'é.py'),
      selection: [0, 0, 1, 0],
    });
    // a file name in prose (no range): the caret at its line, as before
    assert.deepEqual(await opened({ type: 'openFile', path: 'src/my app.py', line: 3 }), {
      file: path.join(roots.web, 'src', 'my app.py'),
      selection: [2, 0, 2, 0],
    });
  } finally {
    await mock.vscode.commands.executeCommand('milk.chooseFolder', Uri.file(roots.api).toString());
    mock.vscode.workspace.workspaceFolders = before;
  }
});

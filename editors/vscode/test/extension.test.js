// The REAL bundled extension (dist/extension.js, with the real vscode-languageclient inside)
// loaded under the small mocked `vscode` module of support/mock-vscode.js, against the REAL
// milk-lsp server, the scripted OpenAI-compatible server and the Messages-API stand-in.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const S = require('./support/servers');
const { createMock, installMock, Uri, Selection } = require('./support/mock-vscode');

describe('bundled extension + real language client + real milk-lsp (mocked vscode)', () => {
  let sandbox, openai, anthropic, mock, uninstall, ext, api;
  const savedEnv = { ...process.env };

  const waitFor = async (cond, what, ms = 30000) => {
    const t0 = Date.now();
    for (;;) {
      const v = await cond();
      if (v) return v;
      if (Date.now() - t0 > ms) throw new Error(`timeout waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const posted = (type) => mock.webview.posted.filter((m) => m.type === type);
  const statusText = () => mock.statusItems[0].text;

  before(async () => {
    S.requireServer();
    sandbox = S.makeSandbox();
    const env = S.serverEnv(sandbox);
    [openai, anthropic] = await Promise.all([
      S.startFake('tests.fakes.openai_server', [], env),
      S.startFake('tests.fakes.anthropic_api', [], env),
    ]);
    // the language client starts the server with the extension host's environment
    Object.assign(process.env, S.serverEnv(sandbox, anthropic.url));
    mock = createMock();
    mock.vscode.workspace.workspaceFolders = [{ uri: Uri.file(sandbox.workspace), name: 'workspace', index: 0 }];
    Object.assign(mock.settings, {
      'milk.server.path': S.MILK_LSP,
      'milk.server.python': '',
      'milk.local.baseUrl': openai.url,
      'milk.local.model': '',
      'milk.local.maxToolRounds': 5,
      'milk.claude.path': S.findClaude() ?? '',
      'milk.claude.allowedTools': [],
      'milk.claude.addDirs': [],
      'milk.claude.skipPermissions': false,
      'milk.contextBudgetChars': 12000,
      'milk.route': 'auto',
      'milk.storageDir': sandbox.storage,
    });
    uninstall = installMock(mock);
    ext = require('../dist/extension.js');
    const root = path.join(__dirname, '..');
    const ctx = {
      subscriptions: [],
      extensionUri: Uri.file(root),
      extensionPath: root,
      asAbsolutePath: (p) => path.join(root, p),
      extension: { packageJSON: require('../package.json') },
    };
    api = await ext.activate(ctx);
  });

  after(async () => {
    try {
      const t0 = Date.now();
      if (ext) await ext.deactivate();
      console.log(`deactivate took ${Date.now() - t0} ms`);
    } finally {
      uninstall?.();
      openai?.stop();
      anthropic?.stop();
      sandbox?.cleanup();
      for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
      Object.assign(process.env, savedEnv);
      if (mock) console.log('auto-stubbed vscode API touched:', [...mock.autoStubbed].sort().join(', ') || '(none)');
    }
  });

  it('starts the server and shows the local model in the status bar', async () => {
    await waitFor(() => /fake-model/.test(statusText()), `status bar with the model (now "${statusText()}")`);
    assert.equal(mock.statusItems[0].command, 'milk.openChat');
    assert.ok(mock.statusItems[0].visible);
    assert.equal(api.client.initializeResult.capabilities.experimental.milk.protocolVersion, 1);
    for (const id of ['milk.openChat', 'milk.askAboutSelection', 'milk.escalate', 'milk.cancel', 'milk.newSession', 'milk.switchSession', 'milk.showContext', 'milk.doctor']) {
      assert.ok(mock.commands.has(id), `${id} registered`);
    }
    // every command is declared in package.json
    const declared = require('../package.json').contributes.commands.map((c) => c.command);
    for (const id of mock.commands.keys()) assert.ok(declared.includes(id), `${id} declared`);
  });

  it('advertises experimental.milk.requestPermission', () => {
    const caps = {};
    for (const f of api.client._features ?? []) if (f.fillClientCapabilities) f.fillClientCapabilities(caps);
    assert.deepEqual(caps.experimental?.milk, { requestPermission: true });
  });

  it('opens the chat view with a strict CSP and an empty history', async () => {
    await mock.vscode.commands.executeCommand('milk.openChat');
    await waitFor(() => posted('history').length > 0, 'history posted');
    const html = mock.webview.view.webview.html;
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)[1];
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-[A-Za-z0-9]{32}'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    const nonce = /nonce-([A-Za-z0-9]+)/.exec(csp)[1];
    const scripts = [...html.matchAll(/<script\b([^>]*)>/g)];
    assert.ok(scripts.length === 1 && scripts[0][1].includes(`nonce="${nonce}"`), 'the only script carries the nonce');
    assert.equal(mock.webview.view.webview.options.enableScripts, true);
    assert.equal(posted('history').at(-1).data, null);
    assert.equal(posted('meta').at(-1).serverState, 'running');
  });

  it('send from the webview: streamed updates reach the view, then the result', async () => {
    await openai.script([{ text: 'Streaming *answer* from the fake.', chunk_chars: 5, delay: 0.01 }]);
    mock.webview.send({ type: 'send', text: 'hello milk' });
    const result = await waitFor(() => posted('result').at(-1), 'result');
    assert.equal(result.result.text, 'Streaming *answer* from the fake.');
    const ups = posted('update').map((m) => m.update);
    assert.equal(ups[0].kind, 'turn_started');
    assert.equal(ups.at(-1).kind, 'turn_ended');
    assert.equal(ups.filter((u) => u.kind === 'text').map((u) => u.delta).join(''), 'Streaming *answer* from the fake.');
    assert.ok(mock.statusItems[0].texts.some((t) => /local running/.test(t)), 'status bar showed local running');
    assert.ok(mock.progress.some((p) => p.options.title === 'milk: local'), 'native work-done progress');
    await waitFor(() => posted('sessions').some((m) => m.sessions.length === 1 && m.activeId), 'session list with the new session');
  });

  it('cancel from the webview ends the turn as cancelled', { timeout: 60000 }, async () => {
    await openai.script([{ text: 'stalling…', stall: 30 }]);
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'please stall' });
    await waitFor(() => api.controller.busy() === 'local', 'busy local');
    mock.webview.send({ type: 'cancel' });
    const result = await waitFor(() => posted('result').length > before && posted('result').at(-1), 'cancelled result', 20000);
    assert.equal(result.result.stopReason, 'cancelled');
    await waitFor(() => /milk · fake-model/.test(statusText()), 'status bar back to idle');
  });

  it('Milk: Ask About Selection attaches the selection and the file', async () => {
    const file = path.join(sandbox.workspace, 'hello.py');
    const text = fs.readFileSync(file, 'utf8');
    const lines = text.split('\n');
    mock.activeTextEditor = {
      document: {
        uri: Uri.file(file),
        isDirty: true,
        isUntitled: false,
        getText: (range) => (range ? lines[0] : text),
      },
      selection: new Selection(0, 0, 0, lines[0].length),
    };
    // the model looks before it answers (an unchecked answer about the code gets milk's nudge)
    await openai.script([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'hello.py' } }] },
      { text: 'It greets.' },
    ]);
    const r = await mock.vscode.commands.executeCommand('milk.askAboutSelection', 'what does greet do?');
    assert.equal(r.text, 'It greets.');
    const reqs = await openai.requests();
    const body = JSON.stringify(reqs.at(-1));
    assert.match(body, /what does greet do\?/);
    assert.match(body, /def greet\(name\)/, 'the selection reached the model');
    assert.equal(posted('user').at(-1).attachments[0], 'hello.py:1-1');
  });

  it('escalate from the webview; the permission modal (Allow once) lets Claude run Bash', { timeout: 120000 }, async () => {
    await anthropic.script([
      { tool_use: { name: 'Bash', input: { command: 'touch ext-allowed.txt', description: 'Create a marker' } } },
      { text: 'Marker created by Claude.' },
    ]);
    mock.answerWarning = (message, opts, items) => (opts.modal && /wants to use Bash/.test(message) ? 'Allow once' : undefined);
    const before = posted('result').length;
    mock.webview.send({ type: 'escalate' });
    const result = await waitFor(() => posted('result').length > before && posted('result').at(-1), 'escalation result', 110000);
    assert.equal(result.result.agent, 'claude', JSON.stringify(result.result));
    assert.match(result.result.text, /Marker created by Claude\./);
    const modal = mock.modalCalls.find((c) => /Claude wants to use Bash/.test(c.message));
    assert.ok(modal, 'modal permission prompt');
    assert.deepEqual(modal.items, ['Allow once', 'Allow for this session', 'Deny']);
    assert.match(modal.options.detail, /touch ext-allowed.txt/);
    assert.ok(fs.existsSync(path.join(sandbox.workspace, 'ext-allowed.txt')));
    assert.ok(mock.statusItems[0].texts.some((t) => /Claude running/.test(t)), 'status bar showed Claude running');
    const esc = posted('update').map((m) => m.update).find((u) => u.kind === 'escalated');
    assert.equal(esc.by, 'user');
  });

  it('Milk: Doctor and Milk: Show Escalation Context open read-only documents', async () => {
    await mock.vscode.commands.executeCommand('milk.doctor');
    const doctor = mock.shownDocuments.at(-1);
    assert.equal(doctor.uri.scheme, 'milk');
    assert.match(doctor.getText(), /# milk doctor/);
    assert.match(doctor.getText(), /fake-model/);
    await mock.vscode.commands.executeCommand('milk.showContext');
    const ctx = mock.shownDocuments.at(-1);
    assert.equal(ctx.uri.scheme, 'milk');
    assert.match(ctx.getText(), /# milk escalation context \(mode: \w+\)/);
    assert.match(ctx.getText(), /## <context-file>/);
  });

  it('settings take effect without a reload (workspace/configuration pull)', async () => {
    mock.setSettings({ 'milk.local.model': 'live-model' });
    await waitFor(() => /live-model/.test(statusText()), `status bar with the new model (now "${statusText()}")`, 10000);
    assert.equal(api.client.state, 2 /* Running: not restarted */);
  });

  it('milk.local.requestTimeoutSeconds reaches the server: a silent model fails the turn', { timeout: 60000 }, async () => {
    // changed together with the model, so the status bar shows when the server has pulled both
    mock.setSettings({ 'milk.local.model': 'timeout-model', 'milk.local.requestTimeoutSeconds': 1 });
    try {
      await waitFor(() => /timeout-model/.test(statusText()), `status bar with timeout-model (now "${statusText()}")`, 10000);
      await openai.script([{ stall: 30 }]);
      const t0 = Date.now();
      // route local: the session carries on with Claude since the escalation above
      const result = await S.withTimeout(api.controller.send('are you there?', { route: 'local' }), 20000, 'failed turn');
      assert.equal(result.stopReason, 'error', JSON.stringify(result));
      assert.equal(result.agent, 'local');
      assert.equal(result.error.reason, 'local_failed');
      assert.match(result.error.message, /sent nothing for 1 s \(the read timeout\)/);
      assert.ok(Date.now() - t0 < 15000, `failed after ${Date.now() - t0} ms, not the 120 s default`);
    } finally {
      mock.setSettings({ 'milk.local.model': 'live-model', 'milk.local.requestTimeoutSeconds': 120 });
    }
    await waitFor(() => /live-model/.test(statusText()), 'status bar back to live-model', 10000);
  });

  it('sessions: new, switch through the picker, delete with confirmation', async () => {
    const first = api.controller.activeSessionId;
    await mock.vscode.commands.executeCommand('milk.newSession');
    const second = api.controller.activeSessionId;
    assert.notEqual(second, first);
    assert.deepEqual(posted('history').at(-1).data.turns, []);
    mock.answerQuickPick = (items) => items.find((i) => i.sessionId === first);
    await mock.vscode.commands.executeCommand('milk.switchSession');
    assert.equal(api.controller.activeSessionId, first);
    assert.ok(posted('history').at(-1).data.turns.length >= 4, 'history of the first session');
    mock.answerWarning = (message, opts) => (opts.modal && /Delete the milk session/.test(message) ? 'Delete' : undefined);
    mock.webview.send({ type: 'deleteSession', sessionId: second });
    await waitFor(() => api.controller.sessions.length === 1, 'session deleted');
    assert.equal(api.controller.sessions[0].sessionId, first);
  });

  it('a missing server: notification says what to install and opens the setting', async () => {
    mock.errors.length = 0;
    mock.answerError = (m, items) => (items.includes('Open Settings') ? 'Open Settings' : undefined);
    mock.setSettings({ 'milk.server.path': path.join(sandbox.root, 'no-such-milk-lsp') });
    const err = await waitFor(() => mock.errors.find((e) => /pipx install milk-lsp/.test(e.message)), 'not-found notification');
    assert.match(err.message, /milk\.server\.path/);
    assert.deepEqual(err.items, ['Open Settings', 'Show Log']);
    await waitFor(() => mock.executed.find(([id, arg]) => id === 'workbench.action.openSettings' && arg === 'milk.server'), 'the setting opened');
    await waitFor(() => /server not running/.test(statusText()), 'status bar: server not running');
    // fix the setting: the server comes back
    mock.setSettings({ 'milk.server.path': S.MILK_LSP });
    await waitFor(() => api.controller.serverState === 'running' && /live-model/.test(statusText()), 'server running again', 30000);
  });
});

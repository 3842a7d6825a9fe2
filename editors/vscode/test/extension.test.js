// The REAL bundled extension (dist/extension.js, with the real vscode-languageclient inside)
// loaded under the small mocked `vscode` module of support/mock-vscode.js, against the REAL
// milk-lsp server, the scripted OpenAI-compatible server and the Messages-API stand-in.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const S = require('./support/servers');
const { createMock, installMock, Uri, Selection } = require('./support/mock-vscode');
const { tinyWheel } = require('./support/wheels');
const chat = require('../out/lib/chatModel.js');

describe('bundled extension + real language client + real milk-lsp (mocked vscode)', () => {
  let sandbox, openai, anthropic, mock, uninstall, ext, api, globalStorage;
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
    // the extension's folder: its bundled wheel is a tiny stand-in whose milk-lsp becomes the
    // project's real one, so "the server milk installed itself" answers without a 20 s install
    const root = path.join(sandbox.root, 'extension');
    tinyWheel(path.join(root, 'dist', 'wheel'), '0.0.1', S.MILK_LSP);
    globalStorage = path.join(sandbox.root, 'globalStorage');
    const ctx = {
      subscriptions: [],
      extensionUri: Uri.file(root),
      extensionPath: root,
      workspaceState: (() => { const m = new Map(); return { get: (k) => m.get(k), update: async (k, v) => void m.set(k, v), keys: () => [...m.keys()] }; })(),
      globalStorageUri: Uri.file(globalStorage),
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
    // every command of the extension is declared in package.json; the server's own LSP
    // commands (executeCommandProvider) that share a name with one of ours are left to ours
    // (a second registration would throw and stop the client)
    const declared = require('../package.json').contributes.commands.map((c) => c.command);
    const serverCommands = api.client.initializeResult.capabilities.executeCommandProvider?.commands ?? [];
    for (const id of mock.commands.keys()) assert.ok(declared.includes(id) || serverCommands.includes(id), `${id} declared`);
    for (const id of declared) assert.ok(mock.commands.has(id), `${id} registered`);
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
    // Deny first: the modal's default button (Enter); the close button (Escape) stops the turn
    assert.deepEqual(modal.items, ['Deny', 'Allow once', 'Allow for this session', 'Stop the turn']);
    assert.equal(modal.close, 'Stop the turn');
    assert.match(modal.options.detail, /touch ext-allowed.txt/);
    assert.ok(fs.existsSync(path.join(sandbox.workspace, 'ext-allowed.txt')));
    assert.ok(mock.statusItems[0].texts.some((t) => /Claude running/.test(t)), 'status bar showed Claude running');
    const esc = posted('update').map((m) => m.update).find((u) => u.kind === 'escalated');
    assert.equal(esc.by, 'user');
  });

  it('Milk: Doctor (rendered) and Milk: Show Escalation Context open read-only documents', async () => {
    const shown = mock.shownDocuments.length;
    await mock.vscode.commands.executeCommand('milk.doctor');
    // issue 31: the Markdown preview of a milk-doctor: document, not an editor
    const preview = mock.executed.filter(([id]) => id === 'markdown.showPreview').at(-1);
    assert.equal(preview[1].scheme, 'milk-doctor');
    assert.equal(mock.shownDocuments.length, shown);
    const doctor = await mock.vscode.workspace.openTextDocument(preview[1]);
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
    const err = await waitFor(() => mock.errors.find((e) => /pipx install \/path\/to\/milk-lsp/.test(e.message)), 'not-found notification');
    assert.match(err.message, /milk\.server\.path/);
    assert.deepEqual(err.items, ['Open Settings', 'Show Log']);
    await waitFor(() => mock.executed.find(([id, arg]) => id === 'workbench.action.openSettings' && arg === '@id:milk.server.path'), 'the setting opened');
    await waitFor(() => /server not running/.test(statusText()), 'status bar: server not running');
    // fix the setting: the server comes back
    mock.setSettings({ 'milk.server.path': S.MILK_LSP });
    await waitFor(() => api.controller.serverState === 'running' && /live-model/.test(statusText()), 'server running again', 30000);
  });

  // ---- issue 22: the extension installs its own server ------------------------------------

  it('no server anywhere: the offer installs milk-lsp from the bundled wheel, with progress, and it starts', { timeout: 120000 }, async () => {
    // a Python 3.11+ without milk_lsp: the interpreter the project's venv was made from
    const base = require('node:child_process').execFileSync(S.PYTHON, ['-c', 'import sys; print(sys._base_executable)'], { encoding: 'utf8' }).trim();
    const savedPath = process.env.PATH;
    process.env.PATH = '/usr/bin:/bin';
    try {
      assert.ok(!fs.existsSync('/usr/bin/milk-lsp') && !fs.existsSync('/bin/milk-lsp'), 'no milk-lsp on the stripped PATH');
      mock.infos.length = 0;
      mock.progress.length = 0;
      mock.answerInfo = (m, items) => (items.includes('Install milk-lsp') ? 'Install milk-lsp' : undefined);
      mock.setSettings({ 'milk.server.path': '', 'milk.server.python': base });
      await waitFor(() => api.controller.serverState === 'running' && api.serverCommand?.source === 'installed', 'the installed server running', 90000);
      assert.equal(mock.infos.filter((m) => /milk-lsp server is not installed/.test(m)).length, 1, 'offered once');
      assert.match(mock.infos.find((m) => /not installed/.test(m)), /Python 3\.11 or newer/);
      const install = mock.progress.find((p) => p.options.title === 'milk: installing the milk-lsp server');
      assert.ok(install, 'install progress shown');
      assert.ok(install.reports.some((r) => /Successfully installed milk-lsp-0\.0\.1/.test(r.message)), "pip's lines in the progress");
      assert.equal(api.serverCommand.command, path.join(globalStorage, 'venv', 'bin', 'milk-lsp'));
      assert.equal(JSON.parse(fs.readFileSync(path.join(globalStorage, 'venv', 'milk-lsp-wheel.json'), 'utf8')).wheel, 'milk_lsp-0.0.1-py3-none-any.whl');
      await waitFor(() => /live-model/.test(statusText()), 'status bar with the model');

      // an extension update (another wheel than the venv holds) reinstalls without asking
      const markerFile = path.join(globalStorage, 'venv', 'milk-lsp-wheel.json');
      const marker = JSON.parse(fs.readFileSync(markerFile, 'utf8'));
      fs.writeFileSync(markerFile, JSON.stringify({ ...marker, sha256: '0'.repeat(64) }));
      mock.infos.length = 0;
      await mock.vscode.commands.executeCommand('milk.restartServer');
      assert.ok(mock.progress.some((p) => p.options.title === 'milk: updating the milk-lsp server'), 'update progress');
      assert.equal(JSON.parse(fs.readFileSync(markerFile, 'utf8')).sha256, marker.sha256);
      assert.equal(mock.infos.filter((m) => /not installed/.test(m)).length, 0, 'no offer for an update');
      await waitFor(() => api.controller.serverState === 'running' && api.serverCommand?.source === 'installed', 'running after the update', 60000);

      // milk: Reinstall Server with a too-old Python: the one message, and the server keeps running
      const old = path.join(sandbox.root, 'python3.8');
      fs.writeFileSync(old, '#!/bin/sh\necho "(3, 8) False"\n', { mode: 0o755 });
      Object.assign(mock.settings, { 'milk.server.python': old });
      mock.errors.length = 0;
      const progressBefore = mock.progress.length;
      mock.answerError = (m, items) => (items.includes('Set milk.server.python') ? 'Set milk.server.python' : undefined);
      await mock.vscode.commands.executeCommand('milk.reinstallServer');
      const pyErrors = mock.errors.filter((e) => /Python/.test(e.message));
      assert.equal(pyErrors.length, 1, 'one message');
      assert.match(pyErrors[0].message, /needs Python 3\.11 or newer \(milk\.server\.python: .*python3\.8 is Python 3\.8\)/);
      assert.deepEqual(pyErrors[0].items, ['Set milk.server.python']);
      await waitFor(() => mock.executed.find(([id, arg]) => id === 'workbench.action.openSettings' && arg === '@id:milk.server.python'), 'the setting opened');
      assert.equal(mock.progress.length, progressBefore, 'nothing installed');
      assert.equal(api.controller.serverState, 'running');

      // milk.server.python empty: the Python extension's active interpreter comes before PATH
      const asked = [];
      mock.vscode.extensions.getExtension = (id) =>
        id === 'ms-python.python'
          ? {
              isActive: true,
              exports: {
                environments: {
                  getActiveEnvironmentPath: (resource) => (asked.push(resource?.fsPath), { id: 'base', path: path.dirname(base) }),
                  resolveEnvironment: async (env) => (env.id === 'base' ? { executable: { uri: Uri.file(base) } } : undefined),
                },
              },
            }
          : undefined;
      Object.assign(mock.settings, { 'milk.server.python': '' });
      mock.outputLines.length = 0;
      await mock.vscode.commands.executeCommand('milk.reinstallServer');
      assert.deepEqual(asked, [sandbox.workspace], "asked for the workspace's interpreter");
      assert.ok(mock.outputLines.some((l) => l.includes(`(${base}, from the Python extension)`)), 'installed with that Python');
      assert.equal(JSON.parse(fs.readFileSync(markerFile, 'utf8')).python, base);
      await waitFor(() => api.controller.serverState === 'running' && api.serverCommand?.source === 'installed', 'running after the reinstall', 60000);
    } finally {
      mock.vscode.extensions.getExtension = () => undefined;
      process.env.PATH = savedPath;
      mock.answerInfo = () => undefined;
      mock.answerError = () => undefined;
    }
    mock.setSettings({ 'milk.server.path': S.MILK_LSP, 'milk.server.python': '' });
    await waitFor(() => api.controller.serverState === 'running' && api.serverCommand?.source === 'server.path' && /live-model/.test(statusText()), 'back on milk.server.path', 30000);
  });

  it("the status bar tooltip adds the routing numbers (milk/stats) after a turn", { timeout: 60000 }, async () => {
    await openai.script([{ text: 'Counted.' }]);
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'count this one' });
    await waitFor(() => posted('result').length > before, 'result');
    const tip = await waitFor(() => {
      const t = mock.statusItems[0].tooltip;
      return /turns? answered locally/.test(t) && /answered locally/.test(api.controller.statsText ?? '') ? t : undefined;
    }, 'the tooltip with the routing numbers');
    assert.ok(tip.endsWith(api.controller.statsText), tip);
    assert.match(tip, /spent on Claude today/);
  });

  // ---- issue 9: diffs before, undo after, the way back to local, history equal to live ----

  const hello = () => path.join(sandbox.workspace, 'hello.py');
  const EDIT = { name: 'edit_file', arguments: { path: 'hello.py', old_text: 'f"hello {name}"', new_text: 'f"hi there {name}"' } };
  const docText = async (uri) => (await mock.vscode.workspace.openTextDocument(uri)).getText();
  const lastResult = async (before, what, ms = 60000) => waitFor(() => posted('result').length > before && posted('result').at(-1).result, what, ms);
  let reviewSession;
  let editedTurn;
  let original;

  it('an edit asks with its diff: Review… opens the diff editor, Accept applies it', { timeout: 90000 }, async () => {
    await api.controller.newSession('review and undo');
    reviewSession = api.controller.activeSessionId;
    original = fs.readFileSync(hello(), 'utf8');
    await openai.script([{ tool_calls: [EDIT] }, { text: 'Changed the greeting.' }]);
    const diffsBefore = mock.executed.filter(([id]) => id === 'vscode.diff').length;
    mock.answerWarning = (message, opts) => (opts.modal && /wants to edit hello\.py/.test(message) ? 'Review…' : undefined);
    const before = posted('result').length;
    const items = mock.statusItems.length;
    mock.webview.send({ type: 'send', text: 'make the greeting friendlier' });
    await waitFor(() => mock.context['milk.reviewingEdit'] === true, 'the diff review');
    const contextWhileAsking = mock.context['milk.reviewingEdit'];
    // Accept / Reject in the status bar while the diff is open
    const buttons = mock.statusItems.slice(items);
    assert.deepEqual(buttons.map((b) => [b.text, b.command, b.visible]), [
      ['$(check) Accept edit', 'milk.acceptEdit', true],
      ['$(close) Reject edit', 'milk.rejectEdit', true],
    ]);
    await mock.vscode.commands.executeCommand(buttons[0].command);
    const result = await lastResult(before, 'the edit turn');
    assert.equal(result.stopReason, 'end_turn', JSON.stringify(result));
    const modal = mock.modalCalls.at(-1);
    assert.equal(modal.message, 'The local agent wants to edit hello.py');
    // Review… focused (it allows nothing), Deny the close button: no extra Cancel
    assert.deepEqual(modal.items, ['Review…', 'Allow once', 'Allow for this session', 'Deny']);
    assert.equal(modal.close, 'Deny');
    assert.doesNotMatch(modal.options.detail, /replace \d+ line/, 'the change is said once');
    assert.match(modal.options.detail, /^hello\.py: 1 line added, 1 removed$/m);
    assert.match(modal.options.detail, /^-\u00a0{4}return f"hello \{name\}"$/m);
    assert.match(modal.options.detail, /^\+\u00a0{4}return f"hi there \{name\}"$/m);
    // the diff editor showed the whole file, before and after, as milk: documents
    const diff = mock.executed.filter(([id]) => id === 'vscode.diff')[diffsBefore];
    assert.ok(diff, 'vscode.diff opened');
    const [, left, right, title] = diff;
    assert.equal(left.scheme, 'milk');
    assert.match(left.path, /\/hello\.py$/, 'named after the file (highlighting)');
    assert.equal(title, 'hello.py: current ↔ proposed by the local agent');
    assert.equal(contextWhileAsking, true, 'Accept / Reject in the diff editor title while it is open');
    assert.equal(mock.context['milk.reviewingEdit'], false);
    assert.ok(buttons.every((b) => b.disposed), 'the status bar buttons go away once answered');
    assert.equal(fs.readFileSync(hello(), 'utf8'), original.replace('f"hello {name}"', 'f"hi there {name}"'));
    // the chat heard of the open question (the tool row says it waits for you)
    const asking = posted('asking');
    assert.equal(asking.at(-2).toolCallId !== undefined, true);
    assert.equal(asking.at(-1).toolCallId, undefined);
    // the turn lists its changes: update, result
    const changesUpdate = posted('update').map((m) => m.update).find((u) => u.turnId === result.turnId && u.kind === 'changes');
    const summary = [{ uri: Uri.file(hello()).toString(), kind: 'modified', added: 1, removed: 1 }];
    assert.deepEqual(changesUpdate.changes, summary);
    assert.deepEqual(result.changes, summary);
    editedTurn = result.turnId;
  });

  it("the chat's Review opens the turn's changes in the diff editor", async () => {
    const n = mock.executed.filter(([id]) => id === 'vscode.diff').length;
    mock.webview.send({ type: 'reviewTurn', turnId: editedTurn });
    const diff = await waitFor(() => mock.executed.filter(([id]) => id === 'vscode.diff')[n], 'the diff of the turn');
    assert.equal(await docText(diff[1]), original);
    assert.equal(await docText(diff[2]), original.replace('f"hello {name}"', 'f"hi there {name}"'));
    assert.equal(diff[3], 'hello.py: changes of the turn');
  });

  it('Reject in the diff editor title denies the edit; the file stays as it was', { timeout: 90000 }, async () => {
    const now = fs.readFileSync(hello(), 'utf8');
    await openai.script([{ tool_calls: [{ name: 'edit_file', arguments: { path: 'hello.py', old_text: 'def greet', new_text: 'def salute' } }] }, { text: 'Fine.' }]);
    mock.answerWarning = (message, opts) => (opts.modal && /wants to edit/.test(message) ? 'Review…' : undefined);
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'rename greet' });
    await waitFor(() => mock.context['milk.reviewingEdit'] === true, 'the diff review');
    await mock.vscode.commands.executeCommand('milk.rejectEdit');
    const result = await lastResult(before, 'the rejected turn');
    assert.equal(fs.readFileSync(hello(), 'utf8'), now);
    const denied = posted('update').map((m) => m.update).filter((u) => u.turnId === result.turnId && u.kind === 'tool_call').at(-1);
    assert.equal(denied.status, 'denied');
    assert.equal(mock.context['milk.reviewingEdit'], false);
    assert.equal(result.changes, undefined, 'nothing changed');
  });

  it('closing the diff without an answer asks the question again', { timeout: 90000 }, async () => {
    const now = fs.readFileSync(hello(), 'utf8');
    await openai.script([{ tool_calls: [{ name: 'edit_file', arguments: { path: 'hello.py', old_text: 'def greet', new_text: 'def hail' } }] }, { text: 'Left alone.' }]);
    let asked = 0;
    mock.answerWarning = (message, opts) => {
      if (!opts.modal || !/wants to edit/.test(message)) return undefined;
      asked++;
      return asked === 1 ? 'Review…' : 'Deny';
    };
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'rename greet to hail' });
    await waitFor(() => mock.context['milk.reviewingEdit'] === true, 'the diff review');
    const review = mock.tabs.filter((t) => t.label === 'hello.py: current ↔ proposed by the local agent');
    assert.equal(review.length, 1);
    mock.closeTabs((t) => review.includes(t)); // the user closes the diff
    const result = await lastResult(before, 'the turn');
    assert.equal(asked, 2, 'asked again once the diff was closed');
    assert.equal(fs.readFileSync(hello(), 'utf8'), now);
    assert.equal(mock.context['milk.reviewingEdit'], false);
    assert.equal(result.changes, undefined);
  });

  it("the chat's Undo puts the file back, byte for byte", async () => {
    mock.infos.length = 0;
    mock.webview.send({ type: 'undoTurn', turnId: editedTurn });
    await waitFor(() => posted('undone').some((m) => m.turnId === editedTurn), 'undone posted');
    assert.equal(fs.readFileSync(hello(), 'utf8'), original);
    assert.ok(mock.infos.some((m) => /undone; restored hello\.py/.test(m)), mock.infos.join(' | '));
    const changes = await api.controller.turnChanges(editedTurn);
    assert.equal(changes.undone, true);
  });

  it('undo after the file changed again: "Undo anyway" (force) after a warning naming the file', { timeout: 90000 }, async () => {
    await openai.script([{ tool_calls: [EDIT] }, { text: 'Again.' }]);
    mock.answerWarning = (message, opts) => (opts.modal && /wants to edit/.test(message) ? 'Allow once' : undefined);
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'friendlier again' });
    const result = await lastResult(before, 'the second edit');
    assert.ok(result.changes?.length, JSON.stringify(result));
    fs.appendFileSync(hello(), '# my own change\n');
    const warnings = mock.warnings.length;
    mock.answerWarning = (message, opts, items) => (!opts.modal && items.includes('Undo anyway') ? 'Undo anyway' : undefined);
    const restored = await api.undoTurn(result.turnId);
    const warned = mock.warnings.slice(warnings).find((w) => w.items.includes('Undo anyway'));
    assert.match(warned.message, /hello\.py changed after this turn/);
    assert.deepEqual(restored, [Uri.file(hello()).toString()]);
    assert.equal(fs.readFileSync(hello(), 'utf8'), original);
  });

  it('milk: Undo Last Turn asks, names the files and undoes the newest turn with changes', { timeout: 90000 }, async () => {
    await openai.script([{ tool_calls: [EDIT] }, { text: 'Once more.' }]);
    mock.answerWarning = (message, opts) => (opts.modal && /wants to edit/.test(message) ? 'Allow once' : undefined);
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'and once more' });
    await lastResult(before, 'the third edit');
    assert.notEqual(fs.readFileSync(hello(), 'utf8'), original);
    mock.answerWarning = (message, opts) => (opts.modal && /Undo the last turn's changes/.test(message) ? 'Undo' : undefined);
    await mock.vscode.commands.executeCommand('milk.undoLastTurn');
    const asked = mock.modalCalls.at(-1);
    assert.equal(asked.message, "Undo the last turn's changes (1 file changed)?");
    assert.match(asked.options.detail, /"and once more"\nhello\.py \+1 −1/);
    // the focused first button is Review… (VS Code never focuses the close button), not Undo
    assert.deepEqual(asked.items, ['Review…', 'Undo', 'Cancel']);
    assert.equal(asked.close, 'Cancel');
    assert.equal(fs.readFileSync(hello(), 'utf8'), original);
    mock.infos.length = 0;
    await mock.vscode.commands.executeCommand('milk.undoLastTurn');
    assert.ok(mock.infos.some((m) => /no turn of this session has changes to undo/.test(m)), mock.infos.join(' | '));
  });

  it('the next route is visible after an escalation, and "Back to local" sends the next message locally', { timeout: 120000 }, async () => {
    await anthropic.script([{ text: 'Claude answering.' }]);
    let before = posted('result').length;
    mock.webview.send({ type: 'escalate', text: 'please take over' });
    let result = await lastResult(before, 'the escalation', 110000);
    assert.equal(result.agent, 'claude', JSON.stringify(result));
    assert.equal(result.nextRoute.agent, 'claude');
    await waitFor(() => /next: Claude/.test(statusText()), `status bar with the next route (now "${statusText()}")`);
    assert.equal(posted('route').at(-1).nextRoute.agent, 'claude');
    mock.webview.send({ type: 'backToLocal' });
    await waitFor(() => posted('route').at(-1).override === 'local', 'the override');
    assert.doesNotMatch(statusText(), /next: Claude/);
    await openai.script([{ text: 'Local again.' }]);
    before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'back to you, local model' });
    result = await lastResult(before, 'the local turn');
    assert.equal(result.agent, 'local', JSON.stringify(result));
    assert.equal(result.nextRoute.agent, 'local');
    assert.equal(posted('route').at(-1).override, undefined);
    await waitFor(() => !/next: Claude/.test(statusText()), 'status bar without the next route');
  });

  it('an error is shown once, names the VS Code setting, and its card opens that setting', { timeout: 60000 }, async () => {
    mock.setSettings({ 'milk.local.baseUrl': 'http://127.0.0.1:9/v1' });
    try {
      await new Promise((r) => setTimeout(r, 500)); // the server pulls the settings
      const before = posted('result').length;
      mock.webview.send({ type: 'send', text: 'anyone there?' });
      const result = await lastResult(before, 'the failed turn');
      assert.equal(result.stopReason, 'error');
      assert.equal(result.error.reason, 'local_unreachable', JSON.stringify(result.error));
      assert.match(result.error.message, /milk\.local\.baseUrl/);
      assert.doesNotMatch(result.error.message, /(^|[^.])\blocal\.baseUrl/);
      const notices = posted('update').map((m) => m.update).filter((u) => u.turnId === result.turnId && u.kind === 'notice' && u.severity === 'error');
      // the live view turns the error notice into the one card (chatModel), not a second line
      const st = chat.emptyState({ sessionId: result.sessionId });
      for (const u of posted('update').map((m) => m.update).filter((u) => u.turnId === result.turnId)) chat.applyUpdate(st, u);
      chat.applyResult(st, result);
      const turn = st.turns.at(-1);
      assert.equal(notices.length, 1);
      assert.equal(turn.blocks.filter((b) => b.kind === 'notice' && b.severity === 'error').length, 0);
      assert.equal(turn.error.message, result.error.message);
      mock.webview.send({ type: 'errorAction', action: 'openSettings', reason: result.error.reason, message: result.error.message, turnId: result.turnId, text: 'anyone there?' });
      await waitFor(() => mock.executed.find(([id, arg]) => id === 'workbench.action.openSettings' && arg === '@id:milk.local.baseUrl'), 'Open Settings on milk.local.baseUrl');
    } finally {
      mock.setSettings({ 'milk.local.baseUrl': openai.url });
    }
  });

  it('a reply with text before its tool call shows the text first, then the call, then the rest', { timeout: 60000 }, async () => {
    await openai.script([
      { text: 'Let me look.', tool_calls: [{ name: 'read_file', arguments: { path: 'hello.py' } }] },
      { text: 'It greets.' },
    ]);
    const before = posted('result').length;
    mock.webview.send({ type: 'send', text: 'what does hello.py do?' });
    const result = await lastResult(before, 'the turn with text before its call');
    assert.equal(result.stopReason, 'end_turn', JSON.stringify(result));
    const live = chat.emptyState({ sessionId: result.sessionId });
    for (const m of posted('update').map((m) => m.update).filter((u) => u.turnId === result.turnId)) chat.applyUpdate(live, m);
    chat.applyResult(live, result);
    // (the server puts a blank line between the text of two model rounds)
    const kinds = live.turns.at(-1).blocks.map((b) => (b.kind === 'text' ? `text:${b.text.trim()}` : b.kind === 'tool' ? `tool:${b.tool.name}` : b.kind));
    assert.deepEqual(kinds, ['agent', 'text:Let me look.', 'tool:read_file', 'text:It greets.']);
    // the reload test below checks that the history shows the same order
    assert.equal(api.controller.activeSessionId, reviewSession);
  });

  it('a reloaded session shows what was seen live (turnInfo): statuses, denied calls, banner, usage, changes, undone, text and calls in order', async () => {
    // the live view, rebuilt from everything the extension posted for this session
    const live = chat.emptyState({ sessionId: reviewSession });
    for (const m of mock.webview.posted) {
      if (m.type === 'update' && m.update.sessionId === reviewSession) chat.applyUpdate(live, m.update);
      if (m.type === 'result' && m.result.sessionId === reviewSession) chat.applyResult(live, m.result);
      if (m.type === 'undone') chat.markUndone(live, m.turnId);
    }
    await api.controller.loadHistory();
    const data = posted('history').at(-1).data;
    assert.equal(data.session.sessionId, reviewSession);
    const hist = chat.fromHistory(data);
    const view = (st) =>
      st.turns.filter((t) => !t.pending).map((t) => ({
        status: t.status,
        tools: t.blocks.filter((b) => b.kind === 'tool').map((b) => `${b.tool.name}:${b.tool.status}`),
        banner: t.blocks.filter((b) => b.kind === 'escalation').map((b) => chat.escalationText(b)),
        agents: t.blocks.filter((b) => b.kind === 'agent').map((b) => b.agent),
        usage: chat.formatUsage(t.usage),
        error: t.error?.message,
        changes: t.changes,
        undone: !!t.undone,
        // what the user reads, in order (thinking and passing notices are not stored)
        blocks: t.blocks
          .filter((b) => b.kind !== 'thinking' && b.kind !== 'notice')
          .map((b) => (b.kind === 'text' ? `text:${b.text}` : b.kind === 'tool' ? `tool:${b.tool.toolCallId}` : b.kind === 'agent' ? `agent:${b.agent}` : b.kind)),
      }));
    const want = view(live);
    const got = view(hist).slice(-want.length);
    assert.deepEqual(got, want);
    assert.ok(want.some((t) => t.tools.includes('edit_file:denied')), 'a denied call');
    assert.ok(want.some((t) => t.banner.length), 'an escalation banner');
    assert.ok(want.some((t) => t.undone), 'an undone turn');
    assert.ok(want.some((t) => t.blocks.join('|').includes('text:Let me look.|tool:')), 'text before a tool call');
  });

  it('"+" reuses an empty session instead of piling up new ones', async () => {
    const a = await mock.vscode.commands.executeCommand('milk.newSession');
    const count = api.controller.sessions.length;
    const b = await mock.vscode.commands.executeCommand('milk.newSession');
    assert.equal(b.sessionId, a.sessionId);
    assert.equal(api.controller.sessions.length, count);
    assert.equal(api.controller.activeSessionId, a.sessionId);
  });

  it('an untrusted workspace that sets milk.server.path is told that VS Code ignores it', () => {
    mock.vscode.workspace.isTrusted = false;
    mock.workspaceSettings['milk.server.path'] = '/workspace/evil-milk-lsp';
    try {
      const n = mock.warnings.length;
      api.warnIgnoredSettings();
      const w = mock.warnings.slice(n).find((x) => /milk\.server\.path/.test(x.message));
      assert.ok(w, 'warned');
      assert.match(w.message, /ignores it until you trust the workspace/);
      assert.deepEqual(w.items, ['Manage Workspace Trust']);
      // package.json makes VS Code ignore it (restrictedConfigurations), the warning says so
      assert.ok(require('../package.json').capabilities.untrustedWorkspaces.restrictedConfigurations.includes('milk.server.path'));
    } finally {
      mock.vscode.workspace.isTrusted = true;
      delete mock.workspaceSettings['milk.server.path'];
    }
  });

  it('answers: a file name opens the file at its line; code blocks copy and insert', async () => {
    const shown = mock.shownDocuments.length;
    mock.webview.send({ type: 'openFile', path: 'hello.py', line: 2 });
    await waitFor(() => mock.shownDocuments.length > shown, 'the file opened');
    assert.equal(mock.shownDocuments.at(-1).fsPath, hello());
    mock.infos.length = 0;
    mock.webview.send({ type: 'openFile', path: 'nope/missing.py' });
    await waitFor(() => mock.infos.some((m) => /there is no nope\/missing\.py in this workspace/.test(m)), 'no such file');
    mock.webview.send({ type: 'copyCode', text: 'print("hi")\n' });
    await waitFor(() => mock.clipboard === 'print("hi")\n', 'copied');
    const edits = [];
    mock.activeTextEditor = {
      document: { uri: Uri.file(hello()) },
      selections: [new Selection(0, 0, 0, 0)],
      viewColumn: 1,
      edit: async (fn) => {
        fn({ replace: (sel, text) => edits.push(text) });
        return true;
      },
    };
    mock.webview.send({ type: 'insertCode', text: 'x = 1\n', language: 'python' });
    await waitFor(() => edits.length === 1, 'inserted');
    assert.deepEqual(edits, ['x = 1\n']);
  });
});

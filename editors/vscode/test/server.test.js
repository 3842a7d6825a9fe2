// The extension's vscode-free client logic (ChatController, config answers, permission
// mapping) driving the REAL milk-lsp over stdio with vscode-jsonrpc, against the project's
// scripted OpenAI-compatible server and the Messages-API stand-in behind the real `claude` CLI.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const cp = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const rpc = require('vscode-jsonrpc/node');
const { pathToFileURL } = require('node:url');
const S = require('./support/servers');
const { ChatController } = require('../out/lib/controller.js');
const { answerConfiguration } = require('../out/lib/config.js');
const { permissionAnswer } = require('../out/lib/permission.js');
const { Methods } = require('../out/lib/methods.js');

describe('ChatController against the real milk-lsp', () => {
  let sandbox, openai, anthropic, proc, conn, controller, settings;
  const posts = [];
  const updates = [];
  const permissions = [];
  const progress = [];
  const configRequests = [];
  let permissionChoice = 'Allow once';
  let onTurnStarted;
  /** when set, window/workDoneProgress/create is answered only once this settles */
  let progressCreateGate;
  let progressCreates = 0;
  const shown = [];
  let stderr = '';

  const postsOf = (type) => posts.filter((p) => p.type === type);
  const waitFor = async (cond, what, ms = 20000) => {
    const t0 = Date.now();
    while (!cond()) {
      if (Date.now() - t0 > ms) throw new Error(`timeout waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  before(async () => {
    S.requireServer();
    sandbox = S.makeSandbox();
    const env = S.serverEnv(sandbox);
    [openai, anthropic] = await Promise.all([
      S.startFake('tests.fakes.openai_server', [], env),
      S.startFake('tests.fakes.anthropic_api', [], env),
    ]);
    settings = S.milkSettings(sandbox, openai.url);
    proc = cp.spawn(S.MILK_LSP, [], { env: S.serverEnv(sandbox, anthropic.url), cwd: sandbox.workspace, stdio: ['pipe', 'pipe', 'pipe'] });
    proc.stderr.on('data', (d) => (stderr += d));
    conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
    conn.onRequest('workspace/configuration', (p) => {
      configRequests.push(p);
      return answerConfiguration(p.items, settings);
    });
    conn.onRequest('window/workDoneProgress/create', async () => {
      progressCreates++;
      await progressCreateGate;
      return null;
    });
    conn.onNotification('$/progress', (p) => progress.push(p));
    conn.onNotification('window/logMessage', () => undefined);
    conn.onNotification('window/showMessage', (p) => {
      shown.push(p.message);
      console.log('[showMessage]', p.message);
    });
    conn.onRequest('client/registerCapability', () => null);
    conn.onRequest(Methods.REQUEST_PERMISSION, (p) => {
      permissions.push(p);
      return permissionAnswer(p, permissionChoice);
    });
    // vscode-jsonrpc keeps one handler per method: record updates, then hand them on
    const handlers = new Map();
    conn.onNotification(Methods.UPDATE, (u) => {
      updates.push(u);
      if (u.kind === 'turn_started' && onTurnStarted) onTurnStarted(u);
      handlers.get(Methods.UPDATE)?.(u);
    });
    conn.listen();
    const wsUri = pathToFileURL(sandbox.workspace).href;
    const init = await S.withTimeout(
      conn.sendRequest('initialize', {
        processId: process.pid,
        rootUri: wsUri,
        workspaceFolders: [{ uri: wsUri, name: 'workspace' }],
        capabilities: {
          workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false } },
          window: { workDoneProgress: true },
          experimental: { milk: { requestPermission: true } },
        },
        initializationOptions: settings,
      }),
      30000,
      'initialize',
    );
    assert.deepEqual(init.capabilities.experimental.milk, { protocolVersion: 1 });
    await conn.sendNotification('initialized', {});
    controller = new ChatController({ post: (m) => posts.push(m), workspaceFolder: () => wsUri });
    controller.attach({
      sendRequest: (method, params) => conn.sendRequest(method, params),
      onNotification: (method, handler) => {
        handlers.set(method, handler);
        return { dispose: () => handlers.delete(method) };
      },
    });
    controller.setServerState('running');
  });

  after(async () => {
    try {
      if (conn) {
        await S.withTimeout(conn.sendRequest('shutdown'), 10000, 'shutdown');
        await conn.sendNotification('exit');
        await S.withTimeout(once(proc, 'exit'), 10000, 'server exit');
      }
    } finally {
      conn?.dispose();
      if (proc && proc.exitCode === null) proc.kill('SIGKILL');
      openai?.stop();
      anthropic?.stop();
      sandbox?.cleanup();
    }
  });

  it('pulls the milk section and reports the local model in milk/status', async () => {
    await waitFor(() => configRequests.length > 0, 'workspace/configuration');
    assert.equal(configRequests[0].items[0].section, 'milk');
    const status = await controller.status();
    assert.equal(status.local.baseUrl, openai.url);
    assert.equal(status.local.reachable, true, JSON.stringify(status));
    assert.equal(status.local.model, 'fake-model');
    assert.equal(controller.localModel, 'fake-model');
    assert.equal(typeof status.storage, 'string');
  });

  it('streams a local answer: turn_started first, contiguous seq, turn_ended before the result', async () => {
    await openai.script([{ text: 'Hello from the **fake** model.', chunk_chars: 4, delay: 0.01 }]);
    updates.length = 0;
    const result = await S.withTimeout(controller.send('say hello'), 30000, 'milk/chat');
    assert.equal(result.stopReason, 'end_turn', JSON.stringify(result));
    assert.equal(result.agent, 'local');
    assert.equal(result.text, 'Hello from the **fake** model.');
    const mine = updates.filter((u) => u.turnId === result.turnId);
    assert.equal(mine[0].kind, 'turn_started');
    assert.equal(mine.at(-1).kind, 'turn_ended');
    assert.deepEqual(mine.map((u) => u.seq), mine.map((_, i) => i + 1));
    const text = mine.filter((u) => u.kind === 'text').map((u) => u.delta).join('');
    assert.equal(text, 'Hello from the **fake** model.');
    assert.ok(mine.filter((u) => u.kind === 'text').length > 1, 'streamed in several deltas');
    // the controller adopted the session the server created and posted everything to the view
    assert.equal(controller.activeSessionId, result.sessionId);
    assert.equal(postsOf('user')[0].text, 'say hello');
    assert.equal(postsOf('result').at(-1).result.turnId, result.turnId);
    assert.equal(controller.busy(), undefined);
    // native progress: begin ... end for the turn
    const kinds = progress.map((p) => p.value.kind);
    assert.ok(kinds.includes('begin') && kinds.includes('end'), JSON.stringify(progress));
  });

  it('history and the session list', async () => {
    posts.length = 0;
    await controller.showActive();
    const hist = postsOf('history').at(-1).data;
    assert.equal(hist.session.sessionId, controller.activeSessionId);
    assert.deepEqual(hist.turns.map((t) => [t.role, t.agent, t.text]), [
      ['user', 'local', 'say hello'],
      ['assistant', 'local', 'Hello from the **fake** model.'],
    ]);
    const sessions = postsOf('sessions').at(-1);
    assert.equal(sessions.activeId, controller.activeSessionId);
    // a fresh controller (a reopened window) picks the most recent session and says so
    const fresh = [];
    const c2 = new ChatController({ post: (m) => fresh.push(m), workspaceFolder: () => pathToFileURL(sandbox.workspace).href });
    c2.attach({ sendRequest: (m, p) => conn.sendRequest(m, p), onNotification: () => ({ dispose() {} }) });
    c2.setServerState('running');
    await c2.showActive();
    assert.equal(fresh.filter((m) => m.type === 'sessions').at(-1).activeId, controller.activeSessionId);
    assert.equal(fresh.filter((m) => m.type === 'history').at(-1).data.turns.length, 2);
    assert.equal(sessions.sessions.length, 1);
    assert.equal(sessions.sessions[0].turnCount, 1);
  });

  it('escalates to Claude, which asks permission for Bash; allowed once', { timeout: 120000 }, async () => {
    await anthropic.script([
      { tool_use: { name: 'Bash', input: { command: 'touch allowed-marker.txt && echo milk-permission-ok', description: 'Create a marker' } } },
      { text: 'Claude ran the command.' },
    ]);
    updates.length = 0;
    permissionChoice = 'Allow once';
    const result = await S.withTimeout(controller.escalate('please run the check', 'e2e reason'), 110000, 'milk/escalate');
    assert.equal(result.agent, 'claude', JSON.stringify(result) + stderr.slice(-3000));
    assert.equal(result.stopReason, 'end_turn', JSON.stringify(result));
    assert.match(result.text, /Claude ran the command\./);
    assert.equal(permissions.length, 1);
    const p = permissions[0];
    assert.equal(p.tool, 'Bash');
    assert.equal(p.agent, 'claude');
    assert.equal(p.input.command, 'touch allowed-marker.txt && echo milk-permission-ok');
    assert.ok(fs.existsSync(path.join(sandbox.workspace, 'allowed-marker.txt')), 'the allowed command ran in the workspace');
    assert.deepEqual(p.options.map((o) => o.optionId), ['allow_once', 'allow_session', 'deny']);
    const mine = updates.filter((u) => u.turnId === result.turnId);
    const esc = mine.find((u) => u.kind === 'escalated');
    assert.ok(esc, 'escalated update');
    assert.equal(esc.by, 'user');
    assert.equal(esc.reason, 'e2e reason');
    const call = mine.find((u) => u.kind === 'tool_call' && u.toolCallId === p.toolCallId);
    assert.ok(call, 'tool_call with the permission toolCallId');
    const res = mine.find((u) => u.kind === 'tool_result' && u.toolCallId === p.toolCallId);
    assert.ok(res, 'tool_result');
    assert.match(res.output, /milk-permission-ok/);
    assert.ok(mine.some((u) => u.kind === 'usage' && u.agent === 'claude'), 'usage from Claude');
  });

  it('a dismissed permission prompt denies', { timeout: 120000 }, async () => {
    await anthropic.script([
      { tool_use: { name: 'Bash', input: { command: 'touch denied-marker.txt' } } },
      { text: 'Fine, I will not run it.' },
    ]);
    updates.length = 0;
    permissions.length = 0;
    permissionChoice = undefined; // the modal was dismissed
    const result = await S.withTimeout(controller.send('run it again', { route: 'claude' }), 110000, 'milk/chat claude');
    assert.equal(permissions.length, 1);
    const mine = updates.filter((u) => u.turnId === result.turnId);
    assert.ok(mine.some((u) => u.kind === 'tool_call' && u.status === 'denied'), JSON.stringify(mine.map((u) => [u.kind, u.status])));
    assert.ok(!fs.existsSync(path.join(sandbox.workspace, 'denied-marker.txt')), 'the denied command did not run');
  });

  it('cancel ends the running turn with stopReason cancelled', { timeout: 60000 }, async () => {
    await openai.script([{ text: 'This will stall forever', stall: 30 }]);
    updates.length = 0;
    const pending = controller.send('stall please', { route: 'local' });
    await waitFor(() => updates.some((u) => u.kind === 'turn_started'), 'turn_started');
    assert.ok(controller.busy() === 'local', `busy ${controller.busy()}`);
    // a second message while the turn runs fails at once with session_busy
    await assert.rejects(controller.send('me too'), (e) => e.reason === 'session_busy');
    assert.equal(await controller.cancel(), true);
    const result = await S.withTimeout(pending, 20000, 'cancelled result');
    assert.equal(result.stopReason, 'cancelled');
    const mine = updates.filter((u) => u.turnId === result.turnId);
    assert.equal(mine.at(-1).kind, 'turn_ended');
    assert.equal(mine.at(-1).stopReason, 'cancelled');
    assert.equal(await controller.cancel(), false, 'idle session: cancelled false');
  });

  it('cancel pressed before the turn started still cancels it', { timeout: 60000 }, async () => {
    shown.length = 0;
    await openai.script([{ text: 'stall again', stall: 30 }]);
    updates.length = 0;
    const pending = controller.send('stall once more', { route: 'local' });
    assert.equal(controller.busy(), 'pending');
    assert.equal(await controller.cancel(), true);
    const result = await S.withTimeout(pending, 20000, 'cancelled result');
    assert.equal(result.stopReason, 'cancelled');
    const mine = updates.filter((u) => u.turnId === result.turnId);
    assert.equal(mine.at(-1).kind, 'turn_ended');
    assert.equal(mine.at(-1).stopReason, 'cancelled');
    // the controller sends milk/cancel the moment turn_started arrives (no delay)
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(shown.filter((m) => /Error in server|CANCELLED/.test(m)), []);
  });

  // Regression test for a server bug fixed in milk-lsp (editor.py shields the
  // window/workDoneProgress/create request): with window.workDoneProgress, a milk/cancel sent
  // the moment turn_started arrives lands while the server still awaits the client's answer
  // to the progress creation. It used to end in window/showMessage "Error in server:
  // CANCELLED: <Future ... state=cancelled>" (an error notification in VS Code), earlier in a
  // -32800 answer to milk/chat with no turn_ended. PROTOCOL.md: milk/cancel ends the turn with
  // stopReason "cancelled"; nothing in it is an error.
  it('milk/cancel right at turn_started ends the turn as cancelled, with no error shown', { timeout: 60000 }, async () => {
    shown.length = 0;
    await openai.script([{ text: 'stall', stall: 30 }]);
    updates.length = 0;
    const sessionId = controller.activeSessionId;
    // hold the answer to window/workDoneProgress/create until the turn has ended, so the
    // cancel surely lands while the server waits for it
    let release;
    progressCreateGate = new Promise((r) => (release = r));
    const createsBefore = progressCreates;
    let cancelled;
    onTurnStarted = (u) => {
      onTurnStarted = undefined;
      cancelled = conn.sendRequest(Methods.CANCEL, { sessionId: u.sessionId });
    };
    try {
      const chat = conn.sendRequest(Methods.CHAT, { sessionId, text: 'cancel me at once', route: 'local' });
      const outcome = await S.withTimeout(chat.then((r) => r, (e) => ({ error: e.code })), 20000, 'chat outcome');
      assert.deepEqual(await cancelled, { cancelled: true });
      assert.equal(outcome.stopReason, 'cancelled', JSON.stringify(outcome));
      assert.equal(updates.at(-1).kind, 'turn_ended');
      assert.equal(updates.at(-1).stopReason, 'cancelled');
      assert.equal(progressCreates, createsBefore + 1, 'the server asked for a progress token, still unanswered');
    } finally {
      progressCreateGate = undefined;
      release();
    }
    // the late answer to the progress request reaches the server: nothing is reported
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(shown.filter((m) => /Error in server|CANCELLED/.test(m)), []);
    // the session takes the next turn normally
    await openai.script([{ text: 'after the cancel' }]);
    const next = await S.withTimeout(controller.send('and now?', { route: 'local' }), 20000, 'next turn');
    assert.equal(next.stopReason, 'end_turn');
    assert.deepEqual(shown.filter((m) => /Error in server|CANCELLED/.test(m)), []);
  });

  it('context preview of the session', async () => {
    const preview = await controller.context();
    assert.ok(['first', 'resume', 'returning', 'fresh'].includes(preview.mode));
    assert.ok(Array.isArray(preview.argv));
    assert.equal(typeof preview.contextFile, 'string');
    assert.equal(preview.chars.contextFile, preview.contextFile.length);
  });

  it('settings changes are pulled on didChangeConfiguration', async () => {
    settings = { ...settings, local: { ...settings.local, model: 'other-model' } };
    const before = configRequests.length;
    await conn.sendNotification('workspace/didChangeConfiguration', { settings: { milk: settings } });
    await waitFor(() => configRequests.length > before, 'a new workspace/configuration pull');
    await waitFor(async () => true, 'settle', 100);
    let status;
    const t0 = Date.now();
    do {
      status = await controller.status();
      if (status.local.model === 'other-model') break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() - t0 < 5000);
    assert.equal(status.local.model, 'other-model');
  });

  it('new session, switch, delete', async () => {
    const first = controller.activeSessionId;
    const info = await controller.newSession('second');
    assert.notEqual(info.sessionId, first);
    assert.equal(controller.activeSessionId, info.sessionId);
    assert.equal(controller.sessions.length, 2);
    assert.deepEqual(postsOf('history').at(-1).data.turns, []);
    await controller.switchSession(first);
    assert.equal(postsOf('history').at(-1).data.session.sessionId, first);
    await controller.deleteSession(info.sessionId);
    assert.deepEqual(controller.sessions.map((s) => s.sessionId), [first]);
    // an unknown session is an error, never a silent new session
    await assert.rejects(conn.sendRequest(Methods.SESSION_GET, { sessionId: 'nope' }), (e) => e.code === -32803 && e.data.reason === 'session_not_found');
  });
});

// ChatController against a scripted in-memory RPC (no server): when milk/cancel is sent.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { ChatController, describeError } = require('../out/lib/controller.js');
const { statusBarView } = require('../out/lib/statusModel.js');
const { Methods } = require('../out/lib/methods.js');

/** sendRequest records the call and answers from `answers` (a function per method). */
function fakeRpc(answers = {}) {
  const sent = [];
  const handlers = new Map();
  const pending = new Map(); // method -> resolve of the last unanswered call
  return {
    sent,
    notify: (method, params) => handlers.get(method)?.(params),
    resolve: (method, value) => pending.get(method)?.(value),
    rpc: {
      sendRequest(method, params) {
        sent.push({ method, params });
        if (answers[method]) return Promise.resolve(answers[method](params));
        return new Promise((resolve) => pending.set(method, resolve));
      },
      onNotification(method, handler) {
        handlers.set(method, handler);
        return { dispose: () => handlers.delete(method) };
      },
    },
  };
}

const turnStarted = (sessionId) => ({ sessionId, turnId: 't1', seq: 0, kind: 'turn_started', agent: 'local', route: 'local' });
const turnEnded = (sessionId) => ({ sessionId, turnId: 't1', seq: 1, kind: 'turn_ended', stopReason: 'cancelled' });

test('Cancel before the turn started: milk/cancel goes out the moment turn_started arrives', async () => {
  const f = fakeRpc({
    [Methods.CANCEL]: () => ({ cancelled: true }),
    [Methods.SESSION_LIST]: () => ({ sessions: [] }),
  });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => 'file:///ws' });
  c.attach(f.rpc);
  c.activeSessionId = 's1';
  const turn = c.send('hello', { route: 'local' });
  assert.equal(c.busy(), 'pending');
  assert.equal(await c.cancel(), true);
  assert.deepEqual(f.sent.filter((s) => s.method === Methods.CANCEL), [], 'nothing to cancel yet');
  f.notify(Methods.UPDATE, turnStarted('s1'));
  // synchronously, no timer in between
  assert.deepEqual(f.sent.filter((s) => s.method === Methods.CANCEL), [{ method: Methods.CANCEL, params: { sessionId: 's1' } }]);
  f.notify(Methods.UPDATE, turnEnded('s1'));
  f.resolve(Methods.CHAT, { sessionId: 's1', turnId: 't1', stopReason: 'cancelled' });
  assert.equal((await turn).stopReason, 'cancelled');
  assert.equal(c.busy(), undefined);
});

test('Cancel before the server picked the session: sent for the session of the first update', async () => {
  const f = fakeRpc({
    [Methods.CANCEL]: () => ({ cancelled: true }),
    [Methods.SESSION_LIST]: () => ({ sessions: [] }),
  });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => 'file:///ws' });
  c.attach(f.rpc);
  const turn = c.send('hello');
  assert.equal(await c.cancel(), true);
  f.notify(Methods.UPDATE, turnStarted('new-session'));
  assert.equal(c.activeSessionId, 'new-session');
  assert.deepEqual(
    f.sent.filter((s) => s.method === Methods.CANCEL).map((s) => s.params),
    [{ sessionId: 'new-session' }],
  );
  f.notify(Methods.UPDATE, turnEnded('new-session'));
  f.resolve(Methods.CHAT, { sessionId: 'new-session', turnId: 't1', stopReason: 'cancelled' });
  await turn;
});

test('Cancel of a running turn is sent at once; an idle session has nothing to cancel', async () => {
  const f = fakeRpc({
    [Methods.CANCEL]: () => ({ cancelled: true }),
    [Methods.SESSION_LIST]: () => ({ sessions: [] }),
  });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => undefined });
  c.attach(f.rpc);
  assert.equal(await c.cancel(), false, 'no session: false, nothing sent');
  assert.equal(f.sent.length, 0);
  c.activeSessionId = 's1';
  const turn = c.send('hello');
  f.notify(Methods.UPDATE, turnStarted('s1'));
  assert.equal(c.busy(), 'local');
  assert.equal(await c.cancel(), true);
  assert.deepEqual(f.sent.filter((s) => s.method === Methods.CANCEL).map((s) => s.params), [{ sessionId: 's1' }]);
  f.notify(Methods.UPDATE, turnEnded('s1'));
  f.resolve(Methods.CHAT, { sessionId: 's1', turnId: 't1', stopReason: 'cancelled' });
  await turn;
  // a later turn_started does not carry an old cancel
  const again = c.send('again');
  f.notify(Methods.UPDATE, { ...turnStarted('s1'), turnId: 't2' });
  assert.equal(f.sent.filter((s) => s.method === Methods.CANCEL).length, 1);
  f.notify(Methods.UPDATE, { ...turnEnded('s1'), turnId: 't2', stopReason: 'end_turn' });
  f.resolve(Methods.CHAT, { sessionId: 's1', turnId: 't2', stopReason: 'end_turn' });
  await again;
});

test('Back to local: the next message goes with route local, once; a session switch drops it', async () => {
  const posts = [];
  let next = { agent: 'claude', reason: 'you sent this session to Claude' };
  const f = fakeRpc({
    [Methods.SESSION_LIST]: () => ({ sessions: [{ sessionId: 's1', turnCount: 2, nextRoute: next }] }),
    [Methods.SESSION_GET]: (p) => ({ session: { sessionId: p.sessionId, nextRoute: next }, turns: [], bricks: {} }),
    [Methods.CHAT]: (p) => {
      if (p.route === 'local') next = { agent: 'local', reason: 'local model first' };
      return { sessionId: 's1', turnId: 't', agent: 'local', stopReason: 'end_turn', text: '', nextRoute: next };
    },
  });
  const c = new ChatController({ post: (m) => posts.push(m), workspaceFolder: () => 'file:///ws' });
  c.attach(f.rpc);
  await c.switchSession('s1');
  assert.equal(c.nextRoute.agent, 'claude');
  c.backToLocal();
  assert.deepEqual(posts.filter((p) => p.type === 'route').at(-1), { type: 'route', nextRoute: c.nextRoute, override: 'local' });
  await c.send('hello');
  assert.equal(f.sent.find((s) => s.method === Methods.CHAT).params.route, 'local');
  assert.equal(c.routeOverride, undefined, 'only for one message');
  assert.deepEqual(c.nextRoute, { agent: 'local', reason: 'local model first' }, 'the result says where the next one goes');
  await c.send('again');
  assert.equal(f.sent.filter((s) => s.method === Methods.CHAT)[1].params.route, undefined);
  c.backToLocal();
  await c.switchSession('s1');
  assert.equal(c.routeOverride, undefined);
});

test('"+" reuses an empty session instead of making another', async () => {
  let made = 0;
  const list = [{ sessionId: 'full', turnCount: 3 }, { sessionId: 'empty', turnCount: 0 }];
  const f = fakeRpc({
    [Methods.SESSION_LIST]: () => ({ sessions: list }),
    [Methods.SESSION_GET]: (p) => ({ session: { sessionId: p.sessionId }, turns: [], bricks: {} }),
    [Methods.SESSION_NEW]: () => ({ sessionId: `new${++made}`, turnCount: 0 }),
  });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => 'file:///ws' });
  c.attach(f.rpc);
  c.activeSessionId = 'full';
  assert.equal((await c.newSession()).sessionId, 'empty');
  assert.equal(c.activeSessionId, 'empty');
  assert.equal(made, 0);
  list.pop();
  assert.equal((await c.newSession()).sessionId, 'new1');
  assert.equal((await c.newSession('titled')).sessionId, 'new2', 'a titled session is always new');
});

test('undo: the view hears of it; a conflict carries its files', async () => {
  const posts = [];
  let conflict = true;
  const f = fakeRpc({
    [Methods.TURN_UNDO]: (p) => {
      if (conflict && !p.force) {
        return Promise.reject(Object.assign(new Error('a.py changed after the turn'), { code: -32803, data: { reason: 'undo_conflict', files: ['file:///w/a.py'] } }));
      }
      return { restored: ['file:///w/a.py'] };
    },
  });
  const c = new ChatController({ post: (m) => posts.push(m), workspaceFolder: () => 'file:///w' });
  c.attach(f.rpc);
  c.activeSessionId = 's1';
  await assert.rejects(c.undoTurn('t1'), (e) => e.reason === 'undo_conflict' && e.files[0] === 'file:///w/a.py');
  assert.equal(posts.filter((p) => p.type === 'undone').length, 0);
  assert.deepEqual(await c.undoTurn('t1', { force: true }), { restored: ['file:///w/a.py'] });
  assert.deepEqual(f.sent.at(-1).params, { sessionId: 's1', turnId: 't1', force: true });
  assert.deepEqual(posts.filter((p) => p.type === 'undone'), [{ type: 'undone', turnId: 't1' }]);
  assert.equal(describeError({ message: 'set claude.path', data: { reason: 'claude_not_found' } }).message, 'set milk.claude.path');
});

test('milk/stats: the text for the workspace folder; an older server (MethodNotFound) is asked once', async () => {
  const f = fakeRpc({ [Methods.STATS]: (p) => ({ workspaceFolder: p.workspaceFolder, text: '  Local model: 1 of 1 turn answered locally.\n' }) });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => 'file:///ws' });
  assert.equal(await c.stats(), undefined, 'no server yet');
  c.attach(f.rpc);
  assert.equal(await c.stats(), 'Local model: 1 of 1 turn answered locally.');
  assert.deepEqual(f.sent.at(-1), { method: Methods.STATS, params: { workspaceFolder: 'file:///ws' } });

  const old = fakeRpc({
    [Methods.STATS]: () => Promise.reject(Object.assign(new Error('Unhandled method milk/stats'), { code: -32601 })),
  });
  c.attach(old.rpc);
  assert.equal(c.statsText, undefined, 'a new server starts without the old one\'s figures');
  assert.equal(await c.stats(), undefined);
  assert.equal(await c.stats(), undefined);
  assert.equal(old.sent.filter((s) => s.method === Methods.STATS).length, 1);

  // another failure is logged and asked again next time
  const logs = [];
  const flaky = fakeRpc({ [Methods.STATS]: () => Promise.reject(Object.assign(new Error('store locked'), { code: -32603 })) });
  const c2 = new ChatController({ post: () => undefined, workspaceFolder: () => undefined, log: (l) => logs.push(l) });
  c2.attach(flaky.rpc);
  await c2.stats();
  await c2.stats();
  assert.equal(flaky.sent.length, 2);
  assert.deepEqual(flaky.sent[0].params, {});
  assert.match(logs[0], /milk\/stats failed: store locked/);
});

// ---- issue 31 ------------------------------------------------------------------------------

const STATUS_OK = {
  version: '0.1.0',
  local: { baseUrl: 'http://127.0.0.1:9/v1', model: 'qwen3', reachable: true },
  claude: { path: '/usr/bin/claude', found: true },
  storage: '/tmp/s',
};
const UNREACHABLE = 'no local model reachable at http://127.0.0.1:9/v1: connection refused; start Ollama/llama-server or set local.baseUrl';

/** A controller whose turns answer `results` in order; the status answers `status()`. */
function scripted(results, status = () => STATUS_OK) {
  const queue = [...results];
  const f = fakeRpc({
    [Methods.SESSION_LIST]: () => ({ sessions: [] }),
    [Methods.STATUS]: () => status(),
    [Methods.CHAT]: () => ({ sessionId: 's1', turnId: `t${queue.length}`, text: '', ...queue.shift() }),
  });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => 'file:///ws' });
  const view = () => statusBarView({ serverState: 'running', busy: c.busy(), status: c.lastStatus, localDown: c.localDown });
  c.attach(f.rpc);
  c.activeSessionId = 's1';
  return { c, f, view };
}

test('issue 31 item 1: a turn that fails on the unreachable model server warns at once (no status read)', async () => {
  const { c, view } = scripted([
    { agent: 'local', stopReason: 'error', error: { reason: 'local_unreachable', message: UNREACHABLE } },
    { agent: 'local', stopReason: 'end_turn' },
  ]);
  await c.status(); // reachable, from before the outage
  assert.match(view().text, /milk · qwen3$/);
  await c.send('anyone there?');
  assert.equal(view().text, '$(warning) milk · model server down');
  assert.equal(view().warning, true);
  assert.equal(view().tooltip.split('http://127.0.0.1:9/v1').length - 1, 1, view().tooltip);
  assert.match(c.localDown.detail, /milk\.local\.baseUrl/, 'the VS Code setting name');
  // a later turn that runs locally clears it
  await c.send('back?');
  assert.equal(c.localDown, undefined);
  assert.match(view().text, /milk · qwen3$/);
});

test('issue 31 item 1: a turn handed to Claude because the model server is down (escalated.signal) warns too', async () => {
  let reachable = false;
  const { c, view } = scripted(
    [
      { agent: 'claude', stopReason: 'end_turn', escalated: { by: 'fallback', reason: UNREACHABLE, signal: 'model_unreachable' } },
      { agent: 'claude', stopReason: 'end_turn' },
    ],
    () => ({ ...STATUS_OK, local: { ...STATUS_OK.local, reachable } }),
  );
  await c.send('do it');
  assert.match(view().text, /model server down/);
  // a turn Claude alone ran says nothing about the model server
  await c.send('and this', { route: 'claude' });
  assert.match(view().text, /model server down/);
  // a status read that finds it unreachable keeps it; one that finds it reachable clears it
  await c.status();
  assert.match(view().text, /model server down/);
  reachable = true;
  await c.status();
  assert.equal(c.localDown, undefined);
  assert.doesNotMatch(view().text, /down/);
});

test('issue 31 item 1: the hand-off question of an unreachable model server warns before the answer; a status asked before does not clear it', async () => {
  const f = fakeRpc({ [Methods.SESSION_LIST]: () => ({ sessions: [] }) });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => undefined });
  c.attach(f.rpc);
  // a status read in flight (it was asked while the model server still answered)
  const pending = c.status();
  assert.equal(c.noteQuestion({ tool: 'hand_off_to_claude', input: { signal: 'model_unreachable', detail: UNREACHABLE } }), true);
  assert.match(c.localDown.detail, /no local model reachable/);
  f.resolve(Methods.STATUS, STATUS_OK);
  await pending;
  assert.ok(c.localDown, 'a status asked before the outage was seen does not clear it');
  // other questions say nothing about it
  assert.equal(c.noteQuestion({ tool: 'hand_off_to_claude', input: { signal: 'loop', detail: 'x' } }), false);
  assert.equal(c.noteQuestion({ tool: 'edit_file', input: {} }), false);
});

test('issue 31 item 3: the escalated update of the running turn switches the running agent to Claude', async () => {
  const busy = [];
  const f = fakeRpc({ [Methods.SESSION_LIST]: () => ({ sessions: [] }) });
  const c = new ChatController({ post: () => undefined, workspaceFolder: () => undefined, onBusyChanged: (b) => busy.push(b) });
  c.attach(f.rpc);
  c.activeSessionId = 's1';
  const turn = c.send('hello');
  f.notify(Methods.UPDATE, turnStarted('s1'));
  assert.equal(c.busy(), 'local');
  assert.match(statusBarView({ serverState: 'running', busy: c.busy(), status: STATUS_OK }).text, /local running/);
  f.notify(Methods.UPDATE, { sessionId: 's1', turnId: 't1', seq: 2, kind: 'escalated', by: 'fallback', reason: 'the model looped', mode: 'first', contextChars: 10 });
  assert.equal(c.busy(), 'claude');
  assert.equal(busy.at(-1), 'claude', 'the status bar is told');
  assert.match(statusBarView({ serverState: 'running', busy: c.busy(), status: STATUS_OK }).text, /Claude running/);
  f.notify(Methods.UPDATE, { ...turnEnded('s1'), seq: 3, stopReason: 'end_turn' });
  f.resolve(Methods.CHAT, { sessionId: 's1', turnId: 't1', agent: 'claude', stopReason: 'end_turn', text: '' });
  await turn;
  assert.equal(c.busy(), undefined);
});

test('a turn another door runs does not become this window\'s first session; Cancel reaches it', async () => {
  const f = fakeRpc({
    [Methods.CANCEL]: () => ({ cancelled: true }),
    [Methods.SESSION_LIST]: () => ({ sessions: [] }),
  });
  const posted = [];
  const c = new ChatController({ post: (m) => posted.push(m), workspaceFolder: () => 'file:///ws' });
  c.attach(f.rpc);
  const turn = c.send('mine', { route: 'local' }); // out, the server has not picked a session yet
  f.notify(Methods.UPDATE, { ...turnStarted('other'), turnId: 'x1', elsewhere: true, userText: 'theirs', door: 'terminal' });
  assert.equal(c.activeSessionId, undefined, 'another session\'s turn is not taken for this window\'s');
  f.notify(Methods.UPDATE, turnStarted('s1'));
  assert.equal(c.activeSessionId, 's1');
  f.notify(Methods.UPDATE, turnEnded('s1'));
  f.resolve(Methods.CHAT, { sessionId: 's1', turnId: 't1', stopReason: 'end_turn' });
  await turn;
  // the terminal's turn on this session: shown running, and Cancel sends milk/cancel for it
  f.notify(Methods.UPDATE, { ...turnStarted('s1'), turnId: 'x2', elsewhere: true, userText: 'from the terminal', door: 'terminal' });
  assert.equal(c.isActiveRunning(), true);
  assert.ok(posted.some((m) => m.type === 'update' && m.update.elsewhere && m.update.userText === 'from the terminal'));
  assert.equal(await c.cancel(), true);
  assert.deepEqual(f.sent.filter((s) => s.method === Methods.CANCEL).pop(), { method: Methods.CANCEL, params: { sessionId: 's1' } });
});

test('the chat moves to another folder (multi-root): that folder\'s latest session shows, and its name is in the meta', async () => {
  let folder = 'file:///w/api';
  const lists = [];
  const f = fakeRpc({
    [Methods.SESSION_LIST]: (p) => {
      lists.push(p.workspaceFolder);
      return { sessions: p.workspaceFolder === 'file:///w/web' ? [{ sessionId: 'web-1', turnCount: 2 }] : [{ sessionId: 'api-1', turnCount: 1 }] };
    },
    [Methods.SESSION_GET]: (p) => ({ session: { sessionId: p.sessionId }, turns: [], bricks: {} }),
  });
  const posted = [];
  const c = new ChatController({ post: (m) => posted.push(m), workspaceFolder: () => folder, folderLabel: () => folder.split('/').pop() });
  c.attach(f.rpc);
  await c.showActive();
  assert.equal(c.activeSessionId, 'api-1');
  folder = 'file:///w/web';
  await c.folderChanged();
  assert.equal(c.activeSessionId, 'web-1');
  assert.deepEqual(lists, ['file:///w/api', 'file:///w/web']);
  assert.equal(posted.filter((m) => m.type === 'meta').pop().folder, 'web');
  // a message now goes to that folder
  c.activeSessionId = undefined;
  void c.send('hi');
  assert.equal(f.sent.filter((s) => s.method === Methods.CHAT).pop().params.workspaceFolder, 'file:///w/web');
});

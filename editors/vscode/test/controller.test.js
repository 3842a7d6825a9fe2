// ChatController against a scripted in-memory RPC (no server): when milk/cancel is sent.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { ChatController } = require('../out/lib/controller.js');
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

// Issue 31 item 8: the attachment chips (Ask About Selection) and the input history survive a
// reload of the chat view: kept with vscode.setState, put back on the turns from getState.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const chat = require('../out/lib/chatModel.js');
const { emptySaved, readSaved, notePending, keepAttachments, restoreAttachments, ATTACHMENTS_MAX } = require('../out/lib/webviewState.js');

const session = { sessionId: 'S1', workspaceFolder: 'file:///w', title: 't', state: 'local', activeAgent: 'local', createdAt: '', updatedAt: '', turnCount: 1 };
/** setState / getState: the state goes through structured cloning (JSON is as strict) */
const roundTrip = (saved) => readSaved(JSON.parse(JSON.stringify(saved)));

test('the chips of a message sent, through setState/getState, back on the reloaded turn', () => {
  const saved = emptySaved();
  const live = chat.emptyState({ ...session });
  chat.addUserMessage(live, 'what does greet do?', ['hello.py:1-1']);
  notePending(saved, 'what does greet do?', ['hello.py:1-1']);
  // a reload before the server started the turn: kept by its text
  let back = roundTrip(saved);
  assert.deepEqual(back.pending, [{ text: 'what does greet do?', attachments: ['hello.py:1-1'] }]);
  chat.applyUpdate(live, { sessionId: 'S1', turnId: 'T1', seq: 1, kind: 'turn_started', agent: 'local', route: 'auto', reason: 'default' });
  assert.equal(keepAttachments(saved, live), true, 'the turn has its id: kept by it');
  assert.equal(keepAttachments(saved, live), false, 'nothing new');
  back = roundTrip(saved);
  assert.deepEqual(back.attachments, { T1: ['hello.py:1-1'] });
  assert.deepEqual(back.pending, []);

  // the reload: the server's history has the text, not the chips
  const history = {
    session,
    bricks: {},
    turns: [
      { turnId: 'T0', role: 'user', agent: 'local', text: 'earlier', status: 'ok', createdAt: '' },
      { turnId: 'T1', role: 'user', agent: 'local', text: 'what does greet do?', status: 'ok', createdAt: '' },
      { turnId: 'T1', role: 'assistant', agent: 'local', text: 'It greets.', status: 'ok', createdAt: '' },
    ],
  };
  const reloaded = chat.fromHistory(history);
  assert.equal(reloaded.turns[1].attachments, undefined, 'no chip from the server');
  const restored = restoreAttachments(back, reloaded);
  assert.deepEqual(restored.map((t) => t.turnId), ['T1']);
  assert.deepEqual(reloaded.turns[1].attachments, ['hello.py:1-1']);
  assert.equal(reloaded.turns[0].attachments, undefined);
});

test('a message whose turn id was not known at the reload gets its chips by its text', () => {
  const saved = emptySaved();
  notePending(saved, 'explain', ['a.py:3-9']);
  const reloaded = chat.fromHistory({
    session,
    bricks: {},
    turns: [{ turnId: 'T9', role: 'user', agent: 'local', text: 'explain', status: 'ok', createdAt: '' }],
  });
  const back = roundTrip(saved);
  assert.equal(restoreAttachments(back, reloaded).length, 1);
  assert.deepEqual(reloaded.turns[0].attachments, ['a.py:3-9']);
  assert.equal(keepAttachments(back, reloaded), true);
  assert.deepEqual(back.attachments, { T9: ['a.py:3-9'] });
  assert.deepEqual(back.pending, []);
});

test('getState of anything else (none, an older page) reads as empty; the kept chips are bounded', () => {
  assert.deepEqual(readSaved(undefined), emptySaved());
  assert.deepEqual(readSaved('junk'), emptySaved());
  assert.deepEqual(readSaved({ attachments: { T: 'x', U: [1], V: ['ok'] }, pending: [{ text: 1 }], history: ['a', 2, 'b'] }), {
    version: 1,
    attachments: { V: ['ok'] },
    pending: [],
    history: ['a', 'b'],
  });
  const saved = emptySaved();
  const st = chat.emptyState(session);
  for (let i = 0; i < ATTACHMENTS_MAX + 10; i++) {
    const t = chat.addUserMessage(st, `q${i}`, [`f${i}.py`]);
    t.pending = false;
    t.turnId = `T${i}`;
  }
  keepAttachments(saved, st);
  assert.equal(Object.keys(saved.attachments).length, ATTACHMENTS_MAX);
  assert.ok(!('T0' in saved.attachments) && `T${ATTACHMENTS_MAX + 9}` in saved.attachments, 'the oldest go first');
});

test('the webview keeps the state: getState at start, setState when a chip or a message is sent', () => {
  const src = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'webview', 'main.ts'), 'utf8');
  assert.match(src, /readSaved\(vscode\.getState\(\)\)/);
  assert.match(src, /vscode\.setState\(saved\)/);
  assert.match(src, /notePending\(saved, m\.text, m\.attachments\)/);
  assert.match(src, /restoreAttachments\(saved, state\)/);
});

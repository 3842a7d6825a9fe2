// Issue 31 item 4: the turn's Review (src/review.ts) under the mocked `vscode`: the changes
// editor gets a plain title (VS Code adds "(N files)" itself) and, per file, two sides with the
// file's own relative path (a pair with different paths shows as a rename, "R", with milk's
// internal paths as its label).
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createMock, installMock, Uri } = require('./support/mock-vscode');

let mock, uninstall, review;
before(() => {
  mock = createMock();
  uninstall = installMock(mock);
  review = require('../out/lib/review.js');
});
after(() => uninstall?.());

const WS = Uri.file('/w').toString();
const changes = [
  { uri: Uri.file('/w/src/app.py').toString(), kind: 'modified', before: 'a = 1\n', after: 'a = 2\n' },
  { uri: Uri.file('/w/notes.md').toString(), kind: 'created', after: '# notes\n' },
  { uri: Uri.file('/w/old.txt').toString(), kind: 'deleted', before: 'gone\n' },
];

test("several files: one changes editor titled plainly, each file by its plain relative name, no rename", async () => {
  const docs = new review.ReadOnlyDocs();
  const r = new review.DiffReview(docs, () => WS, () => undefined);
  mock.executed.length = 0;
  await r.openChanges(changes);
  const calls = mock.executed.filter(([id]) => id === 'vscode.changes');
  assert.equal(calls.length, 1);
  const [, title, list] = calls[0];
  assert.equal(title, 'milk: changes of the turn');
  assert.doesNotMatch(title, /files\)/, 'VS Code adds "(N files)" itself');
  assert.equal(list.length, 3);
  const [mod, created, deleted] = list;
  // the first URI opens the real file
  assert.equal(mod[0].toString(), changes[0].uri);
  // both sides: the same path, the file's relative one (the label); only the query differs
  assert.equal(mod[1].path, '/src/app.py');
  assert.equal(mod[2].path, '/src/app.py');
  assert.notEqual(mod[1].query, mod[2].query);
  for (const side of [mod[1], mod[2], created[2], deleted[1]]) {
    assert.equal(side.scheme, 'milk');
    assert.doesNotMatch(side.path, /\/(before|after|\d+)\//, `no internal path in ${side.path}`);
  }
  assert.equal(docs.provideTextDocumentContent(mod[1]), 'a = 1\n');
  assert.equal(docs.provideTextDocumentContent(mod[2]), 'a = 2\n');
  // a created file has no left side (VS Code marks it A), a deleted one no right side (D)
  assert.equal(created[1], undefined);
  assert.equal(created[2].path, '/notes.md');
  assert.equal(docs.provideTextDocumentContent(created[2]), '# notes\n');
  assert.equal(deleted[2], undefined);
  assert.equal(deleted[1].path, '/old.txt');
  assert.equal(mock.executed.filter(([id]) => id === 'vscode.diff').length, 0);
});

test('undone: the title says so; one file: one diff editor named after the file', async () => {
  const r = new review.DiffReview(new review.ReadOnlyDocs(), () => WS, () => undefined);
  mock.executed.length = 0;
  await r.openChanges(changes.slice(0, 2), { undone: true });
  assert.equal(mock.executed.find(([id]) => id === 'vscode.changes')[1], 'milk: changes of the turn (undone)');
  mock.executed.length = 0;
  await r.openChanges(changes.slice(0, 1));
  const diff = mock.executed.find(([id]) => id === 'vscode.diff');
  assert.equal(diff[3], 'app.py: changes of the turn');
  assert.equal(diff[1].path, '/src/app.py');
  assert.equal(diff[2].path, '/src/app.py');
});

test('without the changes editor (VS Code before 1.86): one diff per file, the first in front', async () => {
  const logs = [];
  const r = new review.DiffReview(new review.ReadOnlyDocs(), () => WS, (l) => logs.push(l));
  const exec = mock.vscode.commands.executeCommand;
  mock.vscode.commands.executeCommand = async (id, ...args) => {
    if (id === 'vscode.changes') throw new Error("command 'vscode.changes' not found");
    return exec(id, ...args);
  };
  try {
    mock.executed.length = 0;
    await r.openChanges(changes);
  } finally {
    mock.vscode.commands.executeCommand = exec;
  }
  assert.deepEqual(
    mock.executed.filter(([id]) => id === 'vscode.diff').map((c) => c[3]),
    ['old.txt (deleted): changes of the turn', 'notes.md (new file): changes of the turn', 'app.py: changes of the turn'],
  );
  assert.match(logs[0], /vscode\.changes unavailable/);
});

// The chat's folder in a multi-root window: picked, kept, and the first when none is.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { ChatFolder } = require('../out/lib/chatFolder.js');

function memory() {
  const values = new Map();
  return { get: (k) => values.get(k), update: async (k, v) => void values.set(k, v) };
}
const api = { uri: 'file:///w/api', name: 'api' };
const web = { uri: 'file:///w/web', name: 'web' };

test('one folder: it is the chat\'s, with no label (nothing to choose)', () => {
  const f = new ChatFolder(() => [api], memory());
  assert.equal(f.uri(), api.uri);
  assert.equal(f.label(), undefined);
});

test('several folders: the first until one is chosen, then that one, named', async () => {
  let folders = [api, web];
  const mem = memory();
  const f = new ChatFolder(() => folders, mem);
  assert.equal(f.uri(), api.uri);
  assert.equal(f.label(), 'api');
  assert.equal(await f.choose(web.uri), true);
  assert.equal(f.uri(), web.uri);
  assert.equal(f.label(), 'web');
  assert.equal(await f.choose(web.uri), false, 'already the chat\'s folder');
  assert.equal(await f.choose('file:///elsewhere'), false, 'not a folder of this window');
  // kept: a new ChatFolder on the same memory (a reload) has it
  assert.equal(new ChatFolder(() => folders, mem).uri(), web.uri);
  // the chosen folder left the window: the first again
  folders = [api];
  assert.equal(f.uri(), api.uri);
});

test('no folder: none', () => {
  const f = new ChatFolder(() => [], memory());
  assert.equal(f.uri(), undefined);
  assert.equal(f.label(), undefined);
});

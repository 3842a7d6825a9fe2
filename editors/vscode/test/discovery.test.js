const { test } = require('node:test');
const assert = require('node:assert/strict');
const { discoverServer, notFoundMessage, INSTALL_HINT, NOT_INSTALLED } = require('../out/lib/discovery.js');

const exe = (set) => (p) => set.includes(p);
/** `python -m milk_lsp` works for these interpreters only */
const milkIn = (set) => async (p) => set.includes(p);

test('milk.server.path wins', async () => {
  const r = await discoverServer({ serverPath: '/opt/milk-lsp', python: '/usr/bin/python3', env: { PATH: '/usr/bin' }, homedir: '/h', isExecutable: exe(['/opt/milk-lsp', '/usr/bin/python3']), hasMilkLsp: milkIn(['/usr/bin/python3']) });
  assert.deepEqual(r, { ok: true, server: { command: '/opt/milk-lsp', args: [], source: 'server.path' } });
});

test('a server.path that is not executable is a problem, not a fallback', async () => {
  const r = await discoverServer({ serverPath: '/nope', env: { PATH: '/usr/bin' }, homedir: '/h', isExecutable: exe(['/usr/bin/milk-lsp']) });
  assert.equal(r.ok, false);
  assert.equal(r.install, undefined);
  assert.match(r.problem, /milk.server.path/);
});

test('milk.server.python runs -m milk_lsp, found on PATH by name', async () => {
  const r = await discoverServer({ python: 'python3', env: { PATH: '/a:/usr/bin' }, homedir: '/h', isExecutable: exe(['/usr/bin/python3']), hasMilkLsp: milkIn(['/usr/bin/python3']) });
  assert.deepEqual(r, { ok: true, server: { command: '/usr/bin/python3', args: ['-m', 'milk_lsp'], source: 'server.python' } });
});

test('a milk.server.python without milk_lsp: PATH next, with a note for the log', async () => {
  const r = await discoverServer({ python: '/usr/bin/python3', env: { PATH: '/y' }, homedir: '/h', platform: 'linux', isExecutable: exe(['/usr/bin/python3', '/y/milk-lsp']), hasMilkLsp: milkIn([]) });
  assert.equal(r.ok && r.server.command, '/y/milk-lsp');
  assert.deepEqual(r.notes, ['milk.server.python (/usr/bin/python3) has no milk_lsp']);
});

test('~ expands in paths', async () => {
  const r = await discoverServer({ serverPath: '~/venv/bin/milk-lsp', env: {}, homedir: '/h', isExecutable: exe(['/h/venv/bin/milk-lsp']) });
  assert.equal(r.ok && r.server.command, '/h/venv/bin/milk-lsp');
});

test('milk-lsp on PATH, then ~/.local/bin', async () => {
  let r = await discoverServer({ env: { PATH: '/x:/y' }, homedir: '/h', platform: 'linux', isExecutable: exe(['/y/milk-lsp', '/h/.local/bin/milk-lsp']) });
  assert.equal(r.ok && r.server.command, '/y/milk-lsp');
  r = await discoverServer({ env: { PATH: '/x' }, homedir: '/h', platform: 'linux', isExecutable: exe(['/h/.local/bin/milk-lsp']) });
  assert.equal(r.ok && r.server.command, '/h/.local/bin/milk-lsp');
});

test("the extension's own install comes after PATH", async () => {
  const own = (state, canInstall = true) => ({ command: '/gs/venv/bin/milk-lsp', state, canInstall });
  const base = { env: { PATH: '/x' }, homedir: '/h', platform: 'linux' };
  let r = await discoverServer({ ...base, ownServer: own('current'), isExecutable: exe(['/x/milk-lsp']) });
  assert.equal(r.ok && r.server.source, 'PATH');
  r = await discoverServer({ ...base, ownServer: own('current'), isExecutable: () => false });
  assert.deepEqual(r, { ok: true, server: { command: '/gs/venv/bin/milk-lsp', args: [], source: 'installed' } });
  // an extension update: another wheel than the venv holds
  r = await discoverServer({ ...base, ownServer: own('outdated'), isExecutable: () => false });
  assert.deepEqual(r, { ok: false, problem: NOT_INSTALLED, install: 'update' });
  // nothing anywhere: the offer
  r = await discoverServer({ ...base, ownServer: own('absent'), isExecutable: () => false });
  assert.deepEqual(r, { ok: false, problem: NOT_INSTALLED, install: 'offer' });
  // a build without the wheel cannot offer: the old message
  r = await discoverServer({ ...base, ownServer: own('absent', false), isExecutable: () => false });
  assert.equal(r.ok || r.install, undefined);
  assert.match(r.problem, /not found on PATH/);
});

test('a broken milk.server.python with nothing else found names the setting', async () => {
  const r = await discoverServer({ python: '/nope/python', env: { PATH: '/x' }, homedir: '/h', isExecutable: () => false });
  assert.equal(r.ok, false);
  assert.match(r.problem, /milk\.server\.python is set to "\/nope\/python", which is not an executable file, and milk-lsp is not on PATH/);
});

test('nothing found: the message says what to install and which settings', async () => {
  const r = await discoverServer({ env: { PATH: '/x' }, homedir: '/h', isExecutable: () => false });
  assert.equal(r.ok, false);
  const msg = notFoundMessage(r.problem);
  assert.match(msg, /pipx install \/path\/to\/milk-lsp/);
  assert.ok(!msg.includes("`"), "a notification shows backticks literally");
  assert.match(msg, /milk\.server\.path/);
  assert.match(msg, /milk\.server\.python/);
  assert.ok(msg.includes(INSTALL_HINT));
});

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { discoverServer, notFoundMessage, INSTALL_HINT } = require('../out/lib/discovery.js');

const exe = (set) => (p) => set.includes(p);

test('milk.server.path wins', () => {
  const r = discoverServer({ serverPath: '/opt/milk-lsp', python: '/usr/bin/python3', env: { PATH: '/usr/bin' }, homedir: '/h', isExecutable: exe(['/opt/milk-lsp', '/usr/bin/python3']) });
  assert.deepEqual(r, { ok: true, server: { command: '/opt/milk-lsp', args: [], source: 'server.path' } });
});

test('a server.path that is not executable is a problem, not a fallback', () => {
  const r = discoverServer({ serverPath: '/nope', env: { PATH: '/usr/bin' }, homedir: '/h', isExecutable: exe(['/usr/bin/milk-lsp']) });
  assert.equal(r.ok, false);
  assert.match(r.problem, /milk.server.path/);
});

test('milk.server.python runs -m milk_lsp, found on PATH by name', () => {
  const r = discoverServer({ python: 'python3', env: { PATH: '/a:/usr/bin' }, homedir: '/h', isExecutable: exe(['/usr/bin/python3']) });
  assert.deepEqual(r, { ok: true, server: { command: '/usr/bin/python3', args: ['-m', 'milk_lsp'], source: 'server.python' } });
});

test('~ expands in paths', () => {
  const r = discoverServer({ serverPath: '~/venv/bin/milk-lsp', env: {}, homedir: '/h', isExecutable: exe(['/h/venv/bin/milk-lsp']) });
  assert.equal(r.ok && r.server.command, '/h/venv/bin/milk-lsp');
});

test('milk-lsp on PATH, then ~/.local/bin', () => {
  let r = discoverServer({ env: { PATH: '/x:/y' }, homedir: '/h', platform: 'linux', isExecutable: exe(['/y/milk-lsp', '/h/.local/bin/milk-lsp']) });
  assert.equal(r.ok && r.server.command, '/y/milk-lsp');
  r = discoverServer({ env: { PATH: '/x' }, homedir: '/h', platform: 'linux', isExecutable: exe(['/h/.local/bin/milk-lsp']) });
  assert.equal(r.ok && r.server.command, '/h/.local/bin/milk-lsp');
});

test('nothing found: the message says what to install and which settings', () => {
  const r = discoverServer({ env: { PATH: '/x' }, homedir: '/h', isExecutable: () => false });
  assert.equal(r.ok, false);
  const msg = notFoundMessage(r.problem);
  assert.match(msg, /pipx install \/path\/to\/milk-lsp/);
  assert.ok(!msg.includes("`"), "a notification shows backticks literally");
  assert.match(msg, /milk\.server\.path/);
  assert.match(msg, /milk\.server\.python/);
  assert.ok(msg.includes(INSTALL_HINT));
});

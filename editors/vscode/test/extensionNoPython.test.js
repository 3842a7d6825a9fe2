// Issue 31 item 10: the REAL bundled extension (dist/extension.js) under the mocked `vscode`,
// started with no milk-lsp anywhere and no Python on PATH (an empty PATH and HOME): the first
// message says Python is missing (no "Install milk-lsp" button that could only fail), and the
// status bar says the same. Nothing is run.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createMock, installMock, Uri } = require('./support/mock-vscode');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'milk-nopython-test-'));
const saved = { PATH: process.env.PATH, HOME: process.env.HOME };
let mock, uninstall, ext, api;

before(async () => {
  const bin = path.join(tmp, 'bin');
  const home = path.join(tmp, 'home');
  fs.mkdirSync(bin);
  fs.mkdirSync(home);
  process.env.PATH = bin;
  process.env.HOME = home;
  // the extension carries a wheel: without a Python it cannot be installed
  const root = path.join(tmp, 'extension');
  fs.mkdirSync(path.join(root, 'dist', 'wheel'), { recursive: true });
  fs.writeFileSync(path.join(root, 'dist', 'wheel', 'milk_lsp-0.0.1-py3-none-any.whl'), 'stand-in');
  mock = createMock();
  Object.assign(mock.settings, { 'milk.server.path': '', 'milk.server.python': '' });
  uninstall = installMock(mock);
  ext = require('../dist/extension.js');
  api = await ext.activate({
    subscriptions: [],
    extensionUri: Uri.file(root),
    extensionPath: root,
    workspaceState: (() => { const m = new Map(); return { get: (k) => m.get(k), update: async (k, v) => void m.set(k, v), keys: () => [...m.keys()] }; })(),
    globalStorageUri: Uri.file(path.join(tmp, 'globalStorage')),
    asAbsolutePath: (p) => path.join(root, p),
    extension: { packageJSON: require('../package.json') },
  });
});

after(async () => {
  try {
    if (ext) await ext.deactivate();
  } finally {
    uninstall?.();
    Object.assign(process.env, saved);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('no server and no Python: the first message says Python is missing, before any Install button', async () => {
  let err;
  for (let i = 0; i < 200 && !err; i++) {
    err = mock.errors.find((e) => /Python/.test(e.message));
    if (!err) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(err, `errors: ${mock.errors.map((e) => e.message).join(' | ')}; infos: ${mock.infos.join(' | ')}`);
  assert.match(err.message, /^milk needs Python 3\.11 or newer: none found on PATH\./);
  assert.deepEqual(err.items, ['Set milk.server.python', 'Open Settings']);
  assert.equal(mock.infos.filter((m) => /not installed/.test(m)).length, 0, 'no Install offer');
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(api.controller.serverState, 'failed');
  assert.equal(api.controller.problem, err.message);
  assert.equal(mock.statusItems[0].tooltip, err.message);
  assert.equal(mock.progress.length, 0, 'nothing installed');
});

// Issue 31 items 9 and 10: the extension's own server (src/serverInstall.ts) under the mocked
// `vscode` with a stand-in process runner (nothing is installed): the Python is looked for
// before the install offer, and the embedded engine is installed with pip in milk's own venv.
const { test, describe, before, after, beforeEach } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createMock, installMock } = require('./support/mock-vscode');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'milk-serverinstall-test-'));
let mock, uninstall, si, python, statusModel;
const savedPath = process.env.PATH;
before(() => {
  mock = createMock();
  uninstall = installMock(mock);
  si = require('../out/lib/serverInstall.js');
  python = require('../out/lib/python.js');
  statusModel = require('../out/lib/statusModel.js');
});
after(() => {
  process.env.PATH = savedPath;
  uninstall?.();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The extension's folder with a (stand-in) bundled wheel: the install can be offered. */
function extensionDir(name) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(path.join(dir, 'dist', 'wheel'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'dist', 'wheel', 'milk_lsp-0.0.1-py3-none-any.whl'), 'not a real wheel');
  return dir;
}

/** A PATH directory holding `names` (empty executables: the runner answers for them). */
function pathDir(name, names) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const n of names) fs.writeFileSync(path.join(dir, n), '#!/bin/sh\nexit 99\n', { mode: 0o755 });
  return dir;
}

/** A process runner that records its calls; `answer(command, args)` gives the result. */
function fakeRunner(answer) {
  const calls = [];
  const run = async (command, args, options = {}) => {
    calls.push({ command, args });
    const r = { code: 0, stdout: '', stderr: '', ...(answer(command, args) ?? {}) };
    for (const l of r.lines ?? []) options.onLine?.(l);
    return r;
  };
  return { calls, run };
}
const probeAnswer = (version) => (command, args) => (args[0] === '-c' && args[1] === python.PROBE_CODE ? { stdout: `${version} False\n` } : undefined);

function installer(ext, run) {
  const opened = [];
  const output = mock.vscode.window.createOutputChannel('milk', { log: true });
  const i = new si.ServerInstaller(ext, path.join(tmp, `${path.basename(ext)}-storage`), output, async (q) => opened.push(q), run);
  return { i, opened };
}

beforeEach(() => {
  mock.errors.length = 0;
  mock.infos.length = 0;
  mock.warnings.length = 0;
  mock.progress.length = 0;
  mock.answerInfo = () => undefined;
  mock.answerError = () => undefined;
  mock.answerWarning = () => undefined;
});

describe('item 10: Python is checked when the extension starts without a server, before any Install button', () => {
  test('no Python on PATH: the first message says so, with no Install button', async () => {
    process.env.PATH = pathDir('empty-bin', []);
    const { run, calls } = fakeRunner(() => undefined);
    const { i, opened } = installer(extensionDir('ext-a'), run);
    mock.answerError = (m, items) => (items.includes(si.SET_PYTHON_LABEL) ? si.SET_PYTHON_LABEL : undefined);
    assert.equal(await i.offer(), 'no-python');
    assert.equal(mock.errors.length, 1);
    assert.match(mock.errors[0].message, /^milk needs Python 3\.11 or newer: none found on PATH\./);
    assert.match(mock.errors[0].message, /set milk\.server\.python/);
    assert.deepEqual(mock.errors[0].items, [si.SET_PYTHON_LABEL, 'Open Settings']);
    assert.equal(mock.infos.length, 0, 'no "Install milk-lsp" offer that could only fail');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(opened, ['milk.server.python'], 'its button opens the setting');
    assert.equal(i.pythonProblem, mock.errors[0].message, 'the status bar and the chat say it too');
    assert.equal(calls.length, 0, 'nothing to run');
  });

  test('a too-old Python on PATH: named in the first message', async () => {
    const bin = pathDir('old-bin', ['python3']);
    process.env.PATH = bin;
    const { run, calls } = fakeRunner(probeAnswer('(3, 8)'));
    const { i } = installer(extensionDir('ext-b'), run);
    assert.equal(await i.offer(), 'no-python');
    assert.equal(mock.errors[0].message.startsWith(`milk needs Python 3.11 or newer: PATH: ${path.join(bin, 'python3')} is Python 3.8.`), true, mock.errors[0].message);
    assert.deepEqual(calls.map((c) => c.command), [path.join(bin, 'python3')], 'probed, through the runner');
    assert.equal(mock.infos.length, 0);
  });

  test('a usable Python: the install offer as before, and Install uses it', async () => {
    const bin = pathDir('good-bin', ['python3']);
    process.env.PATH = bin;
    const { run, calls } = fakeRunner((command, args) => {
      if (args[1] === 'venv') fs.mkdirSync(args.at(-1), { recursive: true }); // the venv, as python -m venv makes it
      return probeAnswer('(3, 12)')(command, args);
    });
    const { i } = installer(extensionDir('ext-c'), run);
    mock.answerInfo = (m, items) => (items.includes(si.INSTALL_LABEL) ? si.INSTALL_LABEL : undefined);
    const outcome = await i.offer();
    assert.equal(mock.errors.length, 0, mock.errors.map((e) => e.message).join(' | '));
    assert.match(mock.infos[0], /milk-lsp server is not installed/);
    assert.equal(outcome, 'installed');
    assert.equal(i.pythonProblem, undefined);
    const venv = calls.find((c) => c.args.includes('venv'));
    assert.equal(venv.command, path.join(bin, 'python3'));
    assert.deepEqual(venv.args, ['-m', 'venv', '--clear', i.layout.dir]);
    assert.equal(calls.at(-1).command, i.layout.python, "then pip in the venv's python");
  });
});

describe("item 9: the embedded engine, offered by name and installed with pip in milk's own venv", () => {
  const missing = {
    version: '0.1.0',
    local: { baseUrl: '', model: 'qwen', reachable: false, provider: 'embedded', error: "local.provider is embedded but xllamacpp is not installed: install the embedded engine: pip install 'milk-lsp[embedded]'" },
    claude: { found: true },
    storage: '/tmp/s',
  };

  test('the button runs <venv python> -m pip install milk-lsp[embedded], with progress', async () => {
    const { run, calls } = fakeRunner(() => ({ lines: ['Collecting xllamacpp', 'Successfully installed xllamacpp-0.1'] }));
    const { i } = installer(extensionDir('ext-d'), run);
    mock.answerWarning = (m, opts, items) => (items.includes(si.INSTALL_EMBEDDED_LABEL) ? si.INSTALL_EMBEDDED_LABEL : undefined);
    assert.equal(await i.offerEmbeddedEngine(statusModel.embeddedEngineOffer(missing)), true);
    const offer = mock.warnings[0];
    assert.match(offer.message, /the embedded engine is not available/);
    assert.doesNotMatch(offer.message, /at :/);
    assert.deepEqual(offer.items, ['Install the embedded engine', 'Open Settings']);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].command, path.join(tmp, 'ext-d-storage', 'venv', process.platform === 'win32' ? 'Scripts' : 'bin', process.platform === 'win32' ? 'python.exe' : 'python'));
    assert.equal(calls[0].command, i.layout.python);
    assert.deepEqual(calls[0].args.slice(0, 3), ['-m', 'pip', 'install']);
    assert.equal(calls[0].args.at(-1), 'milk-lsp[embedded]');
    const progress = mock.progress.find((p) => p.options.title === 'milk: installing the embedded engine');
    assert.ok(progress, 'progress shown');
    assert.ok(progress.reports.some((r) => /Successfully installed xllamacpp/.test(r.message)), "pip's lines in the progress");
  });

  test('pip fails: said with the log button; declining runs nothing', async () => {
    const { run, calls } = fakeRunner(() => ({ code: 1, lines: ['ERROR: No matching distribution found for xllamacpp'] }));
    const { i } = installer(extensionDir('ext-e'), run);
    assert.equal(await i.offerEmbeddedEngine('milk: the embedded engine is not available.'), false);
    assert.equal(calls.length, 0, 'not clicked: nothing runs');
    mock.answerWarning = () => si.INSTALL_EMBEDDED_LABEL;
    assert.equal(await i.offerEmbeddedEngine('milk: the embedded engine is not available.'), false);
    assert.equal(calls.length, 1);
    await new Promise((r) => setImmediate(r));
    const err = mock.errors.find((e) => /installing the embedded engine failed/.test(e.message));
    assert.ok(err, mock.errors.map((e) => e.message).join(' | '));
    assert.match(err.message, /No matching distribution found for xllamacpp/);
    assert.deepEqual(err.items, ['Show Server Log']);
  });
});

// The extension's own milk-lsp (install.ts, python.ts) with real interpreters: the user's
// Python probed for its version, a too-old or missing one turned into the one message, and a
// real `python -m venv` + `pip install` of a tiny stand-in wheel (no dependencies, so no index
// is needed; the real wheel is installed once, in the code-server e2e).
const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const cp = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const S = require('./support/servers');
const { tinyWheel } = require('./support/wheels');
const { probePython, choosePython, isRecentEnough, pythonMessage, runProcess } = require('../out/lib/python.js');
const { findBundledWheel, ownServerLayout, ownServerState, installServer, readMarker, InstallError, WHEEL_DIR } = require('../out/lib/install.js');
const { defaultIsExecutable } = require('../out/lib/discovery.js');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'milk-install-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** An executable shell script standing in for an interpreter. */
function script(name, body) {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return p;
}

describe('the user\'s Python', () => {
  test('a real interpreter says its version and whether it has milk_lsp', async () => {
    S.requireServer();
    const p = await probePython(S.PYTHON);
    assert.equal(p.ok, true, p.problem);
    assert.ok(isRecentEnough(p.version), `${p.version}`);
    // the project's venv has milk-lsp installed (editable)
    assert.equal(p.hasMilkLsp, true);
  });

  test('too old, missing, or not a Python: probed without a shell', async () => {
    const old = script('python-old', 'echo "(3, 8) False"');
    assert.deepEqual(await probePython(old), { ok: true, python: old, version: [3, 8], hasMilkLsp: false });
    const missing = path.join(tmp, 'no-such-python');
    const m = await probePython(missing);
    assert.equal(m.ok, false);
    assert.match(m.problem, /does not run \(.*ENOENT/);
    const broken = script('python-broken', 'echo "boom: not today" >&2; exit 3');
    const b = await probePython(broken);
    assert.equal(b.ok, false);
    assert.match(b.problem, /did not say its version \(boom: not today\)/);
  });

  test('the version bound is 3.11', () => {
    assert.equal(isRecentEnough([3, 10]), false);
    assert.equal(isRecentEnough([3, 11]), true);
    assert.equal(isRecentEnough([3, 13]), true);
    assert.equal(isRecentEnough([4, 0]), true);
    assert.equal(isRecentEnough([2, 7]), false);
  });

  test('the first good candidate wins; a named one that fails ends the search with one message', async () => {
    S.requireServer();
    const old = script('python-old2', 'echo "(3, 8) False"');
    let c = await choosePython([
      { python: old, from: 'the Python extension' },
      { python: S.PYTHON, from: 'PATH' },
    ]);
    assert.equal(c.ok, true);
    assert.equal(c.python, S.PYTHON);
    assert.equal(c.from, 'PATH');

    c = await choosePython([
      { python: old, from: 'milk.server.python', explicit: true },
      { python: S.PYTHON, from: 'PATH' },
    ]);
    assert.equal(c.ok, false);
    assert.equal(c.message, pythonMessage([`milk.server.python: ${old} is Python 3.8`]));
    assert.match(c.message, /needs Python 3\.11 or newer/);
    assert.match(c.message, /Install Python 3\.11 or newer/);
    assert.match(c.message, /milk\.server\.python/);
    assert.ok(!c.message.includes('`'), 'a notification shows backticks literally');

    c = await choosePython([{ python: path.join(tmp, 'gone'), from: 'milk.server.python', explicit: true }]);
    assert.equal(c.ok, false);
    assert.match(c.message, /milk\.server\.python: .*gone does not run/);

    c = await choosePython([]);
    assert.match(c.message, /needs Python 3\.11 or newer and found none\./);
  });

  test('runProcess streams lines (pip redraws with \\r) and reports a timeout', async () => {
    const lines = [];
    const r = await runProcess(S.PYTHON, ['-c', "import sys; sys.stdout.write('a\\rb\\nc'); sys.stderr.write('e\\n')"], { onLine: (l) => lines.push(l) });
    assert.equal(r.code, 0);
    assert.deepEqual(lines.sort(), ['a', 'b', 'c', 'e']);
    const t = await runProcess(S.PYTHON, ['-c', 'import time; time.sleep(10)'], { timeoutMs: 300 });
    assert.equal(t.code, null);
    assert.match(t.error, /timed out/);
  });
});

describe('the bundled wheel and the venv that holds it', () => {
  test('the one milk_lsp wheel of dist/wheel, with its hash', () => {
    const ext = path.join(tmp, 'ext1');
    assert.equal(findBundledWheel(ext), undefined);
    const file = tinyWheel(path.join(ext, WHEEL_DIR), '0.0.1');
    const w = findBundledWheel(ext);
    assert.equal(w.file, file);
    assert.equal(w.name, 'milk_lsp-0.0.1-py3-none-any.whl');
    assert.match(w.sha256, /^[0-9a-f]{64}$/);
    // two wheels: which one is meant is unclear, so none
    tinyWheel(path.join(ext, WHEEL_DIR), '0.0.2');
    assert.equal(findBundledWheel(ext), undefined);
  });

  test('layout per platform', () => {
    assert.deepEqual(ownServerLayout('/gs', 'linux'), {
      dir: '/gs/venv',
      python: '/gs/venv/bin/python',
      milkLsp: '/gs/venv/bin/milk-lsp',
      marker: '/gs/venv/milk-lsp-wheel.json',
    });
    const win = ownServerLayout('/gs', 'win32');
    assert.equal(win.milkLsp, path.join('/gs/venv', 'Scripts', 'milk-lsp.exe'));
  });

  describe('a real venv and pip install', () => {
    let layout, wheel, lines, marker;
    before(async () => {
      S.requireServer();
      const ext = path.join(tmp, 'ext2');
      tinyWheel(path.join(ext, WHEEL_DIR), '0.0.3');
      wheel = findBundledWheel(ext);
      layout = ownServerLayout(path.join(tmp, 'globalStorage'));
      assert.equal(ownServerState(layout, wheel, defaultIsExecutable), 'absent');
      lines = [];
      marker = await installServer({ python: S.PYTHON, wheel, layout, onLine: (l) => lines.push(l) });
    });

    test('installs the wheel: milk-lsp runs from the venv', () => {
      const out = cp.execFileSync(layout.milkLsp, [], { encoding: 'utf8' });
      assert.equal(out.trim(), 'tiny milk-lsp 0.0.3');
      assert.ok(lines[0].startsWith('creating the Python environment'), lines[0]);
      assert.ok(lines.some((l) => /Successfully installed milk-lsp-0\.0\.3/.test(l)), 'pip lines are reported');
      assert.equal(lines.at(-1), `installed ${wheel.name}`);
    });

    test('the marker names the wheel: the same one is current, another (an update) is outdated', () => {
      assert.deepEqual(readMarker(layout), marker);
      assert.equal(marker.wheel, wheel.name);
      assert.equal(marker.python, S.PYTHON);
      assert.equal(ownServerState(layout, wheel, defaultIsExecutable), 'current');
      assert.equal(ownServerState(layout, { ...wheel, sha256: '0'.repeat(64) }, defaultIsExecutable), 'outdated');
      assert.equal(ownServerState(layout, { ...wheel, name: 'milk_lsp-0.0.4-py3-none-any.whl' }, defaultIsExecutable), 'outdated');
      // a build without a wheel keeps what is there
      assert.equal(ownServerState(layout, undefined, defaultIsExecutable), 'current');
    });

    test('a failed reinstall leaves no marker: the install is not counted as done', async () => {
      const failing = script('python-no-venv', 'echo "No module named venv" >&2; exit 1');
      await assert.rejects(
        installServer({ python: failing, wheel, layout, onLine: () => undefined }),
        (err) => err instanceof InstallError && /creating the Python environment failed \(exit code 1\): No module named venv/.test(err.message),
      );
      assert.equal(readMarker(layout), undefined);
      assert.equal(ownServerState(layout, wheel, defaultIsExecutable), 'absent');
    });
  });
});

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { statusBarView, doctorReport, localDownLine, embeddedEngineMissing, embeddedEngineOffer } = require('../out/lib/statusModel.js');

const ok = {
  version: '0.1.0',
  local: { baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen3', reachable: true },
  claude: { path: '/usr/bin/claude', found: true, version: '2.0.0' },
  storage: '/tmp/s',
};

test('idle shows the local model', () => {
  const v = statusBarView({ serverState: 'running', busy: undefined, status: ok });
  assert.match(v.text, /milk · qwen3/);
  assert.equal(v.warning, false);
});

test('running local / Claude', () => {
  assert.match(statusBarView({ serverState: 'running', busy: 'local', status: ok }).text, /local running · qwen3/);
  assert.match(statusBarView({ serverState: 'running', busy: 'claude', status: ok }).text, /Claude running/);
});

test('warning when the model or claude is unreachable', () => {
  let v = statusBarView({ serverState: 'running', busy: undefined, status: { ...ok, local: { ...ok.local, reachable: false, error: 'connection refused' } } });
  assert.equal(v.warning, true);
  assert.match(v.text, /milk · model server down/);
  assert.match(v.tooltip, /connection refused/);
  v = statusBarView({ serverState: 'running', busy: undefined, status: { ...ok, claude: { found: false, error: 'not on PATH' } } });
  assert.equal(v.warning, true);
  assert.match(v.text, /claude not found/);
});

test('server failed', () => {
  const v = statusBarView({ serverState: 'failed', busy: undefined, problem: 'not found' });
  assert.equal(v.warning, true);
  assert.equal(v.tooltip, 'not found');
});

test('doctor report', () => {
  const r = doctorReport(ok, { serverCommand: '/venv/bin/milk-lsp' });
  assert.match(r, /milk-lsp version: 0.1.0/);
  assert.match(r, /✅ endpoint: http:\/\/127.0.0.1:11434\/v1/);
  assert.match(r, /"reachable": true/);
});

test('the embedded engine shows as "embedded · model"', () => {
  const status = { ...ok, local: { ...ok.local, provider: 'embedded', model: 'qwen2.5-coder', loadState: 'stopped' } };
  const v = statusBarView({ serverState: 'running', busy: undefined, status });
  assert.match(v.text, /milk · embedded · qwen2\.5-coder/);
});

test('the next route shows when it is Claude, with the way back', () => {
  const next = { agent: 'claude', reason: 'you sent this session to Claude' };
  const v = statusBarView({ serverState: 'running', busy: undefined, status: ok, nextRoute: next });
  assert.equal(v.text, '$(comment-discussion) milk · qwen3 · next: Claude');
  assert.match(v.tooltip, /you sent this session to Claude/);
  assert.match(v.tooltip, /Back to local/);
  // "Back to local" chosen: the next message goes local
  assert.equal(statusBarView({ serverState: 'running', busy: undefined, status: ok, nextRoute: next, routeOverride: 'local' }).text, '$(comment-discussion) milk · qwen3');
  assert.equal(statusBarView({ serverState: 'running', busy: undefined, status: ok, nextRoute: { agent: 'local', reason: 'x' } }).text, '$(comment-discussion) milk · qwen3');
});

test("the routing numbers (milk/stats text) join a running server's tooltip", () => {
  const stats = 'Local model (qwen3): 3 of 4 turns answered locally; 1 handed to Claude (1 a failed edit).\n$0.0000 spent on Claude today (2026-12-02); no daily budget set.';
  const idle = statusBarView({ serverState: 'running', busy: undefined, status: ok, stats });
  assert.ok(idle.tooltip.endsWith(`\n\n${stats}`), idle.tooltip);
  assert.match(idle.tooltip, /^milk is idle/);
  const busy = statusBarView({ serverState: 'running', busy: 'local', status: ok, stats });
  assert.ok(busy.tooltip.includes('3 of 4 turns answered locally'));
  // no server, or no stats (an older server): the tooltip as before
  assert.ok(!statusBarView({ serverState: 'failed', busy: undefined, problem: 'gone', stats }).tooltip.includes('answered locally'));
  assert.equal(statusBarView({ serverState: 'running', busy: undefined, status: ok }).tooltip, statusBarView({ serverState: 'running', busy: undefined, status: ok, stats: undefined }).tooltip);
});

test('starting says what the start waits for (milk installing its own server)', () => {
  assert.equal(statusBarView({ serverState: 'starting', busy: undefined }).tooltip, 'Starting milk-lsp…');
  const v = statusBarView({ serverState: 'starting', busy: undefined, problem: 'Installing the milk-lsp server…' });
  assert.match(v.text, /milk: starting/);
  assert.equal(v.tooltip, 'Installing the milk-lsp server…');
});

// ---- issue 31 ------------------------------------------------------------------------------

const URL = 'http://127.0.0.1:11434/v1';
const count = (text, part) => text.split(part).length - 1;

test('issue 31 item 2: the tooltip names the unreachable URL once', () => {
  // the server's probe error names the URL itself
  const error = `no local model reachable at ${URL}: connection refused; start Ollama/llama-server or set local.baseUrl`;
  const v = statusBarView({ serverState: 'running', busy: undefined, status: { ...ok, local: { ...ok.local, reachable: false, error } } });
  assert.equal(count(v.tooltip, URL), 1, v.tooltip);
  assert.doesNotMatch(v.tooltip, /unreachable at .*unreachable at/);
  assert.match(v.tooltip, /milk\.local\.baseUrl/, 'the VS Code setting name');
  // an error that does not name it: the URL is added, once
  const w = statusBarView({ serverState: 'running', busy: undefined, status: { ...ok, local: { ...ok.local, reachable: false, error: 'connection refused' } } });
  assert.equal(count(w.tooltip, URL), 1, w.tooltip);
  assert.match(w.tooltip, /connection refused/);
});

test('issue 31 item 1: a turn that found the model server down warns, though the last status said reachable', () => {
  const localDown = { detail: `no local model reachable at ${URL}: connection refused` };
  const v = statusBarView({ serverState: 'running', busy: undefined, status: ok, localDown });
  assert.equal(v.text, '$(warning) milk · model server down');
  assert.equal(v.warning, true);
  assert.equal(count(v.tooltip, URL), 1, v.tooltip);
  assert.match(v.tooltip, /connection refused/);
  // no detail: the URL from the status
  const bare = statusBarView({ serverState: 'running', busy: undefined, status: ok, localDown: {} });
  assert.match(bare.tooltip, new RegExp(`model server at ${URL.replace(/[./]/g, '\\$&')} is down`));
  // without it, idle as before
  assert.equal(statusBarView({ serverState: 'running', busy: undefined, status: ok, localDown: undefined }).text, '$(comment-discussion) milk · qwen3');
});

test('issue 31 items 1 and 3: while Claude answers a turn the model server could not, the status bar says both', () => {
  const v = statusBarView({ serverState: 'running', busy: 'claude', status: ok, localDown: { detail: `no local model reachable at ${URL}` } });
  assert.match(v.text, /Claude running · model server down/);
  assert.equal(v.warning, true);
  assert.match(v.tooltip, /Claude Code is answering/);
  assert.equal(count(v.tooltip, URL), 1);
  // a local turn running: it is trying the model server again, no warning
  assert.doesNotMatch(statusBarView({ serverState: 'running', busy: 'local', status: ok, localDown: {} }).text, /down/);
});

const embeddedMissing = {
  ...ok,
  local: {
    baseUrl: '',
    model: 'qwen2.5-coder',
    reachable: false,
    provider: 'embedded',
    loadState: 'stopped',
    error: "local.provider is embedded but xllamacpp is not installed: install the embedded engine: pip install 'milk-lsp[embedded]'",
  },
};

test('issue 31 item 9: the embedded engine is named instead of an empty URL', () => {
  const v = statusBarView({ serverState: 'running', busy: undefined, status: embeddedMissing });
  assert.match(v.text, /embedded engine not available/);
  assert.match(v.tooltip, /^The embedded engine is not available: milk\.local\.provider is embedded but xllamacpp is not installed/);
  assert.doesNotMatch(v.tooltip, /at :|at \s*$|unreachable at/m, v.tooltip);
  assert.equal(localDownLine(embeddedMissing, undefined).includes(' at :'), false);
  assert.equal(embeddedEngineMissing(embeddedMissing), true);
  assert.equal(embeddedEngineMissing(ok), false);
  assert.equal(embeddedEngineMissing({ ...embeddedMissing, local: { ...embeddedMissing.local, error: 'the model file is gone' } }), false);
  const offer = embeddedEngineOffer(embeddedMissing);
  assert.match(offer, /^milk: the embedded engine is not available/);
  assert.match(offer, /pip install 'milk-lsp\[embedded\]'/);
  assert.doesNotMatch(offer, /at :/);
  // Doctor too: no "endpoint: " with nothing after it
  assert.match(doctorReport(embeddedMissing), /❌ the embedded engine \(stopped\)/);
  assert.doesNotMatch(doctorReport(embeddedMissing), /endpoint: \n/);
});

// Test support: the real milk-lsp server and the project's two test doubles
// (tests/fakes/openai_server.py and tests/fakes/anthropic_api.py), all in throwaway dirs.
//   MILK_VENV  the venv with milk-lsp installed (default: <repo>/.venv)
//   MILK_REPO  the repository root (default: three levels up from editors/vscode)
const cp = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO = process.env.MILK_REPO || path.resolve(__dirname, '..', '..', '..', '..');
const VENV = process.env.MILK_VENV || path.join(REPO, '.venv');
const PYTHON = path.join(VENV, 'bin', 'python');
const MILK_LSP = path.join(VENV, 'bin', 'milk-lsp');

/** The `claude` CLI bundled in the claude-agent-sdk wheel. */
function findClaude() {
  if (process.env.MILK_CLAUDE) return process.env.MILK_CLAUDE;
  const lib = path.join(VENV, 'lib');
  for (const py of fs.existsSync(lib) ? fs.readdirSync(lib) : []) {
    const p = path.join(lib, py, 'site-packages', 'claude_agent_sdk', '_bundled', 'claude');
    if (fs.existsSync(p)) return p;
  }
  return undefined;
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Start `python -m <module> --port 0`, wait for `READY <url>`. */
async function startFake(module, extraArgs = [], env = process.env) {
  const proc = cp.spawn(PYTHON, ['-m', module, '--port', '0', ...extraArgs], {
    cwd: REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const url = await withTimeout(
    new Promise((resolve, reject) => {
      let buf = '';
      proc.stdout.on('data', (d) => {
        buf += d;
        const m = /READY (\S+)/.exec(buf);
        if (m) resolve(m[1]);
      });
      proc.on('exit', (code) => reject(new Error(`${module} exited ${code}: ${stderr}`)));
    }),
    30000,
    `${module} READY`,
  );
  const origin = new URL(url).origin;
  return {
    url,
    proc,
    async script(list) {
      const r = await fetch(`${origin}/_script`, { method: 'POST', body: JSON.stringify(list), headers: { 'content-type': 'application/json' } });
      if (!r.ok) throw new Error(`${module} /_script: ${r.status}`);
    },
    async requests() {
      return (await fetch(`${origin}/_requests`)).json();
    },
    stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
    },
  };
}

/** Throwaway HOME/TMPDIR/XDG dirs, a workspace folder and a storage dir. */
function makeSandbox(prefix = 'milk-vscode-test-') {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const dirs = {};
  for (const d of ['home', 'tmp', 'xdg-data', 'xdg-config', 'storage', 'workspace']) {
    dirs[d] = path.join(root, d);
    fs.mkdirSync(dirs[d], { recursive: true });
  }
  fs.writeFileSync(path.join(dirs.workspace, 'hello.py'), 'def greet(name):\n    return f"hello {name}"\n');
  return {
    root,
    ...dirs,
    cleanup() {
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Environment for the server process: isolated dirs, and `claude` pointed at the stand-in API. */
function serverEnv(sandbox, anthropicUrl) {
  const env = {
    ...process.env,
    HOME: sandbox.home,
    TMPDIR: sandbox.tmp,
    XDG_DATA_HOME: sandbox['xdg-data'],
    XDG_CONFIG_HOME: sandbox['xdg-config'],
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ANTHROPIC_API_KEY: 'sk-test',
  };
  if (anthropicUrl) env.ANTHROPIC_BASE_URL = anthropicUrl;
  delete env.ANTHROPIC_AUTH_TOKEN;
  delete env.CLAUDE_CONFIG_DIR;
  return env;
}

/** The `milk` settings section for the tests (PROTOCOL.md's nested keys). */
function milkSettings(sandbox, openaiUrl, extra = {}) {
  const claude = findClaude();
  return {
    local: { baseUrl: openaiUrl, maxToolRounds: 5 },
    claude: claude ? { path: claude } : {},
    storageDir: sandbox.storage,
    ...extra,
  };
}

function requireServer() {
  if (!fs.existsSync(MILK_LSP)) {
    throw new Error(`milk-lsp not found at ${MILK_LSP}: set MILK_VENV to a venv with milk-lsp installed`);
  }
}

module.exports = { REPO, VENV, PYTHON, MILK_LSP, findClaude, withTimeout, startFake, makeSandbox, serverEnv, milkSettings, requireServer };

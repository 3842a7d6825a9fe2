// The milk-lsp wheel the .vsix carries (dist/wheel): `pip wheel --no-deps` of this repository,
// built from a copy of its sources in a temp dir (setuptools writes build/ and *.egg-info next
// to the sources; the checkout stays as it is). The Python: $MILK_PYTHON, else $MILK_VENV's,
// else the repository's .venv, else python3 on PATH.
//   node scripts/wheel.js        (build.js --production runs it too)
const cp = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const repo = process.env.MILK_REPO || path.resolve(root, '..', '..');
const outDir = path.join(root, 'dist', 'wheel');

function buildPython() {
  if (process.env.MILK_PYTHON) return process.env.MILK_PYTHON;
  const bin = process.platform === 'win32' ? path.join('Scripts', 'python.exe') : path.join('bin', 'python');
  for (const venv of [process.env.MILK_VENV, path.join(repo, '.venv')]) {
    if (venv && fs.existsSync(path.join(venv, bin))) return path.join(venv, bin);
  }
  return process.platform === 'win32' ? 'python' : 'python3';
}

/** What the wheel is built from: the project files and the package, without caches. */
function copySources(dest) {
  const top = fs.readdirSync(repo).filter((n) => n === 'pyproject.toml' || n === 'README.md' || /^(LICEN[CS]E|COPYING|NOTICE)/.test(n));
  if (!top.includes('pyproject.toml')) throw new Error(`no pyproject.toml in ${repo}`);
  for (const n of top) fs.copyFileSync(path.join(repo, n), path.join(dest, n));
  fs.cpSync(path.join(repo, 'milk_lsp'), path.join(dest, 'milk_lsp'), {
    recursive: true,
    filter: (src) => !/(^|[\\/])__pycache__$/.test(src) && !src.endsWith('.pyc'),
  });
}

function buildWheel() {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'milk-wheel-'));
  try {
    const src = path.join(tmp, 'src');
    const out = path.join(tmp, 'out');
    fs.mkdirSync(src);
    copySources(src);
    const python = buildPython();
    const r = cp.spawnSync(python, ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '-q', '-w', out, '--', src], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (r.status !== 0) throw new Error(`pip wheel with ${python} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}`);
    const wheels = fs.readdirSync(out).filter((n) => /^milk_lsp-.+\.whl$/.test(n));
    if (wheels.length !== 1) throw new Error(`pip wheel made ${wheels.join(', ') || 'no wheel'}`);
    fs.rmSync(outDir, { recursive: true, force: true });
    fs.mkdirSync(outDir, { recursive: true });
    fs.copyFileSync(path.join(out, wheels[0]), path.join(outDir, wheels[0]));
    console.log(`wheel: dist/wheel/${wheels[0]} with ${python} in ${Date.now() - started} ms`);
    return path.join(outDir, wheels[0]);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

module.exports = { buildWheel };

if (require.main === module) {
  try {
    buildWheel();
  } catch (err) {
    console.error(String(err.message ?? err));
    process.exit(1);
  }
}

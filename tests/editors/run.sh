#!/usr/bin/env bash
# The editors without milk's plugins, driven headless through standard LSP alone:
#   nvim_plain/run.sh  Neovim 0.11 with only vim.lsp.start (docs/editors/neovim.md)
#   emacs/run.sh       Emacs with eglot, --batch (docs/editors/emacs.md)
#
#   bash tests/editors/run.sh [nvim_plain|emacs ...]
#
# MILK_SKIP_EDITORS=1 skips them (as scripts/test.sh does for every editor suite). Each suite
# installs what it needs and prints "<suite>: N passed, N failed"; a suite that prints no such
# line counts as failed. The last line is the total: "editors: N passed, N failed".
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../scripts/tally.sh
. "$here/../../scripts/tally.sh"

if [ "${MILK_SKIP_EDITORS:-0}" = "1" ]; then
  echo "editors: skipped (MILK_SKIP_EDITORS=1)"
  exit 0
fi

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(nvim_plain emacs)

total_passed=0
total_failed=0
failed=()
for suite in "${suites[@]}"; do
  script="$here/$suite/run.sh"
  echo "== editors: $suite"
  t0=$(date +%s)
  out="$(mktemp "${TMPDIR:-/tmp}/milk-editors-$suite.XXXXXX")"
  if [ -f "$script" ]; then
    bash "$script" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
  else
    echo "editors: no suite $script" | tee "$out"
    rc=1
  fi
  tally "$out" '^[a-z-]+: [0-9]+ passed, [0-9]+ failed$' "$rc" editors "$suite"
  rm -f "$out"
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  [ "$f" -gt 0 ] && failed+=("$suite")
  echo "== editors: $suite took $(($(date +%s) - t0)) s"
done

[ ${#failed[@]} -gt 0 ] && echo "editors: failing: ${failed[*]}"
echo "editors: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]

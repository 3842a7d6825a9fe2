#!/usr/bin/env bash
# End-to-end test in a real VS Code: code-server + the .vsix + headless Debian Chromium driven
# by playwright-core (e2e/drive.js), with milk-lsp configured against the project's scripted
# OpenAI-compatible server and the Messages-API stand-in (behind the real `claude` CLI).
#
# Env: CS_BIN (code-server binary), VSIX, MILK_VENV, MILK_REPO, ART (artifacts dir),
#      CHROMIUM (default /usr/bin/chromium). Everything runs in a throwaway dir; every process
#      started here is killed on exit (code-server by process group).
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
MILK_REPO="${MILK_REPO:-$(cd "$HERE/../.." && pwd)}"
MILK_VENV="${MILK_VENV:-$MILK_REPO/.venv}"
CS_BIN="${CS_BIN:?set CS_BIN to the code-server binary}"
VSIX="${VSIX:-$HERE/milk-lsp.vsix}"
ART="${ART:-$HERE/test-artifacts/e2e}"
PY="$MILK_VENV/bin/python"
W="$(mktemp -d "${TMPDIR:-/tmp}/milk-vscode-e2e.XXXXXX")"
rm -rf "$ART"
mkdir -p "$ART" "$W"/{ud/User,ext,workspace,home,tmp,xdg-config,xdg-data,storage}
PIDS=()
CSPID=""
stop_code_server() {
  if [ -n "$CSPID" ]; then
    kill -TERM -- "-$CSPID" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 -- "-$CSPID" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$CSPID" 2>/dev/null || true
    CSPID=""
  fi
}
cleanup() {
  local rc=$?
  stop_code_server
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # keep the logs next to the screenshots
  cp "$W"/code-server*.log "$ART/" 2>/dev/null || true
  # the "milk" output channel and the extension host log of each window
  local n=0 f
  while IFS= read -r f; do
    n=$((n + 1)); cp "$f" "$ART/window$n-$(basename "$f")" 2>/dev/null || true
  done < <(find "$W"/ud*/logs \( -name '*milk*.log' -o -name '*exthost*.log' \) 2>/dev/null | sort)
  rm -rf "$W"
  exit $rc
}
trap cleanup EXIT
t0=$(date +%s%N); el() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"; }

CLAUDE="$(ls "$MILK_VENV"/lib/python3*/site-packages/claude_agent_sdk/_bundled/claude 2>/dev/null | head -1 || true)"
[ -x "$MILK_VENV/bin/milk-lsp" ] || { echo "e2e: no milk-lsp in $MILK_VENV"; exit 1; }
[ -n "$CLAUDE" ] || { echo "e2e: no bundled claude CLI in $MILK_VENV"; exit 1; }

# isolated environment for code-server, its extension host, milk-lsp and claude
export HOME="$W/home" TMPDIR="$W/tmp" XDG_CONFIG_HOME="$W/xdg-config" XDG_DATA_HOME="$W/xdg-data"
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ANTHROPIC_API_KEY=sk-test
unset ANTHROPIC_AUTH_TOKEN CLAUDE_CONFIG_DIR

start_fake() { # module outfile (not in a $(...) subshell: PIDS must reach cleanup)
  (cd "$MILK_REPO" && exec "$PY" -m "$1" --port 0) > "$2" 2>"$2.err" &
  PIDS+=($!)
}
ready_url() { # outfile -> the URL of its READY line
  for _ in $(seq 300); do grep -q '^READY ' "$1" && break; sleep 0.1; done
  sed -n 's/^READY //p' "$1" | head -1
}
start_fake tests.fakes.openai_server "$W/openai.out"
start_fake tests.fakes.anthropic_api "$W/anthropic.out"
OPENAI_URL="$(ready_url "$W/openai.out")"
ANTHROPIC_URL="$(ready_url "$W/anthropic.out")"
[ -n "$OPENAI_URL" ] && [ -n "$ANTHROPIC_URL" ] || { echo "e2e: fakes did not start"; cat "$W"/*.err; exit 1; }
export ANTHROPIC_BASE_URL="$ANTHROPIC_URL"
echo "fakes: $OPENAI_URL $ANTHROPIC_URL ($(el))"

cat > "$W/workspace/hello.py" <<'PYEOF'
def greet(name: str) -> str:
    """Say hello."""
    return f"hello {name}"


STOP_REASON = "end_turn"  # named by the scripted answer: milk checks what an answer names
PYEOF
cat > "$W/ud/User/settings.json" <<JSON
{
  "workbench.startupEditor": "none",
  "security.workspace.trust.enabled": false,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "telemetry.telemetryLevel": "off",
  "workbench.tips.enabled": false,
  "chat.disableAIFeatures": true,
  "remote.autoForwardPorts": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "workbench.colorTheme": "Default Dark Modern",
  "milk.server.path": "$MILK_VENV/bin/milk-lsp",
  "milk.local.baseUrl": "$OPENAI_URL",
  "milk.claude.path": "$CLAUDE",
  "milk.local.handOff": "off",
  "milk.storageDir": "$W/storage"
}
JSON
cp "$W/ud/User/settings.json" "$W/settings.orig.json"
PORT="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$W/config.yaml"
CS=("$CS_BIN" --config "$W/config.yaml" --user-data-dir "$W/ud" --extensions-dir "$W/ext")

"${CS[@]}" --install-extension "$VSIX" > "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
"${CS[@]}" --list-extensions --show-versions | tee "$ART/extensions.txt"
grep -q '^milk-lsp.milk-lsp@' "$ART/extensions.txt" || { echo "e2e: vsix not installed"; exit 1; }
echo "vsix installed ($(el))"

start_code_server() { # user-data-dir, log file, what it opens
  setsid "$CS_BIN" --config "$W/config.yaml" --user-data-dir "$1" --extensions-dir "$W/ext" \
    --disable-telemetry --disable-update-check --disable-workspace-trust \
    --disable-getting-started-override "$3" > "$2" 2>&1 &
  CSPID=$!
  for _ in $(seq 240); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.25; done
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null || { echo "e2e: code-server did not come up"; cat "$2"; exit 1; }
  echo "code-server up on $PORT ($(el))"
}
start_code_server "$W/ud" "$W/code-server.log" "$W/workspace"

rc=0
URL="http://127.0.0.1:$PORT/?folder=$W/workspace" OUT="$ART" PROFILE="$W/chrome-profile" WORKSPACE="$W/workspace" SETTINGS="$W/ud/User/settings.json" EXT_DIR="$W/ext" \
  OPENAI_URL="$OPENAI_URL" ANTHROPIC_URL="$ANTHROPIC_URL" MILK_LSP="$MILK_VENV/bin/milk-lsp" STORAGE="$W/storage" \
  timeout 480 node "$HERE/e2e/drive.js" || rc=$?
echo "e2e finished rc=$rc ($(el)); artifacts in $ART"

# a multi-root window (e2e/multiroot.js): two folders in a .code-workspace, the chat on the
# second. A code-server of its own, on the same extension and settings as drive.js began with
# (drive.js changed them and leaves windows behind: once in three runs here the next window's
# extension host then started with no folder at all)
stop_code_server
mkdir -p "$W/mr/alpha" "$W/mr/beta" "$W/ud-mr/User"
printf 'print("alpha")\n' > "$W/mr/alpha/main.py"
printf 'codename = ORCHID-7\n' > "$W/mr/beta/orchid.txt"
printf '{"folders": [{"path": "alpha"}, {"path": "beta"}]}\n' > "$W/mr/both.code-workspace"
cp "$W/settings.orig.json" "$W/ud-mr/User/settings.json"
start_code_server "$W/ud-mr" "$W/code-server-mr.log" "$W/mr/both.code-workspace"
URL="http://127.0.0.1:$PORT/?workspace=$W/mr/both.code-workspace" OUT="$ART" PROFILE="$W/chrome-profile-mr" OPENAI_URL="$OPENAI_URL" \
  timeout 240 node "$HERE/e2e/multiroot.js" || rc=1
echo "multi-root e2e finished rc=$rc ($(el))"
exit $rc

#!/usr/bin/env bash
# End-to-end test of "VS Code installs its own server" (issue 22): code-server + the .vsix +
# headless Chromium (e2e/install.js), from a clean HOME, with no milk-lsp anywhere on PATH and
# no milk.server.* settings. The extension offers the install, a wrong milk.server.python gets
# the one message, then the install from the wheel inside the .vsix runs (a real venv and pip
# install: pip fetches milk-lsp's dependencies from the indexes the user's pip config names),
# and the server it installed answers a chat message.
#
# Env: CS_BIN, VSIX, MILK_VENV, MILK_REPO, ART, CHROMIUM as for e2e.sh; MILK_CI_CACHE (pip's
#      download cache goes to $MILK_CI_CACHE/pip when set). Every process started here is
#      killed on exit (code-server by process group).
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
MILK_REPO="${MILK_REPO:-$(cd "$HERE/../.." && pwd)}"
MILK_VENV="${MILK_VENV:-$MILK_REPO/.venv}"
CS_BIN="${CS_BIN:?set CS_BIN to the code-server binary}"
VSIX="${VSIX:-$HERE/milk-lsp.vsix}"
ART="${ART:-$HERE/test-artifacts/e2e-install}"
PY="$MILK_VENV/bin/python"
W="$(mktemp -d "${TMPDIR:-/tmp}/milk-vscode-e2e-install.XXXXXX")"
rm -rf "$ART"
mkdir -p "$ART" "$W"/{ud/User,ext,workspace,home,tmp,xdg-config/pip,xdg-data,storage,bin}
PIDS=()
CSPID=""
cleanup() {
  local rc=$?
  if [ -n "$CSPID" ]; then
    kill -TERM -- "-$CSPID" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 -- "-$CSPID" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$CSPID" 2>/dev/null || true
  fi
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  cp "$W/code-server.log" "$ART/" 2>/dev/null || true
  local f
  while IFS= read -r f; do cp "$f" "$ART/$(basename "$(dirname "$f")")-$(basename "$f")" 2>/dev/null || true; done \
    < <(find "$W/ud/logs" \( -name '*milk*.log' -o -name '*exthost*.log' \) 2>/dev/null | sort)
  rm -rf "$W"
  exit $rc
}
trap cleanup EXIT
t0=$(date +%s%N); el() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"; }

CLAUDE="$(ls "$MILK_VENV"/lib/python3*/site-packages/claude_agent_sdk/_bundled/claude 2>/dev/null | head -1 || true)"
[ -n "$CLAUDE" ] || { echo "e2e-install: no bundled claude CLI in $MILK_VENV"; exit 1; }
# the .vsix carries the wheel
"$PY" -m zipfile -l "$VSIX" > "$ART/vsix-files.txt"
grep -E 'extension/dist/wheel/milk_lsp-[^ ]+\.whl' "$ART/vsix-files.txt" || { echo "e2e-install: no milk-lsp wheel in $VSIX"; exit 1; }

# the user's pip configuration is part of the machine (where pip finds packages); the rest
# of the home directory is new
for conf in "${XDG_CONFIG_HOME:-$HOME/.config}/pip/pip.conf" "$HOME/.pip/pip.conf"; do
  if [ -f "$conf" ]; then cp "$conf" "$W/xdg-config/pip/pip.conf"; break; fi
done
[ -n "${MILK_CI_CACHE:-}" ] && export PIP_CACHE_DIR="$MILK_CI_CACHE/pip"
# PATH without any directory that has a milk-lsp (nor the project's venv)
CLEAN_PATH=""
IFS=: read -ra dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  [ "$d" = "$MILK_VENV/bin" ] && continue
  [ -e "$d/milk-lsp" ] && continue
  CLEAN_PATH="${CLEAN_PATH:+$CLEAN_PATH:}$d"
done
export PATH="$CLEAN_PATH"
export HOME="$W/home" TMPDIR="$W/tmp" XDG_CONFIG_HOME="$W/xdg-config" XDG_DATA_HOME="$W/xdg-data"
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ANTHROPIC_API_KEY=sk-test
unset ANTHROPIC_AUTH_TOKEN CLAUDE_CONFIG_DIR VIRTUAL_ENV
if command -v milk-lsp >/dev/null; then echo "e2e-install: milk-lsp still on PATH: $(command -v milk-lsp)"; exit 1; fi
[ ! -e "$HOME/.local/bin/milk-lsp" ] || exit 1
PY_ON_PATH="$(command -v python3 || command -v python || true)"
[ -n "$PY_ON_PATH" ] || { echo "e2e-install: no python3 on PATH"; exit 1; }
echo "PATH has no milk-lsp; python3 on PATH: $PY_ON_PATH ($("$PY_ON_PATH" --version 2>&1))"

# a "Python" that is too old: the one message
cat > "$W/bin/python" <<'SH'
#!/bin/sh
echo "(3, 8) False"
SH
chmod +x "$W/bin/python"

(cd "$MILK_REPO" && exec "$PY" -m tests.fakes.openai_server --port 0) > "$W/openai.out" 2>"$W/openai.err" &
PIDS+=($!)
for _ in $(seq 300); do grep -qs "^READY " "$W/openai.out" && break; sleep 0.1; done
OPENAI_URL="$(sed -n 's/^READY //p' "$W/openai.out" | head -1)"
[ -n "$OPENAI_URL" ] || { echo "e2e-install: the model fake did not start"; cat "$W/openai.err"; exit 1; }

printf 'def greet(name):\n    return f"hello {name}"\n' > "$W/workspace/hello.py"
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
  "milk.local.baseUrl": "$OPENAI_URL",
  "milk.claude.path": "$CLAUDE",
  "milk.local.handOff": "off",
  "milk.storageDir": "$W/storage"
}
JSON
PORT="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
printf 'bind-addr: 127.0.0.1:%s\nauth: none\ncert: false\n' "$PORT" > "$W/config.yaml"
CS=("$CS_BIN" --config "$W/config.yaml" --user-data-dir "$W/ud" --extensions-dir "$W/ext")
"${CS[@]}" --install-extension "$VSIX" > "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
echo "vsix installed ($(el))"

setsid "${CS[@]}" --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override "$W/workspace" > "$W/code-server.log" 2>&1 &
CSPID=$!
for _ in $(seq 240); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.25; done
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null || { echo "e2e-install: code-server did not come up"; cat "$W/code-server.log"; exit 1; }
echo "code-server up on $PORT ($(el))"

rc=0
URL="http://127.0.0.1:$PORT/?folder=$W/workspace" OUT="$ART" PROFILE="$W/chrome-profile" SETTINGS="$W/ud/User/settings.json" \
  USER_DATA="$W/ud" EXT_DIR="$W/ext" OPENAI_URL="$OPENAI_URL" FAKE_PYTHON="$W/bin/python" VSIX_FILES="$ART/vsix-files.txt" \
  timeout 540 node "$HERE/e2e/install.js" || rc=$?
echo "e2e-install finished rc=$rc ($(el)); artifacts in $ART"
exit $rc

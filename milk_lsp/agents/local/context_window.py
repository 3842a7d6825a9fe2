"""Is the model server's context big enough for milk's prompts? Ollama's silent cut.

Ollama runs a model with a small context unless told otherwise (2,048 or 4,096 tokens, or
a memory-based default in newer versions), and when a prompt is longer it drops the
prompt's start, milk's system prompt and tool specs first, without an error; its
OpenAI-compatible `/v1` endpoint cannot raise `num_ctx`. Two checks catch it:

- after a reply, milk compares the prompt tokens the server reports (`usage.prompt_tokens`)
  with its own count of what it sent (`estimate_prompt_tokens`); far fewer means the
  server cut the prompt (`looks_cut`), and the turn fails as a context overflow with the
  fix in words (`cut_message`);
- up front, `probe_ollama` detects Ollama (`GET /api/version`) and reads the context the
  model runs with (`GET /api/ps` when it is loaded, else `num_ctx` in its Modelfile
  parameters from `POST /api/show`), for `milk/status` and `milk-lsp doctor`
  (`context_warning`).

milk has no tokenizer for the user's model: its count is characters / 4 with whitespace
runs counted once, which real tokenizers reach within about 25 % on English, code and
JSON (they need more tokens, never far fewer). So a cut is only reported when the server
saw under 3/4 of that count, on prompts of at least 1,024 counted tokens.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from milk_lsp.doors import Door

CHARS_PER_TOKEN = 4
CUT_RATIO = 0.75
"""A prompt is cut when the server saw fewer than this share of milk's count."""
CUT_MIN_TOKENS = 1024
"""Shorter prompts are never reported as cut (every server's context is larger)."""
CUT_MIN_MISSING = 256

BASE_PROMPT_TOKENS = 1400
"""milk's system prompt and tool specs, counted (`tests/test_context_cut.py` checks it)."""
HISTORY_TOKENS = 24_000 // CHARS_PER_TOKEN
"""The history a turn carries at most (`prompts.local.HISTORY_BUDGET_CHARS`)."""
REPLY_TOKENS = 1024
NEEDED_TOKENS = BASE_PROMPT_TOKENS + HISTORY_TOKENS + REPLY_TOKENS
"""The context a turn with a full history needs: what milk asks of the server."""
SUGGESTED_CONTEXT = 16_384

PROBE_TIMEOUT = httpx.Timeout(connect=2.0, read=3.0, write=3.0, pool=2.0)

_SPACES = re.compile(r"\s+")
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


# ---- milk's own count ---------------------------------------------------------------------


def estimate_prompt_tokens(body: dict[str, Any], *, with_tools: bool = True) -> int:
    """milk's count of the tokens a chat-completion request sends: its messages' texts and
    tool calls, and the tool specs (chat templates render both; `with_tools=False` for a
    template that drops them)."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(piece.get("text", "")) for piece in content if isinstance(piece, dict))
        if message.get("tool_calls"):
            parts.append(json.dumps(message["tool_calls"]))
    if with_tools and body.get("tools"):
        parts.append(json.dumps(body["tools"]))
    chars = sum(len(_SPACES.sub(" ", part)) for part in parts)
    return chars // CHARS_PER_TOKEN


def reported_prompt_tokens(usage: dict[str, Any] | None) -> int | None:
    """`usage.prompt_tokens` (cached ones included, as OpenAI counts them), if reported."""
    if not isinstance(usage, dict):
        return None
    value = usage.get("prompt_tokens")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def looks_cut(estimated: int, reported: int) -> bool:
    """The server saw far fewer tokens than milk sent: it dropped part of the prompt."""
    return (
        estimated >= CUT_MIN_TOKENS
        and reported < estimated * CUT_RATIO
        and estimated - reported >= CUT_MIN_MISSING
    )


# ---- Ollama -------------------------------------------------------------------------------


@dataclass(frozen=True)
class OllamaInfo:
    """What Ollama says about the model milk uses."""

    version: str
    model: str | None
    context_tokens: int | None
    """The context the model runs (or will run) with; None: Ollama's default, not visible."""
    context_source: str
    """Where `context_tokens` comes from, in words ("loaded", "its Modelfile"), or ""."""


def api_root(base_url: str) -> str:
    """Ollama's native API root for an OpenAI-compatible base URL (`…/v1` → `…`)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def template_drops_tools(client: httpx.AsyncClient, base_url: str) -> bool:
    """Whether the server says its chat template renders no tools (llama.cpp's `/props`:
    `chat_template_caps.supports_tools` false, as for SmolLM2): it then drops the tool specs
    from the prompt, which is no cut."""
    try:
        answer = await client.get(f"{api_root(base_url)}/props", timeout=PROBE_TIMEOUT)
        caps = answer.json().get("chat_template_caps") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return False
    return isinstance(caps, dict) and caps.get("supports_tools") is False


async def probe_ollama(
    client: httpx.AsyncClient, base_url: str, model: str | None
) -> OllamaInfo | None:
    """Ollama's version and the model's context; None when the server is not Ollama (or
    does not answer its native API)."""
    root = api_root(base_url)
    try:
        answer = await client.get(f"{root}/api/version", timeout=PROBE_TIMEOUT)
        version = answer.json().get("version") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(version, str) or not version:
        return None
    if not model:
        return OllamaInfo(version, None, None, "")
    loaded = await _loaded_context(client, root, model)
    if loaded is not None:
        return OllamaInfo(version, model, loaded, "loaded now (ollama ps)")
    configured = await _modelfile_context(client, root, model)
    if configured is not None:
        return OllamaInfo(version, model, configured, "num_ctx in its Modelfile")
    return OllamaInfo(version, model, None, "")


async def _loaded_context(client: httpx.AsyncClient, root: str, model: str) -> int | None:
    try:
        answer = await client.get(f"{root}/api/ps", timeout=PROBE_TIMEOUT)
        entries = answer.json().get("models") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or model not in (entry.get("name"), entry.get("model")):
            continue
        size = entry.get("context_length")
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            return size
    return None


async def _modelfile_context(client: httpx.AsyncClient, root: str, model: str) -> int | None:
    try:
        answer = await client.post(f"{root}/api/show", json={"model": model}, timeout=PROBE_TIMEOUT)
        parameters = answer.json().get("parameters") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    return int(found.group(1)) if found else None


# ---- words --------------------------------------------------------------------------------


def ollama_fix(door: Door, tokens: int = SUGGESTED_CONTEXT) -> str:
    """How to give an Ollama model a larger context (its `/v1` endpoint cannot set it)."""
    return (
        f"set OLLAMA_CONTEXT_LENGTH={tokens} in the environment of `ollama serve` and restart "
        f"it, or build a model with a larger context (a Modelfile with `FROM <model>` and "
        f"`PARAMETER num_ctx {tokens}`, then `ollama create <name> -f Modelfile`) and set "
        f"{door.setting('local.model')} to it"
    )


def server_fix(tokens: int = SUGGESTED_CONTEXT) -> str:
    return (
        f"raise the model server's context size to at least {tokens} tokens (llama-server: "
        f"`--ctx-size {tokens}`; LM Studio: the model's Context Length)"
    )


def cut_message(reported: int, estimated: int, ollama: OllamaInfo | None, door: Door) -> str:
    """The user's words for a prompt the server cut: what happened and the fix."""
    fix = ollama_fix(door) if ollama is not None else server_fix()
    server = f"Ollama {ollama.version}" if ollama is not None else "the model server"
    return (
        f"{server} read only {reported} tokens of a prompt milk counts at about {estimated}: "
        "the prompt is longer than the model's context window, so the server silently "
        "dropped its start (milk's instructions and tool descriptions) and this answer was "
        f"made without them. To fix it, {fix}"
    )


def context_warning(info: OllamaInfo, door: Door) -> str | None:
    """`milk/status`'s warning when Ollama's context is smaller than milk's prompts."""
    if info.model is None:
        return None
    if info.context_tokens is None:
        return (
            f"Ollama {info.version} will run {info.model} with its default context (no "
            "num_ctx in its Modelfile, and it is not loaded now): unless "
            "OLLAMA_CONTEXT_LENGTH is set for `ollama serve`, that is 2,048-4,096 tokens in "
            f"most versions, smaller than milk's prompts (up to about {NEEDED_TOKENS}), and "
            f"Ollama silently drops the start of longer prompts. To be sure, "
            f"{ollama_fix(door)}"
        )
    if info.context_tokens >= NEEDED_TOKENS:
        return None
    return (
        f"Ollama {info.version} runs {info.model} with a context of {info.context_tokens} "
        f"tokens ({info.context_source}), smaller than milk's prompts (up to about "
        f"{NEEDED_TOKENS}): Ollama silently drops the start of longer prompts, milk's "
        f"instructions and tool descriptions first. To fix it, {ollama_fix(door)}"
    )

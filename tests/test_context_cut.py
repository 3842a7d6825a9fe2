"""milk's own count of a prompt, and when a server's count means it cut the prompt (issue 22).

The thresholds must catch Ollama's cut (it reports about its context, 2,048 or 4,096, for a
longer prompt) and never flag a prompt a real tokenizer read whole: real tokenizers need
more tokens than milk's characters / 4 on code and JSON, and at most ~25 % fewer on prose.
"""

from __future__ import annotations

import json

from milk_lsp.agents.local import context_window as context
from milk_lsp.agents.local.agent import ESCALATE_TOOL_SPEC
from milk_lsp.agents.local.tool_specs import tool_specs
from milk_lsp.doors import NVIM
from milk_lsp.prompts.local import local_system_prompt


def body(text: str, tools: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": text}],
        "tools": tools or [],
    }


def test_milks_count_is_characters_over_four_with_whitespace_runs_once() -> None:
    assert context.estimate_prompt_tokens(body("abcd" * 100)) == 100
    indented = "x" + " " * 400 + "y"
    assert context.estimate_prompt_tokens(body(indented)) == 1  # "s" and "x y": 4 characters
    tools = [{"type": "function", "function": {"name": "read_file"}}]
    assert context.estimate_prompt_tokens(body("", tools)) == (1 + len(json.dumps(tools))) // 4


def test_the_base_prompt_constant_matches_milks_instructions_and_tools() -> None:
    specs = [*tool_specs(60), ESCALATE_TOOL_SPEC]
    sent = {
        "messages": [{"role": "system", "content": local_system_prompt(True)}],
        "tools": specs,
    }
    counted = context.estimate_prompt_tokens(sent)
    assert abs(counted - context.BASE_PROMPT_TOKENS) <= 200, counted


def test_a_cut_is_far_fewer_tokens_on_a_long_prompt() -> None:
    assert context.looks_cut(6000, 2048)  # Ollama's 2,048 of a 6,000-token prompt
    assert context.looks_cut(3000, 2048)
    assert not context.looks_cut(6000, 5000)  # a tokenizer 17 % thriftier than milk's count
    assert not context.looks_cut(900, 10)  # short prompts are never flagged
    assert not context.looks_cut(1100, 900)  # under 256 missing


def test_reported_tokens_ignore_what_is_not_a_count() -> None:
    assert context.reported_prompt_tokens({"prompt_tokens": 12}) == 12
    for usage in (None, {}, {"prompt_tokens": 0}, {"prompt_tokens": True}, {"prompt_tokens": "9"}):
        assert context.reported_prompt_tokens(usage) is None  # type: ignore[arg-type]


def test_ollamas_native_api_root_and_the_warnings() -> None:
    assert context.api_root("http://127.0.0.1:11434/v1/") == "http://127.0.0.1:11434"
    assert context.api_root("http://h:1/ollama") == "http://h:1/ollama"
    small = context.OllamaInfo("0.12.3", "qwen", 4096, "loaded now (ollama ps)")
    warning = context.context_warning(small, NVIM)
    assert warning is not None and "context of 4096 tokens" in warning
    assert "settings = { ['local'] = { model = … } }" in warning
    assert context.context_warning(context.OllamaInfo("0.12.3", "qwen", 32768, "x"), NVIM) is None
    assert context.context_warning(context.OllamaInfo("0.12.3", None, None, ""), NVIM) is None
    unknown = context.context_warning(context.OllamaInfo("0.12.3", "qwen", None, ""), NVIM)
    assert unknown is not None and "default context" in unknown

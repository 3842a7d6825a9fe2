"""Chat-template markup given as an answer (`<tools></tools>`, `<tool_call>{…}</tool_call>`,
`<|im_start|>assistant`): a model confused by its template writes the template's tags
instead of answering. Decided by the tags' share of the reply, never by its words; markup
shown in code, or a stray tag around a real answer, is no such reply. Pure."""

from __future__ import annotations

import re

TEMPLATE = re.compile(
    r"<\|[A-Za-z0-9_.:-]{1,40}\|>|<\uff5c[^\uff5c<>\n]{1,40}\uff5c>|"
    r"</?(?:tools|tool_call|tool_calls|tool_response|tool_result|tool_use|function_calls?|"
    r"functions)>|<function=[^>\n]{0,80}>|</function>|<(?:start|end)_of_turn>|"
    r"\[/?(?:TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS|INST|SYSTEM_PROMPT|TOOL_CONTENT)\]"
)
"""Special tokens and tags of chat templates (ChatML, Hermes, Llama 3, Mistral, Gemma)."""
_TEMPLATE_BLOCK = re.compile(
    r"<(tools|tool_call|tool_calls|tool_response|tool_result|tool_use|function_calls?|"
    r"functions)>.*?</\1>|<function=[^>\n]{0,80}>.*?</function>|"
    r"\[(?:TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS)\].*|"
    r"<\|(?:im_start|start_header_id)\|>\s*(?:system|user|assistant|tool|ipython)?",
    re.DOTALL,
)
_JSON_BLOCK = re.compile(r"[\[{].*[\]}]", re.DOTALL)
"""The arguments of a call whose closing tag never came."""
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?(?:^[ \t]*\1[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
_SPAN = re.compile(r"(`+)[^`\n]+?\1")
_LETTERS = re.compile(r"[A-Za-z]{2,}")


def markup_answer(answer: str) -> str | None:
    """A short description when `answer` is chat-template markup rather than an answer;
    None otherwise."""
    prose = _SPAN.sub(" ", _FENCED.sub(" ", answer))
    tags = list(dict.fromkeys(TEMPLATE.findall(prose)))
    if not tags:
        return None
    rest = _JSON_BLOCK.sub(" ", TEMPLATE.sub(" ", _TEMPLATE_BLOCK.sub(" ", prose)))
    solid, left = len("".join(prose.split())), len("".join(rest.split()))
    if len(_LETTERS.findall(rest)) >= 3 and left * 2 > solid:
        return None  # a real answer with a stray tag, or one that talks about tags
    shown = " ".join(tags[:3]) + (" …" if len(tags) > 3 else "")
    return f"chat-template markup instead of an answer ({shown})"

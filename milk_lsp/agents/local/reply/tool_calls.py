"""Tool calls as the model streams or writes them, parsed (pure: no I/O, no events).

Owns the lenient merging of streamed fragments and the recognition of calls written as text,
for the tool loop of the local agent (`milk_lsp.agents.local.agent`).

Streamed tool calls are merged leniently (`merge_tool_call_deltas`): servers differ in what
they repeat and when they say they are done, so the loop goes by the tool calls it saw,
never by `finish_reason`. See `shared/research/local-model.md` for the recorded shapes.

Small models (Qwen2.5-Coder behind llama.cpp, Ollama or vLLM) often write a tool call as
text instead: a ```json block, bare JSON, `<tool_call>`/`[tool_call]` tags, or the tool's
name and its arguments (`search_text {'pattern': 'x'}`).
`parse_text_tool_calls` recognises a reply whose whole text is such a call to an offered
tool, and `TextCallGate` holds back text that starts like one while it still could be one,
so the JSON is never shown as an answer.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MergedToolCall",
    "TextCallGate",
    "merge_tool_call_deltas",
    "parse_text_tool_calls",
    "parse_tool_arguments",
]


# -- merging streamed tool calls ---------------------------------------------------------------


@dataclass(frozen=True)
class MergedToolCall:
    """One tool call put together from its streamed fragments."""

    id: str
    """As the server sent it; "" when it sent none (the loop then generates one)."""
    name: str
    """"" when no fragment carried a name (the loop drops such calls)."""
    arguments: str
    """The raw argument text, fragments concatenated; not yet parsed."""
    index: int | None = None


@dataclass
class _Draft:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    index: int | None = None


def merge_tool_call_deltas(fragments: Iterable[Any]) -> list[MergedToolCall]:
    """Merge the `delta.tool_calls` entries of one streamed reply, in stream order.

    Lenient on purpose, for the shapes real servers send:

    * fragments belong together by `index`; without an index, by `id`; without either, a
      fragment continues the latest call (unless it names a function while the latest call
      already has a name: then it is a new call);
    * a different `id` at an index already taken starts a new call;
    * the `id` and the function `name` are taken once and never concatenated
      (llama-cpp-python repeats both in every chunk);
    * argument fragments are concatenated; an argument object (not a string) replaces them;
    * a whole call in one fragment (Ollama) is just a call with one fragment.

    Calls come back in order of first appearance. Entries that are not objects are skipped.
    """
    drafts: list[_Draft] = []
    by_index: dict[int, int] = {}
    by_id: dict[str, int] = {}
    for fragment in fragments:
        if not isinstance(fragment, Mapping):
            continue
        function = fragment.get("function")
        if not isinstance(function, Mapping):
            function = {}
        raw_id = fragment.get("id")
        call_id = raw_id if isinstance(raw_id, str) else ""
        raw_index = fragment.get("index")
        index = (
            raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else None
        )
        raw_name = function.get("name")
        name = raw_name if isinstance(raw_name, str) else ""

        position: int | None
        if index is not None:
            position = by_index.get(index)
            if position is not None and call_id and drafts[position].id not in ("", call_id):
                position = None
        elif call_id:
            position = by_id.get(call_id)
        elif drafts and not (name and drafts[-1].name):
            position = len(drafts) - 1
        else:
            position = None
        if position is None:
            drafts.append(_Draft(index=index))
            position = len(drafts) - 1
        if index is not None:
            by_index[index] = position
        if call_id:
            by_id.setdefault(call_id, position)

        draft = drafts[position]
        if call_id and not draft.id:
            draft.id = call_id
        if name and not draft.name:
            draft.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            draft.arguments.append(arguments)
        elif isinstance(arguments, Mapping | list):
            draft.arguments = [json.dumps(arguments)]
    return [
        MergedToolCall(id=d.id, name=d.name, arguments="".join(d.arguments), index=d.index)
        for d in drafts
    ]


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """Parse a call's argument text: (the object, "") or (None, why it is not valid).

    Empty text is `{}` (servers send "" for calls without arguments); a JSON string that
    itself holds an object (double-encoded, as some models write) is accepted too.
    """
    text = raw.strip()
    if not text:
        return {}, ""
    try:
        value = json.loads(text)
        if isinstance(value, str):
            value = json.loads(value)
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, ""


# -- tool calls written as text ----------------------------------------------------------------

_TEXT_CALL_HOLD_CHARS = 8 * 1024
"""Reply text held back while it may be a tool call written as text; longer is an answer."""
_HEAD_CHECK_CHARS = 512
"""How far into held text the first key (and tool name) is looked for, to release early."""
_FENCE = "```"
_FENCE_LANGS = ("", "json", "tool_call")
"""Info strings of a fenced call (compared case-insensitively)."""
_TAGS = (("<tool_call>", "</tool_call>"), ("[tool_call]", "[/tool_call]"), ("<tools>", "</tools>"))
"""`<tools>` is how Qwen2.5's chat template wraps the tool specs; the 1.5B model wraps its
own calls in it too."""
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})
_FENCE_LANG = re.compile(r"[A-Za-z0-9_-]*")
_SPACE = re.compile(r"\s*")
_JSON_DECODER = json.JSONDecoder(strict=False)
"""Line breaks inside a string are taken as written: a small model copies a file's lines
into old_text with real line breaks, not `\\n`."""
_NAMED = re.compile(r"`?([A-Za-z_]\w*)`?[ \t]*:?[ \t]*")
"""A tool's name written before its arguments (`search_text {`, `` `read_file`( ``)."""
_HEAD_KEY = re.compile(
    r"""\s*(?:```[A-Za-z0-9_-]*\s*|<tool_call>\s*|\[tool_call\]\s*|<tools>\s*)?(?:\[\s*)?"""
    r"""\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*"""
)
_HEAD_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def parse_text_tool_calls(text: str, offered: Collection[str]) -> list[MergedToolCall] | None:
    """The tool calls a reply's whole `text` spells out, or None when it is not only calls.

    Accepted, after stripping: one ```` ```json ```` (or ```` ``` ````, ```` ```tool_call ````)
    fence, bare JSON, or `<tool_call>…</tool_call>` / `[tool_call]…[/tool_call]` /
    `<tools>…</tools>` blocks (the
    last closing fence or tag may be missing: some servers stop on it). Inside: one or more
    JSON values, each a call `{"name": …, "arguments": …}` or a non-empty list of calls.
    A call has a `name` among `offered`, exactly one of `arguments` / `parameters` (an
    object, or a JSON string holding one), and else only `type` ("function") and `id` (ignored:
    the loop gives the call its own id). Anything else, such as prose around the JSON, is None.
    """
    calls = _walk_text_calls(text.strip(), offered, complete=True)
    if calls is None and "\\" in text:
        # code copied into a JSON string with its own backslashes (`\$`, `\d`): JSON knows
        # no such escape; read each as the backslash and the character it is in the code
        fixed = _INVALID_ESCAPE.sub(r"\1\\\\", text.strip())
        calls = _walk_text_calls(fixed, offered, complete=True) if fixed != text.strip() else None
    return calls


_INVALID_ESCAPE = re.compile(r'(?<!\\)((?:\\\\)*)\\(?=[^"\\/bfnrtu])')


def _walk_text_calls(
    text: str, offered: Collection[str], *, complete: bool
) -> list[MergedToolCall] | None:
    """`parse_text_tool_calls`, or with `complete=False` for a prefix of a reply's text.

    A prefix that could still grow into calls gives the calls complete so far (maybe []);
    one that cannot gives None. A prefix must end outside any JSON value (the gate only asks
    at such points), so a JSON value in it that does not parse is wrong, not unfinished.
    """
    text = text.lstrip()
    if not text:
        return None if complete else []
    if text.startswith(_FENCE):
        lang_end = _match_end(_FENCE_LANG, text, len(_FENCE))
        lang = text[len(_FENCE) : lang_end].lower()
        if lang_end == len(text) and not complete:
            return [] if any(known.startswith(lang) for known in _FENCE_LANGS) else None
        if lang not in _FENCE_LANGS:
            return None
        return _walk_call_values(text, lang_end, offered, _FENCE, None, complete=complete)
    for opener, closer in _TAGS:
        if text.startswith(opener):
            return _walk_call_values(text, len(opener), offered, closer, opener, complete=complete)
        if not complete and opener.startswith(text):
            return []
    if not complete and _FENCE.startswith(text):
        return []
    if text[0] in "{[":
        return _walk_call_values(text, 0, offered, None, None, complete=complete)
    return _named_call(text, offered, complete=complete)


def _named_call(
    text: str, offered: Collection[str], *, complete: bool
) -> list[MergedToolCall] | None:
    """`search_text {'pattern': 'x'}` or `read_file(path="a.py")`: the whole reply is a call
    written as the tool's name and its arguments (a JSON object, a Python dict, or keyword
    arguments), as Qwen2.5-Coder-1.5B writes them on bench/real_tasks's questions."""
    match = _NAMED.match(text)
    if not complete:
        if match is None:
            return [] if not text.strip("`") else None
        name = match.group(1)
        if match.end() < len(text):
            return [] if name in offered and text[match.end()] in "{(" else None
        if name in offered:
            return []
        unfinished = text[-1].isalnum() or text[-1] == "_"  # the name may still grow
        return [] if unfinished and any(tool.startswith(name) for tool in offered) else None
    if match is None or match.group(1) not in offered:
        return None
    arguments = _named_arguments(text[match.end() :].rstrip().rstrip("`;").rstrip())
    if arguments is None:
        return None
    return [MergedToolCall(id="", name=match.group(1), arguments=arguments)]


def _named_arguments(written: str) -> str | None:
    """The JSON of the arguments after a tool's name: `{...}` or `(key=value, ...)` /
    `({...})` with literal values only (nothing is evaluated); None when they are not."""
    value: Any = None
    if written.startswith("{"):
        try:
            value = json.loads(written)
        except ValueError:
            value = _literal(written)
    elif written.startswith("(") and written.endswith(")"):
        try:
            call = ast.parse(f"call{written}", mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return None
        if not isinstance(call, ast.Call):
            return None
        if len(call.args) == 1 and not call.keywords:
            value = _literal(call.args[0])
        elif not call.args and all(kw.arg is not None for kw in call.keywords):
            pairs = {kw.arg: _literal(kw.value, _MISSING) for kw in call.keywords}
            value = None if _MISSING in pairs.values() else pairs
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        return None
    try:
        return json.dumps(value)
    except (TypeError, ValueError):  # a set or bytes literal: no JSON arguments
        return None


_MISSING = object()


def _literal(node: str | ast.expr, failed: Any = None) -> Any:
    try:
        return ast.literal_eval(node)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return failed


def _walk_call_values(
    text: str,
    pos: int,
    offered: Collection[str],
    closer: str | None,
    reopener: str | None,
    *,
    complete: bool,
) -> list[MergedToolCall] | None:
    """The calls in `text[pos:]`: JSON values up to `closer` (then, with `reopener`, more
    blocks), or to the end for bare JSON."""
    calls: list[MergedToolCall] = []
    end = len(text)
    while True:
        pos = _match_end(_SPACE, text, pos)
        if pos == end:
            return calls if calls or not complete else None
        if closer is not None and text.startswith(closer, pos):
            pos = _match_end(_SPACE, text, pos + len(closer))
            if pos == end:
                return calls if calls or not complete else None
            if reopener is not None and text.startswith(reopener, pos):
                pos += len(reopener)
                continue
            if not complete and reopener is not None and reopener.startswith(text[pos:]):
                return calls
            return None
        if not complete and closer is not None and closer.startswith(text[pos:]):
            return calls
        if text[pos] not in "{[":
            return None
        try:
            value, pos = _JSON_DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return None
        found = _calls_in_value(value, offered)
        if found is None:
            return None
        calls.extend(found)


def _calls_in_value(value: Any, offered: Collection[str]) -> list[MergedToolCall] | None:
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls: list[MergedToolCall] = []
    for item in items:
        if not isinstance(item, dict) or not _CALL_KEYS.issuperset(item):
            return None
        name = item.get("name")
        if not isinstance(name, str) or name not in offered:
            return None
        if item.get("type", "function") != "function":
            return None
        if ("arguments" in item) == ("parameters" in item):
            return None
        raw = item["arguments"] if "arguments" in item else item["parameters"]
        arguments: dict[str, Any] | None
        if isinstance(raw, dict):
            arguments = raw
        elif isinstance(raw, str):
            arguments, _ = parse_tool_arguments(raw)
        else:
            arguments = None
        if arguments is None:
            return None
        calls.append(MergedToolCall(id="", name=name, arguments=json.dumps(arguments)))
    return calls


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    match = pattern.match(text, pos)
    return match.end() if match is not None else pos


def _json_string(raw: str) -> str | None:
    """The value of a JSON string literal's inside (`raw` without its quotes)."""
    try:
        value = json.loads(f'"{raw}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


class TextCallGate:
    """Holds back a reply's text while it may be a tool call written as text.

    `feed` returns the text to show now: all of it once the text cannot be a call (it does
    not start like one, something else follows the JSON, it names a tool that was not
    offered, or it grew past `limit`), "" while it still may be one. Text that does not
    start like a call (after whitespace) is released at its first visible character and
    from then on passes straight through. At the end of the reply `held` is what is left to
    show or to run as calls.

    It scans new text once, tracking JSON nesting, and asks `_walk_text_calls` about the
    prefix only where the text is outside any JSON value and not blank (envelope marks,
    the end of a value, prose), so a held call costs linear time.
    """

    def __init__(self, offered: Collection[str], limit: int = _TEXT_CALL_HOLD_CHARS) -> None:
        self._offered = offered
        self._limit = limit
        self._pieces: list[str] = []
        self._size = 0
        self._holding = True
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._head_pending = True

    @property
    def holding(self) -> bool:
        """Still undecided: nothing held has been shown."""
        return self._holding

    @property
    def held(self) -> str:
        return "".join(self._pieces)

    def feed(self, text: str) -> str:
        if not self._holding:
            return text
        start = self._size
        self._pieces.append(text)
        self._size += len(text)
        if self._size > self._limit or not self._still_possible(text, start):
            return self.release()
        return ""

    def release(self) -> str:
        """Stop holding: the held text, to be shown."""
        held = self.held
        self._holding = False
        self._pieces.clear()
        return held

    def _still_possible(self, text: str, start: int) -> bool:
        check_at = -1
        for offset, char in enumerate(text):
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
            elif self._depth > 0 and char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
            elif char in "}]" and self._depth > 0:
                self._depth -= 1
                if self._depth == 0:
                    check_at = start + offset + 1
            elif self._depth == 0 and not char.isspace():
                check_at = start + offset + 1
        if check_at < 0 and not self._head_pending:
            return True
        held = self.held
        if (
            check_at >= 0
            and _walk_text_calls(held[:check_at], self._offered, complete=False) is None
        ):
            return False
        return self._head_possible(held)

    def _head_possible(self, held: str) -> bool:
        """Early answer from the first key of the first object (and the tool name after
        `"name":`), before the JSON is complete."""
        if not self._head_pending:
            return True
        if len(held) > _HEAD_CHECK_CHARS:
            self._head_pending = False
            return True
        key = _HEAD_KEY.match(held)
        if key is None:
            return True
        key_name = _json_string(key.group(1))
        if key_name not in _CALL_KEYS:
            self._head_pending = False
            return False
        if key_name != "name":
            self._head_pending = False
            return True
        rest = held[key.end() :]
        if not rest:
            return True
        self._head_pending = False
        value = _HEAD_STRING.match(rest)
        if value is None:
            # an unfinished name keeps the check pending; anything else is no call
            self._head_pending = rest.startswith('"')
            return rest.startswith('"')
        return _json_string(value.group(1)) in self._offered


_NEXT_KEY = re.compile(r'\s*,\s*"(?:[^"\\\n]|\\.)*"\s*:')
_NEXT_ITEM = re.compile(r"\s*,\s*\S")
_CLOSER = re.compile(r"\s*([}\]])")


def decode_loose_object(text: str, start: int) -> Any | None:
    """The JSON object at `start` when only its strings are malformed: a small model copies
    code with `"` in it into a string unescaped (`"new_text": "def f():\\n    \"\"\"Doc.\"\"\"…"`).
    A `"` inside a string value ends it only where a `}`, a `]` or `, "key":` follows (a key
    ends at its `"`); any other is taken as part of the text. A string may not run past its
    line. None when that does not give one whole object."""
    if not text.startswith("{", start):
        return None
    out: list[str] = []
    stack: list[str] = []
    in_string = is_key = False
    expect_key = False
    at = start
    while at < len(text):
        char = text[at]
        if in_string:
            if char == "\\" and at + 1 < len(text):
                out.append(text[at : at + 2])
                at += 2
                continue
            if char == "\n":
                return None  # a string running past its line: its end was missed, not found
            if char == '"' and not (is_key or _ends_value(text, at + 1, stack[-1])):
                out.append('\\"')
            else:
                in_string = char != '"'
                out.append(char)
            at += 1
            continue
        if char == '"':
            in_string, is_key = True, expect_key
        elif char in "{[":
            stack.append(char)
            expect_key = char == "{"
        elif char in "}]":
            if not stack or "{[".index(stack.pop()) != "}]".index(char):
                return None
            if not stack:
                try:
                    return json.loads("".join(out) + char, strict=False)
                except (ValueError, RecursionError):
                    return None
        elif char == ",":
            expect_key = stack[-1] == "{" if stack else False
        elif char == ":":
            expect_key = False
        out.append(char)
        at += 1
    return None


def _ends_value(text: str, at: int, container: str) -> bool:
    """Whether a `"` just before `at`, inside a string value in `container`, ends it."""
    closer = _CLOSER.match(text, at)
    if closer is not None:
        return closer.group(1) == ("}" if container == "{" else "]")
    follows = _NEXT_KEY if container == "{" else _NEXT_ITEM
    return follows.match(text, at) is not None

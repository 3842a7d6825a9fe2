"""The one shape a guided reply may take, as a JSON schema the model server constrains the
reply to (`response_format`), and its parse: an answer with citations, edits, or a reason
to escalate. Every string and list is bounded, so no runaway reply fits the shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ANSWER_MAX = 1500
QUOTE_MAX = 300
TEXT_MAX = 4000
REASON_MAX = 500
MAX_CITATIONS = 6
MAX_EDITS = 6
MAX_PROPOSED = 4
WINDOW_LINES = 6
"""An edit's old text is at most this many whole lines when the lines shown constrain it."""
WINDOW_MAX = 1200


class Citation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    path: str = Field(max_length=400)
    line: int = 0
    quote: str = Field(max_length=QUOTE_MAX * 2)


class Edit(BaseModel):
    model_config = ConfigDict(extra="ignore")

    path: str = Field(max_length=400)
    old_text: str = Field(max_length=TEXT_MAX * 2)
    new_text: str = Field(max_length=TEXT_MAX * 2)
    replace_all: bool = False
    """Every occurrence (a plan's rename step); the guided schema never offers it."""


class GuidedReply(BaseModel):
    """What the model filled in."""

    model_config = ConfigDict(extra="ignore")

    intent: Literal["question", "change"] | None = None
    """What the model read the request as, before it replies (checked against `kind`)."""
    kind: Literal["answer", "edits", "escalate"]
    answer: str = Field(default="", max_length=ANSWER_MAX * 2)
    citations: list[Citation] = Field(default_factory=list, max_length=MAX_CITATIONS * 2)
    proposed: list[str] = Field(default_factory=list, max_length=MAX_PROPOSED * 2)
    """Paths the answer names that are not in the workspace yet, declared so."""
    edits: list[Edit] = Field(default_factory=list, max_length=MAX_EDITS * 2)
    reason: str = Field(default="", max_length=REASON_MAX * 2)


def citations_of(items: Sequence[Mapping[str, Any]]) -> list[Citation]:
    """The items that have a citation's shape (a path and a quote), as citations; the rest
    are left out (an agent's `finish` is not constrained by a schema)."""
    kept: list[Citation] = []
    for item in items:
        try:
            kept.append(Citation.model_validate(item))
        except ValidationError:
            continue
    return kept


def _string(limit: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit}


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "intent": {"type": "string", "enum": ["question", "change"]},
        "kind": {"type": "string", "enum": ["answer", "edits", "escalate"]},
        "answer": _string(ANSWER_MAX),
        "citations": {
            "type": "array",
            "maxItems": MAX_CITATIONS,
            "items": {
                "type": "object",
                "properties": {"path": _string(200), "quote": _string(QUOTE_MAX)},
                "required": ["path", "quote"],
                "additionalProperties": False,
            },
        },
        "proposed": {"type": "array", "maxItems": MAX_PROPOSED, "items": _string(200)},
        "edits": {
            "type": "array",
            "maxItems": MAX_EDITS,
            "items": {
                "type": "object",
                "properties": {
                    "path": _string(200),
                    "old_text": _string(TEXT_MAX),
                    "new_text": _string(TEXT_MAX),
                },
                "required": ["path", "old_text", "new_text"],
                "additionalProperties": False,
            },
        },
        "reason": _string(REASON_MAX),
    },
    "required": ["intent", "kind", "answer", "citations", "proposed", "edits", "reason"],
    "additionalProperties": False,
}


KINDS: dict[str, list[str]] = {"question": ["answer", "escalate"], "change": ["edits", "escalate"]}
"""The kinds of reply each intent allows."""
FIELDS: dict[str, list[str]] = {
    "question": ["intent", "kind", "answer", "citations", "proposed", "reason"],
    "change": ["intent", "kind", "answer", "edits", "reason"],
}
"""The fields a reply of a known intent has: a constrained model writes every field of its
schema, one token at a time, so the other kind's lists go. The intent stays, fixed to the
one given: without it, Qwen2.5-Coder-1.5B named `dce.go` for "which file defines the UUID
type?" (uuid.go with it), 2 of google/uuid's 6 questions wrong against none."""
INTENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"intent": {"type": "string", "enum": list(KINDS)}},
    "required": ["intent"],
    "additionalProperties": False,
}
SIZES = ("one place", "one file", "many")
"""How much a change reaches, as the model reads the request alone; "many" (several files,
new files, a design) is Claude-sized."""
SIZE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"size": {"type": "string", "enum": list(SIZES)}},
    "required": ["size"],
    "additionalProperties": False,
}


def response_format(
    intent: str | None = None,
    edit_paths: Sequence[str] = (),
    shown: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The `response_format` of a guided request (OpenAI's json_schema form); with the
    request's `intent`, only the kinds of reply that intent allows; with `edit_paths`, an
    edit's path is one of them (the files whose lines were shown, the new files the
    request names: an old text can only be copied from a file shown), and its `old_text`
    one of the texts `shown` of that path (`old_texts`: up to `WINDOW_LINES` whole lines
    shown together; a path with none shown, any text). A 1.5B model wrote
    `function parseCommand(args, options = {}) {` as the old text of a file whose line
    reads `function parseCommand(args) {`; constrained, it cannot. With intent "question"
    and `shown`, a citation's quote is one whole line shown of its file."""
    schema = SCHEMA
    if intent in KINDS:
        properties = {name: SCHEMA["properties"][name] for name in FIELDS[intent]}
        properties["intent"] = {"type": "string", "enum": [intent]}
        properties["kind"] = {"type": "string", "enum": KINDS[intent]}
        if intent == "change" and edit_paths:
            edits = SCHEMA["properties"]["edits"]
            items = [_edit_item(path, (shown or {}).get(path)) for path in sorted(set(edit_paths))]
            item = items[0] if len(items) == 1 else {"anyOf": items}
            properties["edits"] = {**edits, "items": item}
        quoted = [
            _citation_item(path, lines)
            for path, texts in sorted((shown or {}).items())
            if intent == "question"
            and (lines := [t for t in texts if "\n" not in t and len(t) <= QUOTE_MAX])
        ]
        if quoted:
            item = quoted[0] if len(quoted) == 1 else {"anyOf": quoted}
            properties["citations"] = {**SCHEMA["properties"]["citations"], "items": item}
        schema = {**SCHEMA, "properties": properties, "required": FIELDS[intent]}
    return {
        "type": "json_schema",
        "json_schema": {"name": "milk_guided_reply", "strict": True, "schema": schema},
    }


def old_texts(chunks: Sequence[Sequence[str]]) -> list[str]:
    """The old texts an edit may copy from `chunks` of consecutive lines: each run of one to
    `WINDOW_LINES` whole lines of a chunk, joined, not blank and not over `WINDOW_MAX`
    characters. One string, not a list of lines: asked for a list, the model wrote the
    same lines again and again to the reply's end."""
    texts: dict[str, None] = {}
    for lines in chunks:
        for first in range(len(lines)):
            for last in range(first + 1, min(len(lines), first + WINDOW_LINES) + 1):
                text = "\n".join(lines[first:last])
                if len(text) > WINDOW_MAX:
                    break
                if text.strip():
                    texts[text] = None
    return sorted(texts)


def _citation_item(path: str, texts: Sequence[str]) -> dict[str, Any]:
    """A citation of `path` whose quote is one of `texts`, whole lines shown of it (humanize's and
    python-slugify's questions came back twice with the answer's own sentence as the
    quote)."""
    item: dict[str, Any] = SCHEMA["properties"]["citations"]["items"]
    properties = {
        **item["properties"],
        "path": {"type": "string", "enum": [path]},
        "quote": {"type": "string", "enum": list(texts)},
    }
    return {**item, "properties": properties}


def _edit_item(path: str, texts: Sequence[str] | None) -> dict[str, Any]:
    """An edit of `path`, its old text one of `texts` when there are any."""
    item: dict[str, Any] = SCHEMA["properties"]["edits"]["items"]
    properties = {**item["properties"], "path": {"type": "string", "enum": [path]}}
    if texts:
        properties["old_text"] = {"type": "string", "enum": list(texts)}
    return {**item, "properties": properties}


WORDS_MAX = 6
"""Words a `words` reply gives at most, each `WORD_CHARS` long at most."""
WORD_CHARS = 40
WORDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"words": {"type": "array", "items": _string(WORD_CHARS), "maxItems": WORDS_MAX}},
    "required": ["words"],
    "additionalProperties": False,
}


def words_format() -> dict[str, Any]:
    """The `response_format` of the request that asks what to search the code for."""
    return _schema_format("milk_words", WORDS_SCHEMA)


def parse_words(text: str) -> list[str]:
    """The words of a reply in `WORDS_SCHEMA`'s shape (bounded as it bounds them); none for
    anything else."""
    try:
        data = json.loads(object_text(text))
    except json.JSONDecodeError:
        return []
    words = data.get("words") if isinstance(data, dict) else None
    if not isinstance(words, list):
        return []
    return [w.strip()[:WORD_CHARS] for w in words[:WORDS_MAX] if isinstance(w, str) and w.strip()]


def intent_format() -> dict[str, Any]:
    """The `response_format` of the request that asks what the user's message asks for."""
    return _schema_format("milk_intent", INTENT_SCHEMA)


def size_format() -> dict[str, Any]:
    """The `response_format` of the request that asks how much a change reaches."""
    return _schema_format("milk_size", SIZE_SCHEMA)


def _schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def parse_intent(text: str) -> str | None:
    """The intent of a reply in `INTENT_SCHEMA`'s shape; None for anything else."""
    return _field(text, "intent", tuple(KINDS))


def parse_size(text: str) -> str | None:
    """The size of a reply in `SIZE_SCHEMA`'s shape; None for anything else."""
    return _field(text, "size", SIZES)


def _field(text: str, name: str, values: Sequence[str]) -> str | None:
    try:
        data = json.loads(object_text(text))
    except json.JSONDecodeError:
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if value in values else None


class NotTheShape(ValueError):
    """The reply is not the guided shape; the message says what is wrong, for the model."""


def parse_reply(text: str) -> GuidedReply:
    """The reply as a `GuidedReply`. Tolerates what constrained decoding does not prevent
    everywhere: a ```json fence around it, text before or after the object, and an answer
    field that holds the whole object again."""
    raw = object_text(text)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotTheShape(f"the reply is not a JSON object ({exc.msg} at {exc.pos})") from None
    if not isinstance(data, dict):
        raise NotTheShape("the reply is JSON, but not an object")
    if isinstance(data.get("answer"), dict):  # the whole object again, inside the answer
        data = {**data, **data["answer"]}
    try:
        reply = GuidedReply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the object"
        raise NotTheShape(f"the reply's {where}: {first['msg']}") from None
    inner = reply.answer.strip()
    if inner.startswith("{") and inner.endswith("}"):
        try:
            return parse_reply(inner)
        except NotTheShape:
            return reply
    return reply


def object_text(text: str) -> str:
    """The outermost `{…}` of a reply (fences and surrounding words left out)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return text.strip()
    return text[start : end + 1]

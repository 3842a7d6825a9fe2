"""`milk_lsp.acp.prompt` (prompt blocks → milk's message) and the -32602 errors of
`milk_lsp.acp.errors` that name fields as the params spell them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PromptRequest,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)
from pydantic import ValidationError

from milk_lsp.acp.errors import validation_error
from milk_lsp.acp.prompt import PromptError, read_prompt

WS = Path("/ws")


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


def test_text_and_mentions_make_the_message() -> None:
    embedded = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri="file:///ws/src/a.py", text="A = 1\n")
    )
    link = ResourceContentBlock(type="resource_link", name="b.py", uri="file:///ws/b.py")
    prompt = read_prompt([text("compare"), embedded, text("and"), link, text(" please")], WS)
    assert prompt.text == "compare @src/a.py and @b.py please"
    [(item, path)] = prompt.embedded
    assert (item.uri, item.text, path) == ("file:///ws/src/a.py", "A = 1\n", Path("/ws/src/a.py"))
    [linked] = prompt.links
    assert (linked.field, linked.uri, linked.path) == (
        "prompt[3].uri",
        "file:///ws/b.py",
        Path("/ws/b.py"),
    )
    assert prompt.command is None


def test_a_mention_outside_the_workspace_or_not_a_file() -> None:
    link = ResourceContentBlock(type="resource_link", name="doc", uri="https://example.org/doc")
    outside = ResourceContentBlock(type="resource_link", name="x", uri="file:///etc/hosts")
    prompt = read_prompt([text("read"), link, outside], WS)
    assert prompt.text == "read @doc @/etc/hosts"
    assert [link.path for link in prompt.links] == [None, Path("/etc/hosts")]


@pytest.mark.parametrize(
    ("typed", "command", "argument"),
    [
        ("/escalate fix the parser", "escalate", "fix the parser"),
        ("/escalate", "escalate", ""),
        ("  /local   and now?  ", "local", "and now?"),
        ("/context\nwhy not", "context", "why not"),
        ("/new", "new", ""),
        ("/unknown thing", None, ""),
        ("please /escalate", None, ""),
        ("/escalated", None, ""),
    ],
)
def test_commands(typed: str, command: str | None, argument: str) -> None:
    prompt = read_prompt([text(typed)], WS)
    assert (prompt.command, prompt.argument) == (command, argument)


@pytest.mark.parametrize(
    ("blocks", "field", "words"),
    [
        (
            [text("look"), ImageContentBlock(type="image", data="AA==", mime_type="image/png")],
            "prompt[1]",
            "image content is not supported",
        ),
        (
            [
                text("see"),
                EmbeddedResourceContentBlock(
                    type="resource", resource=BlobResourceContents(uri="file:///ws/x", blob="AA==")
                ),
            ],
            "prompt[1].resource",
            "binary (blob) resources are not supported",
        ),
        ([], "prompt", "the prompt has no text"),
        ([text("   ")], "prompt", "the prompt has no text"),
        (
            [ResourceContentBlock(type="resource_link", name="x", uri="file:///ws/a\x00b")],
            "prompt[0].uri",
            "NUL",
        ),
    ],
)
def test_what_milk_cannot_take_names_the_block(blocks: list, field: str, words: str) -> None:
    with pytest.raises(PromptError) as refused:
        read_prompt(blocks, WS)
    assert refused.value.field == field
    assert words in refused.value.message


def pydantic_error_of(raw: Any) -> Any:
    with pytest.raises(ValidationError) as caught:
        PromptRequest.model_validate(raw)
    return caught.value


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"sessionId": "s", "prompt": [{"type": "text"}]},
            "invalid params: prompt[0].text: Field required",
        ),
        ({"prompt": []}, "invalid params: sessionId: Field required"),
        ({"sessionId": "s"}, "invalid params: prompt: Field required"),
        (
            {
                "sessionId": "s",
                "prompt": [{"type": "text", "text": "a"}, {"type": "text", "text": 5}],
            },
            "invalid params: prompt[1].text: Input should be a valid string",
        ),
    ],
)
def test_validation_errors_name_the_wire_field(raw: Any, message: str) -> None:
    error = validation_error(pydantic_error_of(raw), raw)
    assert error is not None
    assert (error.code, str(error)) == (-32602, message)
    assert error.data["errors"][0]["field"] in message


def test_an_unknown_block_type_names_the_block() -> None:
    raw = {"sessionId": "s", "prompt": [{"type": "video", "data": "x"}]}
    error = validation_error(pydantic_error_of(raw), raw)
    assert error is not None and str(error).startswith("invalid params: prompt[0]: ")
    assert "'video'" in str(error)


def test_many_problems_are_counted_not_all_shown() -> None:
    raw = {"sessionId": 1, "prompt": [{"type": "text"}] * 9}
    error = validation_error(pydantic_error_of(raw), raw)
    assert error is not None and str(error).endswith("and 5 more")
    assert len(error.data["errors"]) == 10


def test_other_value_errors_are_not_validation_errors() -> None:
    assert validation_error(ValueError("plain"), {}) is None

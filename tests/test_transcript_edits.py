"""Planning the edits that keep an open transcript in step (pure), and the atomic write."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from milk_lsp.lsp.positions import position_at, units
from milk_lsp.lsp.standard.edits import Edit, Plan, plan_edits
from milk_lsp.lsp.standard.sync import write_atomic
from milk_lsp.lsp.standard.transcript import MARKER, join_document


def apply(text: str, edits: list[Edit]) -> str:
    """What an editor does with the edits (UTF-16 positions, all against the old text)."""

    def offset(line: int, character: int) -> int:
        lines = text.split("\n")
        base = sum(len(item) + 1 for item in lines[:line])
        count = 0
        for index, char in enumerate(lines[line] if line < len(lines) else ""):
            if count >= character:
                return base + index
            count += 2 if ord(char) > 0xFFFF else 1
        return base + len(lines[line]) if line < len(lines) else len(text)

    spans = sorted(((offset(*e.start), offset(*e.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@pytest.mark.parametrize(
    ("text", "encoding", "length"),
    [("abc", "utf-16", 3), ("a😀", "utf-16", 3), ("a😀", "utf-8", 5), ("a😀", "utf-32", 2)],
)
def test_units(text: str, encoding: str, length: int) -> None:
    assert units(text, encoding) == length  # type: ignore[arg-type]


def test_position_at() -> None:
    assert position_at("ab\n😀x\ny", 5, "utf-16") == (1, 3)
    assert position_at("ab\n", 3, "utf-16") == (1, 0)


def test_in_step_the_new_text_is_inserted_at_the_end_of_the_body() -> None:
    confirmed = "# h\n\nanswer 😀 so"
    client = join_document(confirmed, "my question")
    body = confirmed + " far\n\nmore"
    plan = plan_edits(client, confirmed, body, None, "utf-16")
    assert plan.kind == "edit"
    [edit] = plan.edits
    assert edit.start == edit.end == (2, 12)
    assert apply(client, plan.edits) == join_document(body, "my question")


def test_nothing_new_is_no_edit() -> None:
    client = join_document("body", "q")
    assert plan_edits(client, "body", "body", None, "utf-16") == Plan("none")


def test_a_taken_question_is_cleared_with_the_insertion() -> None:
    client = join_document("body", "what is x?\n")
    plan = plan_edits(client, "body", "body more", "what is x?\n", "utf-16")
    assert apply(client, plan.edits) == join_document("body more", "")
    # the user typed on meanwhile: only what was taken goes
    client = join_document("body", "what is x?\nand y")
    plan = plan_edits(client, "body", "body", "what is x?\n", "utf-16")
    assert apply(client, plan.edits) == join_document("body", "and y")
    # the user rewrote it: theirs stays
    client = join_document("body", "something else")
    assert plan_edits(client, "body", "body", "what is x?", "utf-16") == Plan("none")


def test_a_client_behind_milks_last_edit_is_waited_for() -> None:
    client = join_document("body", "")
    assert plan_edits(client, "body and more", "body and more!", None, "utf-16") == Plan("wait")
    # ...unless it was waited for long enough: then the whole text is replaced
    forced = plan_edits(client, "body and more", "body and more!", None, "utf-16", force=True)
    assert forced.kind == "replace"
    assert apply(client, forced.edits) == join_document("body and more!", "")


def test_a_user_edit_in_the_body_replaces_the_document_keeping_the_question() -> None:
    client = join_document("# h\n\nansWER", "half a question")
    plan = plan_edits(client, "# h\n\nanswer", "# h\n\nanswer, more", None, "utf-16")
    assert plan.kind == "replace"
    [edit] = plan.edits
    assert edit.start == (0, 0)
    assert apply(client, plan.edits) == join_document("# h\n\nanswer, more", "half a question")


def test_a_deleted_marker_keeps_the_users_words() -> None:
    client = "# h\n\nanswer\n\nmy question"
    plan = plan_edits(client, "# h\n\nanswer", "# h\n\nanswer", None, "utf-16")
    assert plan.kind == "replace"
    assert apply(client, plan.edits) == join_document("# h\n\nanswer", "my question")
    # a client whose text has nothing of milk's: nothing to keep
    plan = plan_edits("unrelated", None, "# h", None, "utf-16")
    assert apply("unrelated", plan.edits) == join_document("# h", "")


def test_unknown_state_replaces() -> None:
    client = join_document("old", "q")
    plan = plan_edits(client, None, "new body", None, "utf-16")
    assert apply(client, plan.edits) == join_document("new body", "q")
    assert MARKER in apply(client, plan.edits)


def test_crlf_clients_are_compared_by_their_lines() -> None:
    client = join_document("a\nb", "q").replace("\n", "\r\n")
    plan = plan_edits(client, "a\nb", "a\nb c", None, "utf-16")
    assert plan.kind == "edit"
    assert plan.edits[0].start == (1, 1)


def test_write_atomic(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "t.md"
    write_atomic(target, "one")
    write_atomic(target, "two\n", 0o444)
    assert target.read_text() == "two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    write_atomic(target, "three")  # a read-only file is still replaced (a rename)
    assert target.read_text() == "three"
    assert [p.name for p in target.parent.iterdir()] == ["t.md"]

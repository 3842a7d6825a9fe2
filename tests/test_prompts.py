"""The local agent's conversation: history within its budget, attachments, system prompt."""

from __future__ import annotations

import pytest

from milk_lsp.prompts.local import (
    ATTACHMENT_CAP_CHARS,
    HISTORY_BUDGET_CHARS,
    claude_notes,
    demotion_summary,
    history_messages,
    local_system_prompt,
    session_notes,
    user_message,
    with_session_notes,
)
from milk_lsp.prompts.tags import NEED, PERCEPT, TagInterceptor, close_tag, open_tag
from milk_lsp.sessions.model import Agent, Role, TurnRecord
from milk_lsp.wire import ContextItem, Position, Range

WORKSPACE = "/home/me/project"
NONCE = "a1b2c3"


def user(text: str, turn: str = "t") -> TurnRecord:
    return TurnRecord(turn, Role.USER, Agent.LOCAL, text)


def local(text: str, turn: str = "t") -> TurnRecord:
    return TurnRecord(turn, Role.ASSISTANT, Agent.LOCAL, text)


def claude(text: str, turn: str = "t") -> TurnRecord:
    return TurnRecord(turn, Role.ASSISTANT, Agent.CLAUDE, text)


# ---- history -------------------------------------------------------------------------------


def test_short_history_is_kept_whole_and_in_order() -> None:
    records = [user("q1"), local("a1"), user("q2"), claude("a2")]
    assert history_messages(records) == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "[Claude Code answered]\na2"},
    ]


def test_history_keeps_the_newest_messages_within_the_budget() -> None:
    size = HISTORY_BUDGET_CHARS // 5
    records = []
    for n in range(12):
        records.append(user(f"q{n}:" + "u" * size))
        records.append(local(f"a{n}:" + "a" * size))
    messages = history_messages(records)
    assert sum(len(m["content"]) for m in messages) <= HISTORY_BUDGET_CHARS
    assert messages, "something fits"
    # The newest record is the last message, and the kept messages are a contiguous tail.
    assert messages[-1]["content"].startswith("a11:")
    kept = [m["content"].split(":")[0] for m in messages]
    every = [label for n in range(12) for label in (f"q{n}", f"a{n}")]
    assert kept == every[len(every) - len(kept) :]
    assert len(kept) >= 3


def test_history_never_starts_with_an_assistant_message() -> None:
    size = HISTORY_BUDGET_CHARS // 3 - 5
    # Only the last three fit: assistant, user, assistant; the leading assistant must go.
    records = [user("q" * 100), local("x" * size), user("y" * size), local("z" * size)]
    messages = history_messages(records)
    assert messages[0]["role"] == "user"
    assert [m["role"] for m in messages] == ["user", "assistant"]


@pytest.mark.parametrize(
    "records",
    [
        [local("hello")],
        [claude("hello"), local("again")],
        [local("a"), user("q"), local("b")],
    ],
)
def test_history_drops_leading_assistant_messages(records: list[TurnRecord]) -> None:
    messages = history_messages(records)
    assert not messages or messages[0]["role"] == "user"


def test_history_skips_records_without_text() -> None:
    records = [user("q"), local(""), user("q2"), claude("")]
    assert history_messages(records) == [
        {"role": "user", "content": "q"},
        {"role": "user", "content": "q2"},
    ]


def test_a_single_oversized_message_does_not_break_the_budget() -> None:
    records = [user("q"), local("a"), user("huge" * HISTORY_BUDGET_CHARS)]
    messages = history_messages(records)
    assert sum(len(m["content"]) for m in messages) <= HISTORY_BUDGET_CHARS


def test_history_of_nothing_is_empty() -> None:
    assert history_messages([]) == []


# ---- attachments ---------------------------------------------------------------------------


def rng(start: int, end: int) -> Range:
    return Range(start=Position(line=start, character=0), end=Position(line=end, character=4))


def test_no_attachments_is_the_text_itself() -> None:
    assert user_message("just this", [], WORKSPACE) == "just this"


def test_attachment_renders_with_its_workspace_path_and_line_range() -> None:
    item = ContextItem(
        uri=f"file://{WORKSPACE}/src/app.py", range=rng(9, 19), text="def f():\n    pass"
    )
    text = user_message("explain this", [item], WORKSPACE)
    assert text == (
        "explain this\n\nAttached src/app.py (lines 10-20):\n```\ndef f():\n    pass\n```"
    )


def test_whole_file_attachment_has_no_line_range() -> None:
    item = ContextItem(uri=f"file://{WORKSPACE}/README.md", text="hello")
    text = user_message("look", [item], WORKSPACE)
    assert "Attached README.md:\n```\nhello\n```" in text
    assert "lines" not in text


def test_attachment_outside_the_workspace_keeps_its_absolute_path() -> None:
    item = ContextItem(uri="file:///etc/hosts", text="127.0.0.1 localhost")
    assert "Attached /etc/hosts:" in user_message("x", [item], WORKSPACE)


def test_attachment_uri_is_decoded() -> None:
    item = ContextItem(uri=f"file://{WORKSPACE}/my%20file.py", range=rng(0, 0), text="x")
    assert "Attached my file.py (lines 1-1):" in user_message("x", [item], WORKSPACE)


def test_attachment_without_text_is_named() -> None:
    item = ContextItem(uri=f"file://{WORKSPACE}/gone.py")
    assert user_message("x", [item], WORKSPACE) == "x\n\nAttached file: gone.py"


def test_non_file_uri_is_shown_as_is() -> None:
    item = ContextItem(uri="untitled:Untitled-1", text="scratch")
    assert "Attached untitled:Untitled-1:" in user_message("x", [item], WORKSPACE)


def test_attachments_keep_their_order() -> None:
    items = [
        ContextItem(uri=f"file://{WORKSPACE}/a.py", text="A"),
        ContextItem(uri=f"file://{WORKSPACE}/b.py", range=rng(2, 3), text="B"),
    ]
    text = user_message("both", items, WORKSPACE)
    assert text.index("Attached a.py") < text.index("Attached b.py (lines 3-4)")


def test_a_huge_attachment_is_cut() -> None:
    item = ContextItem(uri=f"file://{WORKSPACE}/big.txt", text="z" * (ATTACHMENT_CAP_CHARS * 2))
    text = user_message("x", [item], WORKSPACE)
    assert len(text) < ATTACHMENT_CAP_CHARS + 200
    assert "… (cut)" in text


def test_an_attachment_with_a_fence_inside_stays_in_one_block() -> None:
    body = "# Readme\n```sh\nmake test\n```\nafter"
    text = user_message(
        "x", [ContextItem(uri=f"file://{WORKSPACE}/README.md", text=body)], WORKSPACE
    )
    lines = text.splitlines()
    fence = lines[lines.index("Attached README.md:") + 1]
    # A fence longer than any backtick run in the body (CommonMark) keeps the body whole.
    assert set(fence) == {"`"} and len(fence) > 3, text


# ---- system prompt -------------------------------------------------------------------------


def test_session_notes_carry_the_nonce_tag_instructions_with_memory_tags() -> None:
    text = session_notes(NONCE, "", [], memory_tags=True)
    for kind in (NEED, PERCEPT):
        assert open_tag(kind, NONCE) in text
        assert close_tag(kind, NONCE) in text
    assert WORKSPACE not in text


def test_without_memory_tags_the_local_model_gets_no_tag_instructions() -> None:
    """Small models echo them (local.memoryTags is off by default)."""
    assert session_notes(NONCE, "", []) == ""
    text = session_notes(NONCE, "make the parser fast", [])
    assert NONCE not in text and "milk:need" not in text


def test_the_prompt_tags_are_the_ones_the_interceptor_acts_on() -> None:
    """A model that copies the instructed tag shape has it stripped and collected."""
    text = session_notes(NONCE, "", [], memory_tags=True)
    assert f"<milk:need:{NONCE}>…</milk:need:{NONCE}>" in text
    interceptor = TagInterceptor(NONCE)
    shown = (
        interceptor.feed(f"ok<milk:need:{NONCE}>ship it</milk:need:{NONCE}>") + interceptor.flush()
    )
    assert shown == "ok" and interceptor.needs == ["ship it"]


def test_session_notes_carry_the_need_and_percepts() -> None:
    text = session_notes(NONCE, "make the parser fast", ["tests use pytest", "tabs, not spaces"])
    assert "the current goal is: make the parser fast; " in text
    assert "known facts: tests use pytest; tabs, not spaces)" in text


def test_escalation_hint_only_when_offered() -> None:
    offered = local_system_prompt(offer_escalation=True)
    withheld = local_system_prompt(offer_escalation=False)
    assert "escalate_to_claude" in offered
    assert "escalate_to_claude" not in withheld
    assert "Claude" not in withheld, "route local: nothing hints at escalating"


def test_system_prompt_is_the_same_bytes_for_every_session_and_workspace() -> None:
    """Nothing per session or workspace (nonce, need, facts, the folder) may sit in the
    cached prefix: one model server's cache serves every workspace's first turn."""
    assert WORKSPACE not in local_system_prompt(True)
    assert local_system_prompt(True) == local_system_prompt(True)
    assert NONCE not in local_system_prompt(True)
    assert "milk:need" not in local_system_prompt(True)
    assert session_notes("one", "", [], memory_tags=True) != session_notes(
        "two", "", [], memory_tags=True
    )


def test_the_request_comes_last_after_the_notes() -> None:
    message = with_session_notes("rename X", session_notes(NONCE, "the goal", []))
    assert message.startswith("(milk notes, not from the user:")
    assert message.endswith(")\n\nrename X")
    assert with_session_notes("rename X", session_notes(NONCE, "", [])) == "rename X"


def test_small_model_rules_are_in_the_system_prompt() -> None:
    text = local_system_prompt(True)
    assert "never describe it" in text
    assert "copy old_text exactly from the file's text" in text
    assert "One step at a time" in text


def test_back_from_claude_the_local_turn_gets_claudes_brick_once() -> None:
    brick = 'User: rename x\n[Tool: Edit] {"file_path": "a.py"}\nAssistant (claude): Done.\n'
    assert demotion_summary(Agent.CLAUDE, brick) == brick
    assert demotion_summary(Agent.LOCAL, brick) == ""  # the local agent ran the last turn
    notes = claude_notes(brick)
    assert notes.startswith("(milk notes, not from the user: Claude Code worked on this session")
    assert brick.rstrip() in notes and notes.endswith(")\n\n")
    assert claude_notes("") == "" and claude_notes("  \n") == ""

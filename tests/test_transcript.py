"""The transcript's Markdown: the document's parts, fences, and the rendering of updates and
of stored turns."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from milk_lsp.lsp.standard.transcript import (
    MARKER,
    TranscriptRenderer,
    chars_words,
    header,
    join_document,
    question_line,
    rendered_turns,
    session_of_path,
    split_document,
    transcript_path,
)
from milk_lsp.sessions.model import Agent, RecordStatus, Role, ToolCallRecord, TurnRecord
from milk_lsp.text import fence_for

NOW = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)


def renderer(tail: str = "") -> TranscriptRenderer:
    return TranscriptRenderer(tail, "/ws", now=lambda: NOW)


def updates(*items: dict) -> list[dict]:
    return [{"sessionId": "s", "turnId": "t1", "seq": i + 1, **u} for i, u in enumerate(items)]


def render_all(items: list[dict], question: str = "why?") -> str:
    r = renderer("# head\n")
    return "".join(r.render(u, question if u["kind"] == "turn_started" else None) for u in items)


# ---- the document -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(join_document("body", "q"), ("body", "q"), id="join-round-trip"),
        pytest.param(join_document("body\n", ""), ("body\n", ""), id="empty-question"),
        pytest.param(
            join_document(f"answer quoting\n{MARKER}\nin text", "mine"),
            (f"answer quoting\n{MARKER}\nin text", "mine"),
            id="last-marker-wins",
        ),
        pytest.param(f"body\r\n\r\n{MARKER}\r\nq\r\n", ("body", "q\n"), id="crlf"),
        pytest.param("no marker at all", None, id="marker-gone"),
        pytest.param(f"body\n\n{MARKER} trailing", None, id="marker-not-alone"),
    ],
)
def test_split_document(text: str, expected: tuple[str, str] | None) -> None:
    assert split_document(text) == expected


def test_question_line_is_below_the_marker() -> None:
    body = "# h\n\nsome\nlines"
    lines = join_document(body, "").split("\n")
    assert lines[question_line(body) - 1] == MARKER
    assert lines[question_line(body)] == ""


@pytest.mark.parametrize(
    ("text", "fence"),
    [("plain", "```"), ("a ``` b", "````"), ("`````", "``````"), ("``", "```")],
)
def test_fence_is_longer_than_any_backtick_run(text: str, fence: str) -> None:
    assert fence_for(text) == fence


@pytest.mark.parametrize(
    ("count", "words"), [(800, "800-char"), (2500, "2.5k-char"), (3000, "3k-char")]
)
def test_chars_words(count: int, words: str) -> None:
    assert chars_words(count) == words


def test_paths_and_turn_ids() -> None:
    path = transcript_path(Path("/data/milk/sessions.sqlite3"), "abc-1")
    assert path == Path("/data/milk/transcripts/abc-1.md")
    assert session_of_path(path) == "abc-1"
    assert session_of_path(Path("/repo/notes/abc.md")) is None
    assert transcript_path(Path("/d/s.sqlite3"), "../x").name == ".._x.md"
    body = "<!-- turn a -->\n## You\n\n<!-- turn b -->\n"
    assert rendered_turns(body) == {"a", "b"}


def test_header_names_the_session() -> None:
    text = header("  Fix   the parser ", "s1", "/ws")
    assert text.startswith("# milk: Fix the parser\n")
    assert "`s1`" in text and "`/ws`" in text
    assert header("", "s1", "/ws").startswith("# milk: new session\n")


# ---- live updates -------------------------------------------------------------------------


def test_a_local_turn_with_a_tool_call() -> None:
    text = render_all(
        updates(
            {"kind": "turn_started", "agent": "local", "route": "auto", "reason": "default"},
            {"kind": "text", "agent": "local", "delta": "Let me "},
            {"kind": "text", "agent": "local", "delta": "look."},
            {
                "kind": "tool_call",
                "agent": "local",
                "toolCallId": "c1",
                "name": "read_file",
                "input": {"path": "a.py"},
                "status": "running",
            },
            {
                "kind": "tool_result",
                "agent": "local",
                "toolCallId": "c1",
                "output": "x = 1\n",
                "isError": False,
            },
            {
                "kind": "tool_call",
                "agent": "local",
                "toolCallId": "c1",
                "name": "read_file",
                "input": {"path": "a.py"},
                "status": "completed",
            },
            {"kind": "text", "agent": "local", "delta": "It sets x."},
            {"kind": "usage", "agent": "local", "inputTokens": 1234, "outputTokens": 56},
            {"kind": "turn_ended", "agent": "local", "stopReason": "end_turn"},
        )
    )
    local_now = NOW.astimezone().strftime("%Y-%m-%d %H:%M")
    assert text == (
        "\n<!-- turn t1 -->\n"
        f"## You · {local_now}\n\nwhy?\n"
        "\n### Local model\n\nLet me look."
        '\n\n**Tool call: read_file**\n\n```json\n{\n  "path": "a.py"\n}\n```\n'
        "\nResult:\n\n```\nx = 1\n```\n"
        "\nIt sets x."
        "\n\n*Done.* (local model: 1,234 tokens in, 56 out)\n"
    )


def test_an_escalation_a_failure_and_notes() -> None:
    text = render_all(
        updates(
            {"kind": "turn_started", "agent": "local", "route": "auto", "reason": "default"},
            {"kind": "text", "agent": "local", "delta": "Too hard."},
            {
                "kind": "escalated",
                "by": "agent",
                "reason": "needs  the whole repo",
                "mode": "first",
                "contextChars": 2500,
            },
            {"kind": "notice", "severity": "warning", "message": "slow disk"},
            {"kind": "text", "agent": "claude", "delta": "\n\n"},  # the parts' break
            {"kind": "text", "agent": "claude", "delta": "Claude here."},
            {
                "kind": "usage",
                "agent": "claude",
                "inputTokens": 10,
                "outputTokens": 2,
                "costUsd": 0.0123,
            },
            {"kind": "notice", "severity": "error", "message": "claude exited; run claude login"},
            {"kind": "turn_ended", "agent": "claude", "stopReason": "error"},
        )
    )
    assert (
        "> **Sent to Claude** with a 2.5k-char summary, the local model asked: needs the whole "
        "repo. (a new Claude conversation)\n" in text
    )
    assert "> Warning: slow disk\n" in text
    assert "### Claude\n\nClaude here." in text  # the heading is the break
    assert text.endswith(
        "**Failed:** claude exited; run claude login (claude: 10 tokens in, 2 out, $0.0123)\n"
    )
    assert "**Error:**" not in text  # said once, with the end


def test_an_error_notice_followed_by_more_is_shown_where_it_happened() -> None:
    text = render_all(
        updates(
            {"kind": "turn_started", "agent": "local", "route": "auto", "reason": "default"},
            {"kind": "notice", "severity": "error", "message": "first problem"},
            {"kind": "text", "agent": "local", "delta": "went on"},
            {"kind": "turn_ended", "agent": "local", "stopReason": "cancelled"},
        )
    )
    assert "> **Error:** first problem\n\n### Local model\n\nwent on\n\n*Cancelled.*\n" in text


def test_claude_calls_show_once_their_input_is_known_and_denials_say_so() -> None:
    r = renderer()
    pending = r.render(
        {
            "kind": "tool_call",
            "agent": "claude",
            "toolCallId": "c",
            "name": "Bash",
            "input": {},
            "status": "pending",
        }
    )
    assert pending == ""
    running = r.render(
        {
            "kind": "tool_call",
            "agent": "claude",
            "toolCallId": "c",
            "name": "Bash",
            "input": {"command": "rm -rf build"},
            "status": "running",
        }
    )
    assert "**Tool call: Bash**" in running and '"command": "rm -rf build"' in running
    denied = r.render(
        {
            "kind": "tool_call",
            "agent": "claude",
            "toolCallId": "c",
            "name": "Bash",
            "input": {"command": "rm -rf build"},
            "status": "denied",
        }
    )
    assert denied == "\n*Denied.*\n"


def test_an_unclosed_fence_in_the_answer_is_closed_before_milks_next_block() -> None:
    r = renderer()
    text = r.render({"kind": "text", "agent": "local", "delta": "Here:\n````py\nx = 1\n"})
    text += r.render({"kind": "turn_ended", "agent": "local", "stopReason": "end_turn"})
    assert text.endswith("x = 1\n\n````\n\n*Done.*\n")
    closed = renderer()
    text = closed.render({"kind": "text", "agent": "local", "delta": "```\ncode\n```\nafter"})
    text += closed.render({"kind": "turn_ended", "agent": "local", "stopReason": "end_turn"})
    assert text.endswith("after\n\n*Done.*\n")


def test_changed_files_and_a_cut_output() -> None:
    r = renderer()
    text = r.render(
        {
            "kind": "changes",
            "changes": [
                {"uri": "file:///ws/a.py", "kind": "modified", "added": 2, "removed": 1},
                {"uri": "file:///elsewhere/b.py", "kind": "created", "added": 5, "removed": 0},
            ],
        }
    )
    assert "**Changed files:** `a.py` (+2 -1), `/elsewhere/b.py` (new, +5 -0)." in text
    assert "`milk.undo`" in text
    cut = r.render(
        {
            "kind": "tool_result",
            "agent": "local",
            "toolCallId": "z",
            "output": "y" * 2000,
            "isError": True,
        }
    )
    assert "Error (the first 2,000 characters):" in cut


# ---- stored turns -----------------------------------------------------------------------------


def test_stored_turns_render_like_live_ones() -> None:
    records = [
        TurnRecord("t1", Role.USER, Agent.LOCAL, "read it", created_at=NOW),
        TurnRecord(
            "t1",
            Role.ASSISTANT,
            Agent.LOCAL,
            "Reading.",
            tool_calls=[
                ToolCallRecord("c1", "read_file", {"path": "a.py"}, "x = 1", status="completed"),
                ToolCallRecord("c2", "run_command", {"command": "ls"}, None, status="denied"),
            ],
            created_at=NOW,
        ),
        TurnRecord(
            "t2", Role.USER, Agent.LOCAL, "crashed one", status=RecordStatus.ERROR, created_at=NOW
        ),
    ]
    text = renderer("# h\n").render_records(records)
    assert text.count("<!-- turn t1 -->") == 1 and text.count("<!-- turn t2 -->") == 1
    assert "read it\n\n### Local model\n\nReading." in text
    assert "**Tool call: read_file**" in text and "Result:\n\n```\nx = 1\n```" in text
    assert "**Tool call: run_command**" in text and "*Denied.*" in text
    assert "*Done.*" in text
    assert text.endswith("crashed one\n\n**Failed** (or cut off).\n")


def test_checked_sources_are_markdown_links_shown_once() -> None:
    text = render_all(
        updates(
            {"kind": "turn_started", "agent": "local", "route": "auto", "reason": "default"},
            {"kind": "text", "agent": "local", "delta": "It is 256."},
            {
                "kind": "text",
                "agent": "local",
                "delta": "\n\nSources (checked by milk):\n- p.py:1",
            },
            {
                "kind": "citations",
                "agent": "local",
                "citations": [
                    {
                        "path": "p.py",
                        "uri": "file:///ws/p.py",
                        "line": 1,
                        "endLine": 1,
                        "quote": "N = 256",
                    }
                ],
            },
            {"kind": "turn_ended", "agent": "local", "stopReason": "end_turn"},
        )
    )
    assert "It is 256.\n\nSources (checked by milk):\n- [p.py:1](file:///ws/p.py#L1)\n" in text
    assert text.count("Sources (checked by milk)") == 1

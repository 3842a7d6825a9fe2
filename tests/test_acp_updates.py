"""`milk_lsp.acp.updates`: milk's updates and stored turns as ACP session updates.

Every update produced is also pushed through the SDK's `SessionNotification` model and back,
so what milk sends is valid ACP, not only what these asserts look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import SessionNotification

from milk_lsp.acp.bridge import dump
from milk_lsp.acp.updates import UpdateMapper, plan_of, replay, tool_view
from milk_lsp.sessions.model import Agent, RecordStatus, Role, ToolCallRecord, TurnRecord

WS = Path("/ws")


def valid(update: Any) -> dict[str, Any]:
    wire = dump(SessionNotification(session_id="s", update=update))
    SessionNotification.model_validate(wire)
    return wire["update"]


def payload(kind: str, seq: int = 1, **fields: Any) -> dict[str, Any]:
    return {"sessionId": "m", "turnId": "t", "seq": seq, "kind": kind, **fields}


def test_local_edit_has_a_title_a_location_and_a_diff() -> None:
    view = tool_view(
        "edit_file", {"path": "src/a.py", "old_text": "x = 1", "new_text": "x = 2"}, WS
    )
    assert (view.title, view.kind) == ("Edit src/a.py", "edit")
    assert [loc.path for loc in view.locations] == ["/ws/src/a.py"]
    [diff] = view.diffs
    assert (diff.path, diff.old_text, diff.new_text) == ("/ws/src/a.py", "x = 1", "x = 2")
    create = tool_view("edit_file", {"path": "new.py", "old_text": "", "new_text": "hi"}, WS)
    assert create.title == "Create new.py" and create.diffs[0].old_text is None


@pytest.mark.parametrize(
    ("name", "tool_input", "title", "kind"),
    [
        ("read_file", {"path": "a.py", "start_line": 10}, "Read a.py", "read"),
        ("list_directory", {}, "List .", "search"),
        ("search_text", {"pattern": "greet", "path": "src"}, "Search greet in src", "search"),
        ("run_command", {"command": "make test"}, "Run `make test`", "execute"),
        (
            "escalate_to_claude",
            {"reason": "too hard"},
            "Escalate to Claude: too hard",
            "switch_mode",
        ),
        (
            "hand_off_to_claude",
            {"signal": "empty_reply"},
            "Hand this turn to Claude?",
            "switch_mode",
        ),
        ("Read", {"file_path": "/ws/a.py", "offset": 3}, "Read /ws/a.py", "read"),
        ("Bash", {"command": "ls", "description": "List files"}, "List files", "execute"),
        ("Grep", {"pattern": "x"}, "Search x", "search"),
        ("WebFetch", {"url": "https://example.org"}, "WebFetch https://example.org", "fetch"),
        ("TodoWrite", {"todos": []}, "Update the plan", "think"),
        ("mcp__thing", {}, "mcp__thing", "other"),
        # Claude's calls are seen before their input: no empty fragments in the title
        ("Bash", {}, "Run a command", "execute"),
        ("Grep", {}, "Search", "search"),
        ("WebFetch", {}, "WebFetch", "fetch"),
        ("Task", {}, "Task", "think"),
        ("escalate_to_claude", {}, "Escalate to Claude", "switch_mode"),
    ],
)
def test_tool_titles_and_kinds(name: str, tool_input: dict, title: str, kind: str) -> None:
    view = tool_view(name, tool_input, WS)
    assert (view.title, view.kind) == (title, kind)


def test_read_locations_are_zero_based_lines() -> None:
    assert tool_view("read_file", {"path": "a.py", "start_line": 10}, WS).locations[0].line == 9
    assert tool_view("Read", {"file_path": "/x/a.py", "offset": 1}, WS).locations[0].line == 0


def test_claude_edits_become_diffs() -> None:
    multi = tool_view(
        "MultiEdit",
        {"file_path": "/ws/a.py", "edits": [{"old_string": "a", "new_string": "b"}, "junk"]},
        WS,
    )
    assert [(d.old_text, d.new_text) for d in multi.diffs] == [("a", "b")]
    write = tool_view("Write", {"file_path": "/ws/b.py", "content": "new"}, WS)
    assert [(d.path, d.old_text, d.new_text) for d in write.diffs] == [("/ws/b.py", None, "new")]


def test_odd_inputs_do_not_break_the_view() -> None:
    for junk in ({"path": 5}, {"path": "a\x00b"}, {"file_path": None}, {}):
        view = tool_view("edit_file", junk, WS)
        assert view.locations == [] and view.diffs == []


def test_text_thinking_and_meta() -> None:
    mapper = UpdateMapper(WS)
    [text] = mapper.updates(payload("text", agent="claude", delta="hi"))
    assert valid(text) == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "hi"},
        "_meta": {"milk": {"kind": "text", "turnId": "t", "seq": 1, "agent": "claude"}},
    }
    [thinking] = mapper.updates(payload("thinking", agent="local", delta="hmm"))
    assert valid(thinking)["sessionUpdate"] == "agent_thought_chunk"
    assert mapper.updates(payload("turn_started", agent="local")) == []
    assert mapper.updates(payload("turn_ended", agent="local", stopReason="end_turn")) == []


def test_a_call_starts_once_then_updates() -> None:
    mapper = UpdateMapper(WS)
    edit = {"path": "a.py", "old_text": "1", "new_text": "2"}
    call = payload("tool_call", agent="local", toolCallId="c1", name="edit_file", input=edit)
    [start] = mapper.updates({**call, "status": "running"})
    wire = valid(start)
    assert wire["sessionUpdate"] == "tool_call" and wire["status"] == "pending"
    assert wire["content"][0]["type"] == "diff" and wire["rawInput"] == edit
    [denied] = mapper.updates({**call, "status": "denied"})
    wire = valid(denied)
    assert wire == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "failed",
        "_meta": {
            "milk": {
                "kind": "tool_call",
                "turnId": "t",
                "seq": 1,
                "agent": "local",
                "status": "denied",
            }
        },
    }
    [result] = mapper.updates(
        payload("tool_result", toolCallId="c1", output="The user denied it.", isError=True)
    )
    wire = valid(result)
    assert [c["type"] for c in wire["content"]] == ["diff", "content"]
    assert wire["rawOutput"] == {"output": "The user denied it.", "isError": True}


def statuses(mapper: UpdateMapper, call: dict[str, Any], *steps: str) -> list[str | None]:
    """The ACP status each milk status of the call turns into (None: no update at all,
    "-": an update that leaves the status alone); "ask" is the permission question."""
    out: list[str | None] = []
    for step in steps:
        if step == "ask":
            mapper.asking(call["toolCallId"])
            continue
        updates = mapper.updates({**call, "status": step})
        out.append(None if not updates else (valid(updates[0]).get("status") or "-"))
    return out


def test_a_call_that_asks_starts_pending_and_never_goes_back() -> None:
    local = payload("tool_call", agent="local", toolCallId="c", name="run_command")
    local["input"] = {"command": "make"}
    # the local loop reports the call running, then asks, then runs it
    steps = ("running", "pending", "ask", "running", "completed")
    assert statuses(UpdateMapper(WS), local, *steps) == [
        "pending",
        None,
        "in_progress",
        "completed",
    ]
    # the same call without a question (allowed for the session): pending, then done
    assert statuses(UpdateMapper(WS), local, "running", "completed") == ["pending", "completed"]
    assert statuses(UpdateMapper(WS), local, "running", "denied", "running") == [
        "pending",
        "failed",
        None,
    ]


def test_claude_calls_start_pending_with_a_title_once_the_input_is_known() -> None:
    mapper = UpdateMapper(WS)
    call = payload("tool_call", agent="claude", toolCallId="b", name="Bash")
    [start] = mapper.updates({**call, "input": {}, "status": "pending"})
    assert (valid(start)["status"], valid(start)["title"]) == ("pending", "Run a command")
    full = {**call, "input": {"command": "touch x", "description": "Create x"}}
    [titled] = mapper.updates({**full, "status": "running"})  # input complete, not asked yet
    assert valid(titled)["title"] == "Create x" and "status" not in valid(titled)
    assert statuses(mapper, full, "pending", "ask", "running", "completed") == [
        None,
        "in_progress",
        "completed",
    ]


def test_a_cancelled_turn_closes_its_open_calls() -> None:
    mapper = UpdateMapper(WS)
    for call_id, status in (("open", "running"), ("done", "completed")):
        mapper.updates(
            payload("tool_call", toolCallId=call_id, name="read_file", input={}, status=status)
        )
    other = payload("tool_call", toolCallId="other", name="read_file", input={}, status="running")
    mapper.updates({**other, "turnId": "t2"})
    assert mapper.updates(payload("turn_ended", stopReason="end_turn")) == []
    [closed] = mapper.updates(payload("turn_ended", stopReason="cancelled"))
    wire = valid(closed)
    assert (wire["toolCallId"], wire["status"]) == ("open", "failed")
    assert wire["_meta"]["milk"]["status"] == "cancelled"
    assert mapper.updates(payload("turn_ended", stopReason="cancelled")) == []  # once


def test_claude_input_that_arrives_later_updates_the_call() -> None:
    mapper = UpdateMapper(WS)
    call = payload("tool_call", agent="claude", toolCallId="t1", name="Edit")
    [start] = mapper.updates({**call, "input": {}, "status": "pending"})
    assert valid(start)["title"] == "Edit"
    full = {"file_path": "/ws/a.py", "old_string": "a", "new_string": "b"}
    [update] = mapper.updates({**call, "input": full, "status": "running"})
    wire = valid(update)
    assert wire["title"] == "Edit /ws/a.py" and wire["content"][0]["newText"] == "b"
    assert mapper.view("t1") is not None and mapper.knows("t1")


def test_todo_write_is_also_a_plan() -> None:
    todos = {
        "todos": [
            {"content": "read", "status": "completed", "activeForm": "reading"},
            {"content": "write", "status": "in_progress"},
            {"content": "odd", "status": "someday"},
            {"nope": 1},
        ]
    }
    mapper = UpdateMapper(WS)
    call = payload("tool_call", agent="claude", toolCallId="p", name="TodoWrite", input=todos)
    assert [u.session_update for u in mapper.updates({**call, "status": "running"})] == [
        "tool_call"
    ]
    result = payload("tool_result", toolCallId="p", output="Todos updated", isError=False)
    out = mapper.updates(result)
    plan = valid(out[-1])
    assert plan["sessionUpdate"] == "plan"
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [
        ("read", "completed"),
        ("write", "in_progress"),
        ("odd", "pending"),
    ]
    assert plan_of({"todos": "x"}) is None
    # the bundled CLI has no TodoWrite: a call it refused changes no plan
    refused = UpdateMapper(WS)
    refused.updates({**call, "status": "running"})
    out = refused.updates({**result, "output": "No such tool available", "isError": True})
    assert [u.session_update for u in out] == ["tool_call_update"]


def test_usage_is_sent_with_a_known_window_only() -> None:
    mapper = UpdateMapper(WS, {"local": 8192, "claude": 200_000})
    [local] = mapper.updates(payload("usage", agent="local", inputTokens=100, outputTokens=7))
    assert (valid(local)["used"], valid(local)["size"]) == (107, 8192)
    assert "cost" not in valid(local)
    fields = {"inputTokens": 3, "outputTokens": 5, "cacheReadTokens": 10, "costUsd": 0.25}
    mapper.updates(payload("usage", agent="claude", **fields))
    [second] = mapper.updates(payload("usage", agent="claude", **fields))
    wire = valid(second)
    assert (wire["used"], wire["size"]) == (18, 200_000)
    assert wire["cost"] == {"amount": 0.5, "currency": "USD"}
    assert wire["_meta"]["milk"]["costUsd"] == 0.25
    # Claude's last report is the cost alone: no `used: 0` that would empty the meter
    assert mapper.updates(payload("usage", agent="claude", inputTokens=0, costUsd=0.1)) == []
    # a window milk is not told (a model server of its own): no "0 of 0"
    unknown = UpdateMapper(WS)
    assert unknown.updates(payload("usage", agent="local", inputTokens=100)) == []


def test_hand_offs_show_a_marker_and_notices_a_thought() -> None:
    mapper = UpdateMapper(WS)
    [marker] = mapper.updates(payload("escalated", by="fallback", reason="empty_reply: nothing"))
    assert "Claude takes over" in marker.content.text and "empty_reply" in marker.content.text
    assert valid(marker)["_meta"]["milk"]["by"] == "fallback"
    assert mapper.updates(payload("escalated", by="user", reason="user asked")) == []
    [notice] = mapper.updates(payload("notice", severity="warning", message="retrying"))
    assert valid(notice)["sessionUpdate"] == "agent_thought_chunk"
    assert mapper.updates(payload("notice", severity="error", message="failed")) == []
    # milk's note of the goal is not shown: it echoes the prompt, and as a thought it
    # would gather the model's reasoning under it
    assert mapper.updates(payload("need", currentNeed="ship it")) == []


def test_replay_of_stored_turns() -> None:
    call = ToolCallRecord("c1", "read_file", {"path": "a.py"}, output="text", is_error=False)
    failed = ToolCallRecord("c2", "run_command", {"command": "x"}, output="boom", is_error=True)
    records = [
        TurnRecord("t1", Role.USER, Agent.LOCAL, "question"),
        TurnRecord("t1", Role.ASSISTANT, Agent.LOCAL, "answer", [call, failed]),
        TurnRecord("t2", Role.USER, Agent.CLAUDE, "more", status=RecordStatus.CANCELLED),
        TurnRecord("t2", Role.ASSISTANT, Agent.CLAUDE, "", status=RecordStatus.CANCELLED),
    ]
    out = [valid(u) for u in replay(records, WS)]
    assert [u["sessionUpdate"] for u in out] == [
        "user_message_chunk",
        "tool_call",
        "tool_call",
        "agent_message_chunk",
        "user_message_chunk",
    ]
    assert (out[1]["status"], out[2]["status"]) == ("completed", "failed")
    assert out[1]["rawOutput"] == {"output": "text", "isError": False}
    assert out[3]["_meta"]["milk"] == {
        "turnId": "t1",
        "agent": "local",
        "status": "ok",
        "replay": True,
    }
    assert out[4]["_meta"]["milk"]["status"] == "cancelled"


def test_replayed_calls_end_as_they_ended_live() -> None:
    cancelled = ToolCallRecord("c1", "run_command", {"command": "sleep 9"}, status="cancelled")
    denied = ToolCallRecord("c2", "edit_file", {"path": "a"}, output="denied", status="denied")
    older = ToolCallRecord("c3", "read_file", {"path": "a"})  # no status, never returned
    records = [
        TurnRecord(
            "t", Role.ASSISTANT, Agent.LOCAL, "", [cancelled, denied], RecordStatus.CANCELLED
        ),
        TurnRecord("u", Role.ASSISTANT, Agent.LOCAL, "", [older], status=RecordStatus.ERROR),
    ]
    out = [valid(u) for u in replay(records, WS)]
    assert [(u["status"], u["_meta"]["milk"]["toolStatus"]) for u in out] == [
        ("failed", "cancelled"),
        ("failed", "denied"),
        ("failed", "failed"),
    ]


def test_replay_keeps_text_and_calls_in_the_order_they_were_shown() -> None:
    first = ToolCallRecord("c1", "read_file", {"path": "a.py"}, output="x", text_offset=12)
    second = ToolCallRecord("c2", "read_file", {"path": "b.py"}, output="y", text_offset=12)
    record = TurnRecord("t1", Role.ASSISTANT, Agent.LOCAL, "Let me look.\n\nDone.", [first, second])
    out = [valid(u) for u in replay([record], WS)]
    assert [u["sessionUpdate"] for u in out] == [
        "agent_message_chunk",
        "tool_call",
        "tool_call",
        "agent_message_chunk",
    ]
    assert out[0]["content"]["text"] == "Let me look."
    assert out[3]["content"]["text"] == "\n\nDone."


def test_an_advisor_plan_is_acps_plan_with_who_did_each_step() -> None:
    """Issue 32: the whole checklist each time; a failed step (ACP has no such status) is
    completed with "(failed)"; who does or did a step follows its text."""
    mapper = UpdateMapper(WS)
    steps = [
        {"content": "In `a.py` set X", "status": "completed", "agent": "local"},
        {"content": "In `b.py` set Y", "status": "failed", "agent": "claude"},
        {"content": "In `c.py` set Z", "status": "in_progress", "agent": "local"},
        {"content": "Run the tests", "status": "pending"},
        {"content": "In `d.py` set W", "status": "completed", "agent": "local", "byMilk": True},
    ]
    [plan] = mapper.updates(payload("plan", steps=steps))
    wire = valid(plan)
    assert wire["sessionUpdate"] == "plan"
    assert [(e["content"], e["status"]) for e in wire["entries"]] == [
        ("In `a.py` set X [local model]", "completed"),
        ("In `b.py` set Y (failed) [Claude]", "completed"),
        ("In `c.py` set Z [local model]", "in_progress"),
        ("Run the tests", "pending"),
        ("In `d.py` set W [milk]", "completed"),  # milk applied it itself (issue 39)
    ]


def test_another_doors_turn_shows_its_message_first() -> None:
    """Issue 31: a turn another door runs on this session comes with the user's message."""
    mapper = UpdateMapper(WS)
    started = payload(
        "turn_started",
        agent="local",
        elsewhere=True,
        userText="Was macht parse()?",
        door="terminal",
    )
    [user] = mapper.updates(started)
    wire = valid(user)
    assert wire["sessionUpdate"] == "user_message_chunk"
    assert wire["content"] == {"type": "text", "text": "Was macht parse()?"}
    assert wire["_meta"]["milk"]["door"] == "terminal" and wire["_meta"]["milk"]["elsewhere"]


def test_checked_sources_are_resource_links_not_text_twice() -> None:
    mapper = UpdateMapper(WS)
    block = "\n\nSources (checked by milk):\n- src/a.py:3"
    assert mapper.updates(payload("text", agent="local", delta=block)) == []
    cited = {
        "path": "src/a.py",
        "uri": "file:///ws/src/a.py",
        "line": 3,
        "endLine": 4,
        "quote": "x = 1",
    }
    shown = [
        valid(u)
        for u in mapper.updates(
            payload(
                "citations",
                agent="local",
                citations=[cited],
                proposed=[{"path": "b.py", "uri": "file:///ws/b.py"}],
            )
        )
    ]
    assert shown[0]["content"]["text"].strip() == "Sources (checked by milk):"
    link = shown[1]["content"]
    assert link["type"] == "resource_link"
    assert (link["name"], link["uri"]) == ("src/a.py:3-4", "file:///ws/src/a.py#L3")
    assert link["description"] == "x = 1"
    assert "b.py (not in the workspace yet)" in shown[2]["content"]["text"]

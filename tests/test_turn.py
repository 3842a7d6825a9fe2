"""`Turn` (the update stream and answers of one running turn) and `TurnHost` (its
permission questions), against a tiny fake of the editor bridge."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from milk_lsp import wire
from milk_lsp.agents.base import (
    NoticeEvent,
    PermissionOption,
    PermissionRequest,
    PermissionTimedOut,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    UsageEvent,
)
from milk_lsp.engine.agent_host import TurnHost
from milk_lsp.engine.turn import TOOL_OUTPUT_WIRE_CHARS, AgentPart, Turn, UsageTotals
from milk_lsp.sessions.model import Agent, Role

NONCE = "n0nce42"
NEED_OPEN, NEED_CLOSE = f"<milk:need:{NONCE}>", f"</milk:need:{NONCE}>"
PERCEPT_OPEN, PERCEPT_CLOSE = f"<milk:percept:{NONCE}>", f"</milk:percept:{NONCE}>"


class FakeBridge:
    """Records what the turn sends; answers permission questions from a list."""

    def __init__(self, answers: list[Any] | None = None, *, hang: bool = False) -> None:
        self.updates: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.answers = list(answers or [])
        self.hang = hang
        self.hang_cancelled = False
        self.progress: list[tuple[object | None, str]] = []
        self.documents: dict[Path, str] = {}
        self.edits: list[tuple[Path, str]] = []

    def send_update(self, payload: dict[str, Any]) -> None:
        self.updates.append(payload)

    async def ask_permission(self, params: dict[str, Any]) -> Any:
        self.asked.append(params)
        if self.hang:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.hang_cancelled = True
                raise
        return self.answers.pop(0) if self.answers else "deny"

    async def read_document(self, path: Path) -> str | None:
        return self.open_document_text(path)

    def open_document_text(self, path: Path) -> str | None:
        return self.documents.get(path)

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        self.edits.append((path, new_text))
        return True

    async def progress_begin(self, title: str) -> object | None:
        return "token"

    def progress_report(self, token: object | None, message: str) -> None:
        self.progress.append((token, message))

    def progress_end(self, token: object | None, message: str) -> None:
        self.progress.append((token, message))

    def kinds(self) -> list[str]:
        return [u["kind"] for u in self.updates]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["kind"] == kind]

    def shown_text(self) -> str:
        return "".join(u["delta"] for u in self.of_kind("text"))


def make_turn(bridge: FakeBridge | None = None) -> tuple[Turn, FakeBridge, list[str]]:
    bridge = bridge or FakeBridge()
    needs: list[str] = []
    turn = Turn("session-1", "turn-1", NONCE, bridge, on_need=needs.append)
    return turn, bridge, needs


def feed(turn: Turn, *chunks: str) -> None:
    for chunk in chunks:
        turn.apply(TextDelta(chunk))


# ---- numbering -----------------------------------------------------------------------------


def test_updates_are_numbered_from_one_without_gaps() -> None:
    turn, bridge, _ = make_turn()
    turn.update("turn_started", agent="local", route="auto", reason="default")
    turn.start_part(Agent.LOCAL)
    turn.apply(ThinkingDelta("hmm"))
    turn.apply(ThinkingDelta(""))  # nothing to say: no update
    feed(turn, "Hello ", "world")
    turn.apply(ToolCallEvent("c1", "read_file", {"path": "a"}, ToolStatus.RUNNING))
    turn.apply(ToolResultEvent("c1", "contents", False))
    turn.apply(UsageEvent(input_tokens=3, output_tokens=4))
    turn.apply(NoticeEvent("info", "fyi"))
    turn.flush_text()
    turn.update("turn_ended", agent="local", stopReason="end_turn")
    assert [u["seq"] for u in bridge.updates] == list(range(1, len(bridge.updates) + 1))
    assert bridge.kinds() == [
        "turn_started",
        "thinking",
        "text",
        "text",
        "tool_call",
        "tool_result",
        "usage",
        "notice",
        "turn_ended",
    ]
    for update in bridge.updates:
        assert update["sessionId"] == "session-1" and update["turnId"] == "turn-1"
        assert None not in update.values()


def test_usage_update_leaves_out_what_is_unknown() -> None:
    turn, bridge, _ = make_turn()
    turn.start_part(Agent.LOCAL)
    turn.apply(UsageEvent(input_tokens=1, output_tokens=2))
    (usage,) = bridge.of_kind("usage")
    assert usage["inputTokens"] == 1 and usage["outputTokens"] == 2
    assert "cacheReadTokens" not in usage and "costUsd" not in usage
    assert usage["agent"] == "local"


# ---- need tags -----------------------------------------------------------------------------

NEED_TEXT = f"Sure. {NEED_OPEN}fix the parser{NEED_CLOSE}Done `x`."


@pytest.mark.parametrize("cut", range(len(NEED_TEXT) + 1))
def test_need_tag_split_in_two_at_every_offset(cut: int) -> None:
    turn, bridge, needs = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, NEED_TEXT[:cut], NEED_TEXT[cut:])
    turn.flush_text()
    assert needs == ["fix the parser"]
    assert bridge.shown_text() == "Sure. Done `x`."
    assert turn.part.text == "Sure. Done `x`."
    assert all("milk:" not in u["delta"] for u in bridge.of_kind("text"))
    assert [u["seq"] for u in bridge.updates] == list(range(1, len(bridge.updates) + 1))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(NEED_TEXT)), max_size=12))
def test_need_tag_split_into_any_pieces(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(NEED_TEXT)]
    pieces = [NEED_TEXT[a:b] for a, b in itertools.pairwise(points)]
    turn, bridge, needs = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, *pieces)
    turn.flush_text()
    assert needs == ["fix the parser"]
    assert bridge.shown_text() == "Sure. Done `x`."
    assert "" not in [u["delta"] for u in bridge.of_kind("text")], "no empty text updates"


def test_on_need_is_called_once_per_need_as_soon_as_it_closes() -> None:
    turn, _, needs = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, f"a {NEED_OPEN}first", f" goal{NEED_CLOSE} b")
    assert needs == ["first goal"], "called when the tag closes, before the stream ends"
    feed(turn, " more text", " and more")
    feed(turn, f"{NEED_OPEN}second goal{NEED_CLOSE}")
    turn.flush_text()
    turn.flush_text()
    assert needs == ["first goal", "second goal"]


def test_tags_with_another_nonce_are_left_as_text() -> None:
    turn, bridge, needs = make_turn()
    turn.start_part(Agent.LOCAL)
    text = "x <milk:need:other>not ours</milk:need:other> y"
    feed(turn, text)
    turn.flush_text()
    assert needs == []
    assert bridge.shown_text() == text


def test_percepts_are_collected_with_their_agent() -> None:
    turn, bridge, needs = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, f"ok{PERCEPT_OPEN}tests use pytest{PERCEPT_CLOSE}.")
    turn.start_part(Agent.CLAUDE)
    feed(turn, f"{PERCEPT_OPEN}the user prefers tabs", f"{PERCEPT_CLOSE}done")
    turn.flush_text()
    assert turn.percepts == [
        (Agent.LOCAL, "tests use pytest"),
        (Agent.CLAUDE, "the user prefers tabs"),
    ]
    assert needs == []
    assert bridge.shown_text() == "ok.\n\ndone" == turn.text


def test_a_new_part_releases_held_text_into_the_previous_part() -> None:
    turn, bridge, _ = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, "local answer <milk:ne")  # could still become a tag: held back
    assert turn.part.text == "local answer "
    turn.start_part(Agent.CLAUDE)
    feed(turn, "claude answer")
    turn.flush_text()
    local, claude = turn.parts
    assert local.text == "local answer <milk:ne"
    assert claude.text == "claude answer"
    assert [(u["agent"], u["delta"]) for u in bridge.of_kind("text")] == [
        ("local", "local answer "),
        ("local", "<milk:ne"),
        ("claude", "\n\n"),
        ("claude", "claude answer"),
    ]


@pytest.mark.parametrize(
    ("local_text", "claude_text"),
    [("look into it.", "ACC-1 is fixed."), ("", "ACC-1 is fixed."), ("look into it.", "")],
)
def test_the_text_deltas_add_up_to_the_turns_text(local_text: str, claude_text: str) -> None:
    # The paragraph break `Turn.text` puts between the parts is sent too, and only when both
    # parts showed text (issue 21: the live view glued "look into it.ACC-1").
    turn, bridge, _ = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, local_text)
    turn.start_part(Agent.CLAUDE)
    feed(turn, claude_text[:3], claude_text[3:])
    turn.flush_text()
    assert bridge.shown_text() == turn.text
    assert turn.text == "\n\n".join(t for t in (local_text, claude_text) if t)
    breaks = [u for u in bridge.of_kind("text") if u["delta"] == "\n\n"]
    assert len(breaks) == (1 if local_text and claude_text else 0)


# ---- tool calls and results ----------------------------------------------------------------


def test_tool_calls_and_results_are_recorded_on_the_part() -> None:
    turn, bridge, _ = make_turn()
    turn.start_part(Agent.LOCAL)
    turn.apply(ToolCallEvent("c1", "read_file", {"path": "a.py"}, ToolStatus.PENDING))
    turn.apply(ToolCallEvent("c1", "read_file", {}, ToolStatus.RUNNING))  # input kept
    long_output = "x" * (TOOL_OUTPUT_WIRE_CHARS + 500)
    turn.apply(ToolResultEvent("c1", long_output, False))
    turn.apply(ToolCallEvent("c2", "run_command", {"command": "rm -rf /"}, ToolStatus.DENIED))
    turn.apply(ToolCallEvent("c3", "search_text", {"pattern": "x"}, ToolStatus.RUNNING))
    turn.apply(ToolResultEvent("c3", "no such dir", True))

    calls = turn.part.tool_calls
    assert list(calls) == ["c1", "c2", "c3"]
    assert calls["c1"].name == "read_file" and calls["c1"].input == {"path": "a.py"}
    assert calls["c1"].output == long_output, "the record keeps the whole output"
    assert calls["c1"].is_error is False
    assert calls["c2"].is_error is True and calls["c2"].output == "denied by the user"
    assert calls["c3"].output == "no such dir" and calls["c3"].is_error is True

    statuses = [(u["toolCallId"], u["status"]) for u in bridge.of_kind("tool_call")]
    assert statuses == [("c1", "pending"), ("c1", "running"), ("c2", "denied"), ("c3", "running")]
    assert bridge.of_kind("tool_call")[1]["input"] == {"path": "a.py"}
    results = bridge.of_kind("tool_result")
    note = "\n… (cut: 530 more characters)\n"
    assert results[0]["output"] == "x" * (TOOL_OUTPUT_WIRE_CHARS - len(note)) + note, (
        "the wire copy is cut, and says so within the limit"
    )
    assert len(results[0]["output"]) == TOOL_OUTPUT_WIRE_CHARS
    assert results[0]["isError"] is False and results[1]["isError"] is True

    record = turn.part.record("turn-1")
    assert record.role is Role.ASSISTANT and record.agent is Agent.LOCAL
    assert [c.tool_call_id for c in record.tool_calls] == ["c1", "c2", "c3"]


def test_a_result_for_an_unknown_call_is_still_shown() -> None:
    turn, bridge, _ = make_turn()
    turn.start_part(Agent.CLAUDE)
    turn.apply(ToolResultEvent("ghost", "out", False))
    assert turn.part.tool_calls == {}
    assert bridge.of_kind("tool_result")[0]["toolCallId"] == "ghost"
    assert bridge.of_kind("tool_result")[0]["agent"] == "claude"


# ---- usage ---------------------------------------------------------------------------------


def test_usage_totals_add_up_across_calls_and_parts() -> None:
    turn, _, _ = make_turn()
    assert not turn.usage.seen
    turn.start_part(Agent.LOCAL)
    turn.apply(UsageEvent(input_tokens=10, output_tokens=5, cache_read_tokens=3))
    turn.apply(UsageEvent(input_tokens=20, output_tokens=7))
    turn.start_part(Agent.CLAUDE)
    turn.apply(UsageEvent(input_tokens=1, output_tokens=1, cache_creation_tokens=2, cost_usd=0.25))
    usage = turn.usage
    assert (usage.input_tokens, usage.output_tokens) == (31, 13)
    assert usage.cache_read_tokens == 3
    assert usage.cache_creation_tokens == 2
    assert usage.cost_usd == pytest.approx(0.25)
    assert usage.seen


def test_usage_totals_stay_unknown_until_reported() -> None:
    totals = UsageTotals()
    totals.add(UsageEvent(input_tokens=1, output_tokens=1))
    assert totals.cache_read_tokens is None and totals.cache_creation_tokens is None
    assert totals.cost_usd is None


# ---- text across parts ---------------------------------------------------------------------


def test_turn_text_joins_the_parts_in_order() -> None:
    turn, bridge, _ = make_turn()
    turn.start_part(Agent.LOCAL)
    feed(turn, "local ", f"answer{NEED_OPEN}g{NEED_CLOSE}")
    turn.start_part(Agent.CLAUDE)
    feed(turn, "claude answer")
    turn.flush_text()
    assert turn.text == "local answer\n\nclaude answer"
    assert turn.part_of(Agent.LOCAL) is turn.parts[0]
    assert turn.part_of(Agent.CLAUDE) is turn.parts[1]
    assert {u["agent"] for u in bridge.of_kind("text")} == {"local", "claude"}


def test_empty_parts_add_no_text_and_report_empty() -> None:
    turn, _, _ = make_turn()
    turn.start_part(Agent.LOCAL)
    turn.start_part(Agent.CLAUDE)
    feed(turn, "only claude")
    turn.flush_text()
    assert turn.parts[0].is_empty
    assert turn.text == "only claude"
    assert AgentPart(Agent.LOCAL).is_empty


# ---- TurnHost: permission questions ------------------------------------------------------


def request(tool: str = "run_command", **kwargs: Any) -> PermissionRequest:
    return PermissionRequest(
        agent=kwargs.pop("agent", Agent.LOCAL),
        tool_call_id=kwargs.pop("tool_call_id", "call-1"),
        tool=tool,
        input=kwargs.pop("input", {"command": "make test"}),
        **kwargs,
    )


async def test_permission_question_goes_to_the_client_in_wire_shape() -> None:
    turn, bridge, _ = make_turn(FakeBridge(["allow_once"]))
    turn.progress_token = "token"
    host = TurnHost(turn, permission_timeout_seconds=5)
    answer = await host.request_permission(request(description="runs the tests"))
    assert answer is PermissionOption.ALLOW_ONCE
    (params,) = bridge.asked
    assert params["sessionId"] == "session-1" and params["turnId"] == "turn-1"
    assert params["toolCallId"] == "call-1" and params["tool"] == "run_command"
    assert params["options"] == ["allow_once", "allow_session", "deny"]
    # What the editor bridge builds from it validates as the wire's params.
    sent = wire.RequestPermissionParams.model_validate(
        {**params, "options": wire.permission_options(params["options"])}
    ).to_wire()
    assert sent["description"] == "runs the tests"
    assert ("token", "waiting for your permission") in bridge.progress


async def test_an_empty_description_is_left_out() -> None:
    turn, bridge, _ = make_turn(FakeBridge(["deny"]))
    await TurnHost(turn, 5).request_permission(request())
    assert bridge.asked[0]["description"] is None


async def test_allow_session_is_remembered_per_tool() -> None:
    turn, bridge, _ = make_turn(FakeBridge(["allow_session", "allow_once", "deny"]))
    host = TurnHost(turn, permission_timeout_seconds=5)
    assert await host.request_permission(request("run_command")) is PermissionOption.ALLOW_SESSION
    assert await host.request_permission(request("run_command")) is PermissionOption.ALLOW_ONCE
    assert len(bridge.asked) == 1, "the second run_command was not asked"
    assert await host.request_permission(request("edit_file")) is PermissionOption.ALLOW_ONCE
    assert await host.request_permission(request("edit_file")) is PermissionOption.DENY
    assert [p["tool"] for p in bridge.asked] == ["run_command", "edit_file", "edit_file"]
    assert turn.allowed_tools == {"run_command"}


async def test_allow_session_carries_to_the_sessions_next_turn() -> None:
    """The engine hands every turn of a session the same set; the host fills it."""
    first, bridge, _ = make_turn(FakeBridge(["allow_session"]))
    shared: set[str] = set()
    first.allowed_tools = shared
    await TurnHost(first, 5).request_permission(request("run_command"))
    second = Turn("session-1", "turn-2", NONCE, bridge, on_need=lambda need: None)
    second.allowed_tools = shared
    assert await TurnHost(second, 5).request_permission(request("run_command")) is (
        PermissionOption.ALLOW_ONCE
    )
    assert len(bridge.asked) == 1


@pytest.mark.parametrize(
    "answer", ["maybe", "", "ALLOW_ONCE", "allow", None, 3, {"optionId": "allow_once"}]
)
async def test_unknown_answers_are_deny(answer: Any) -> None:
    turn, bridge, _ = make_turn(FakeBridge([answer]))
    host = TurnHost(turn, permission_timeout_seconds=5)
    assert await host.request_permission(request()) is PermissionOption.DENY
    assert turn.allowed_tools == set()
    assert bridge.of_kind("notice") == []


async def test_a_permission_wait_past_its_timeout_is_deny_with_a_warning() -> None:
    """The host is the one place a question is timed: it warns, withdraws the question and
    raises `PermissionTimedOut`, which both agents treat as a deny."""
    turn, bridge, _ = make_turn(FakeBridge(hang=True))
    host = TurnHost(turn, permission_timeout_seconds=0.05)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(PermissionTimedOut) as raised:
        await host.request_permission(request("run_command"))
    assert raised.value.seconds == 0.05
    assert loop.time() - began < 2.0
    assert bridge.hang_cancelled, "the open question is withdrawn"
    (notice,) = bridge.of_kind("notice")
    assert notice["severity"] == "warning"
    assert "run_command" in notice["message"] and "deny" in notice["message"]
    assert turn.allowed_tools == set()


async def test_host_passes_documents_and_edits_through() -> None:
    turn, bridge, _ = make_turn()
    bridge.documents[Path("/w/a.py")] = "unsaved"
    host = TurnHost(turn, 5)
    assert host.open_document_text(Path("/w/a.py")) == "unsaved"
    assert host.open_document_text(Path("/w/b.py")) is None
    assert await host.apply_edit(Path("/w/a.py"), "new") is True
    assert bridge.edits == [(Path("/w/a.py"), "new")]

"""milk's `milk/update` payloads as ACP session updates, and stored turns as their replay.

One `UpdateMapper` per open ACP session. It remembers the tool calls it has announced, so the
first sight of a call is a `tool_call` and every later one a `tool_call_update`, and so the
edit's diff is sent again with the call's output (ACP's `content` replaces, it does not
append). Every update carries `_meta.milk` with the turn, `seq`, milk's kind and the agent,
so a client can tell the local model from Claude; a hand-off in the middle of a turn is also
shown in the text, as a marker line.

Tools are shown the way ACP clients present them: a title, a kind (read, edit, search,
execute, fetch, think, switch_mode), the files they touch as absolute locations, and for edits
a `diff` of the replaced text (old → new fragment, as Claude Code's own ACP adapter does).
Claude's `TodoWrite` also becomes a `plan`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UsageUpdate,
    UserMessageChunk,
)

from milk_lsp.agents.local import tool_specs
from milk_lsp.agents.local.agent import ESCALATE_TOOL_NAME
from milk_lsp.engine.handoff import HAND_OFF_TOOL
from milk_lsp.sessions.model import Role, ToolCallRecord, TurnRecord, in_shown_order
from milk_lsp.text import cut, one_line

SessionUpdate = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | UsageUpdate
)
ToolContent = ContentToolCallContent | FileEditToolCallContent

STATUS = {
    "pending": "pending",
    "running": "in_progress",
    "completed": "completed",
    "failed": "failed",
    "denied": "failed",
}
"""milk's tool statuses → ACP's; a denied call is `failed` (`_meta.milk.status` says denied)."""

TITLE_INPUT_CHARS = 80


def text_block(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def message(text: str, meta: dict[str, Any] | None = None) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=text_block(text), field_meta=meta
    )


def thought(text: str, meta: dict[str, Any] | None = None) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=text_block(text), field_meta=meta
    )


# ---- how a tool call looks ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolView:
    title: str
    kind: ToolKind
    locations: list[ToolCallLocation]
    diffs: list[FileEditToolCallContent]


def tool_view(name: str, tool_input: dict[str, Any], workspace: Path) -> ToolView:
    """Title, kind, locations and diffs of a call of either agent."""
    arg = _Input(tool_input, workspace)
    path = arg.path("path") or arg.path("file_path") or arg.path("notebook_path")
    here = [ToolCallLocation(path=str(path))] if path is not None else []
    shown = arg.shown_path()
    match name:
        case tool_specs.READ_FILE | "Read":
            start = arg.int("start_line") or arg.int("offset")
            if start is not None and path is not None:
                here = [ToolCallLocation(path=str(path), line=max(start - 1, 0))]
            return ToolView(f"Read {shown}".strip(), "read", here, [])
        case tool_specs.EDIT_FILE:
            old = arg.text("old_text")
            diffs = _diff(path, old or None, arg.text("new_text"))
            return ToolView(f"{'Edit' if old else 'Create'} {shown}".strip(), "edit", here, diffs)
        case "Edit" | "Write" | "MultiEdit" | "NotebookEdit":
            return ToolView(f"{name} {shown}".strip(), "edit", here, _claude_diffs(name, arg, path))
        case tool_specs.LIST_DIRECTORY | "LS":
            return ToolView(f"List {shown or '.'}", "search", here, [])
        case tool_specs.SEARCH_TEXT | "Grep" | "Glob":
            where = f" in {shown}" if shown else ""
            return ToolView(f"Search {_short(arg.text('pattern'))}{where}", "search", here, [])
        case tool_specs.RUN_COMMAND | "Bash":
            title = arg.text("description") or f"Run `{_short(arg.text('command'))}`"
            return ToolView(title, "execute", here, [])
        case "WebFetch" | "WebSearch":
            what = arg.text("url") or arg.text("query")
            return ToolView(f"{name} {_short(what)}", "fetch", here, [])
        case "TodoWrite":
            return ToolView("Update the plan", "think", here, [])
        case "Task" | "Agent":
            return ToolView(f"Task: {_short(arg.text('description'))}", "think", here, [])
        case "ExitPlanMode":
            return ToolView("Leave plan mode", "switch_mode", here, [])
        case _ if name == ESCALATE_TOOL_NAME:
            return ToolView(
                f"Escalate to Claude: {_short(arg.text('reason'))}", "switch_mode", [], []
            )
        case _ if name == HAND_OFF_TOOL:
            return ToolView("Hand this turn to Claude?", "switch_mode", [], [])
    return ToolView(name or "tool", "other", here, [])


class _Input:
    """Typed reads of a tool's input, which is whatever the model sent."""

    def __init__(self, raw: dict[str, Any], workspace: Path) -> None:
        self.raw = raw if isinstance(raw, dict) else {}
        self.workspace = workspace

    def text(self, key: str) -> str:
        value = self.raw.get(key)
        return value if isinstance(value, str) else ""

    def int(self, key: str) -> int | None:
        value = self.raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def path(self, key: str) -> Path | None:
        """The path as an absolute path (relative ones are the workspace's), not resolved."""
        value = self.text(key)
        if not value or "\x00" in value:
            return None
        path = Path(value)
        return path if path.is_absolute() else self.workspace / path

    def shown_path(self) -> str:
        for key in ("path", "file_path", "notebook_path"):
            if value := self.text(key):
                return value
        return ""


def _short(text: str) -> str:
    return cut(one_line(text), TITLE_INPUT_CHARS)


def _diff(path: Path | None, old: str | None, new: str) -> list[FileEditToolCallContent]:
    if path is None:
        return []
    return [FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)]


def _claude_diffs(name: str, arg: _Input, path: Path | None) -> list[FileEditToolCallContent]:
    if name == "Edit":
        return _diff(path, arg.text("old_string") or None, arg.text("new_string"))
    if name == "Write":
        return _diff(path, None, arg.text("content"))
    if name == "NotebookEdit":
        return _diff(path, None, arg.text("new_source"))
    edits = arg.raw.get("edits")
    diffs: list[FileEditToolCallContent] = []
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, dict):
            one = _Input(edit, arg.workspace)
            diffs += _diff(path, one.text("old_string") or None, one.text("new_string"))
    return diffs


def plan_of(tool_input: dict[str, Any]) -> AgentPlanUpdate | None:
    """Claude's `TodoWrite` todo list as an ACP plan."""
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
            continue
        status = todo.get("status")
        entries.append(
            PlanEntry(
                content=todo["content"],
                priority="medium",
                status=status if status in ("pending", "in_progress", "completed") else "pending",
            )
        )
    return AgentPlanUpdate(session_update="plan", entries=entries)


# ---- live updates ------------------------------------------------------------------------


class UpdateMapper:
    """The ACP updates of one session's `milk/update` payloads, in order."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """Announced tool calls: their name and last input."""
        self.cost_usd = 0.0
        """Claude's cost in this session since it was opened here (ACP's cumulative cost)."""

    def knows(self, tool_call_id: str) -> bool:
        return tool_call_id in self._calls

    def view(self, tool_call_id: str) -> ToolView | None:
        call = self._calls.get(tool_call_id)
        return None if call is None else tool_view(call[0], call[1], self.workspace)

    def updates(self, payload: dict[str, Any]) -> list[SessionUpdate]:
        kind = payload.get("kind")
        meta = _meta(payload)
        match kind:
            case "text":
                return [message(str(payload.get("delta", "")), meta)]
            case "thinking":
                return [thought(str(payload.get("delta", "")), meta)]
            case "tool_call":
                return self._tool_call(payload, meta)
            case "tool_result":
                return self._tool_result(payload, meta)
            case "escalated":
                return _hand_off_marker(payload, meta)
            case "need":
                return [thought(f"Goal: {payload.get('currentNeed', '')}\n", meta)]
            case "usage":
                return [self._usage(payload, meta)]
            case "notice" if payload.get("severity") != "error":
                # An error notice precedes the failed turn's end; the prompt's error says it.
                return [thought(f"⚠ {payload.get('message', '')}\n", meta)]
        return []  # turn_started, turn_ended, error notices: nothing the chat shows

    def announce(
        self, tool_call_id: str, name: str, tool_input: dict[str, Any], meta: dict[str, Any]
    ) -> ToolCallStart:
        """A `tool_call` for a call milk asks about before any agent reported it (hand-off)."""
        self._calls[tool_call_id] = (name, tool_input)
        view = tool_view(name, tool_input, self.workspace)
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=tool_call_id,
            title=view.title,
            kind=view.kind,
            status="pending",
            raw_input=tool_input,
            locations=view.locations or None,
            field_meta=meta,
        )

    def _tool_call(self, payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
        call_id = str(payload.get("toolCallId", ""))
        name = str(payload.get("name", ""))
        tool_input = payload.get("input") if isinstance(payload.get("input"), dict) else {}
        assert isinstance(tool_input, dict)
        milk_status = str(payload.get("status", ""))
        meta["milk"]["status"] = milk_status
        status = STATUS.get(milk_status)
        view = tool_view(name, tool_input, self.workspace)
        out: list[SessionUpdate] = []
        seen = self._calls.get(call_id)
        self._calls[call_id] = (name, tool_input)
        whole: dict[str, Any] = {
            "tool_call_id": call_id,
            "title": view.title,
            "kind": view.kind,
            "status": status,
            "raw_input": tool_input,
            "locations": view.locations or None,
            "content": list(view.diffs) or None,
            "field_meta": meta,
        }
        if seen is None:
            out.append(ToolCallStart(session_update="tool_call", **whole))
        elif seen[1] != tool_input:  # Claude's input arrives after the call starts
            out.append(ToolCallProgress(session_update="tool_call_update", **whole))
        else:
            out.append(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status=status,
                    field_meta=meta,
                )
            )
        if name == "TodoWrite" and (plan := plan_of(tool_input)) is not None:
            plan.field_meta = meta
            out.append(plan)
        return out

    def _tool_result(self, payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
        call_id = str(payload.get("toolCallId", ""))
        output = str(payload.get("output", ""))
        is_error = bool(payload.get("isError"))
        view = self.view(call_id)
        content: list[ToolContent] = list(view.diffs) if view is not None else []
        if output:
            content.append(ContentToolCallContent(type="content", content=text_block(output)))
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                content=content or None,
                raw_output={"output": output, "isError": is_error},
                field_meta=meta,
            )
        ]

    def _usage(self, payload: dict[str, Any], meta: dict[str, Any]) -> UsageUpdate:
        counts = [
            payload.get(key)
            for key in ("inputTokens", "cacheReadTokens", "cacheCreationTokens", "outputTokens")
        ]
        used = sum(count for count in counts if isinstance(count, int) and count > 0)
        cost = payload.get("costUsd")
        if isinstance(cost, int | float) and cost > 0:
            self.cost_usd += float(cost)
        for key in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"):
            if key in payload:
                meta["milk"][key] = payload[key]
        if isinstance(cost, int | float):
            meta["milk"]["costUsd"] = cost
        return UsageUpdate(
            session_update="usage_update",
            used=used,
            size=0,  # milk is not told the model's context window: 0 stands for unknown
            cost=Cost(amount=round(self.cost_usd, 6), currency="USD") if self.cost_usd else None,
            field_meta=meta,
        )


def _meta(payload: dict[str, Any]) -> dict[str, Any]:
    milk = {key: payload[key] for key in ("kind", "turnId", "seq", "agent") if key in payload}
    return {"milk": milk}


def _hand_off_marker(payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
    by = payload.get("by")
    reason = " ".join(str(payload.get("reason", "")).split())
    for key in ("by", "reason", "mode", "contextChars"):
        if key in payload:
            meta["milk"][key] = payload[key]
    if by == "agent":
        text = f"\n\n**⇧ Claude takes over**: the local model escalated ({reason}).\n\n"
    elif by == "fallback":
        text = f"\n\n**⇧ Claude takes over**: the local model could not finish ({reason}).\n\n"
    else:  # the user sent the turn to Claude: the mode says so, nothing to add to the text
        return []
    return [message(text, meta)]


# ---- replay of stored turns --------------------------------------------------------------


def replay(records: Iterable[TurnRecord], workspace: Path) -> list[SessionUpdate]:
    """A stored conversation as the updates `session/load` sends, oldest first."""
    out: list[SessionUpdate] = []
    for record in records:
        meta = {
            "milk": {
                "turnId": record.turn_id,
                "agent": record.agent.value,
                "status": record.status.value,
                "replay": True,
            }
        }
        if record.role is Role.USER:
            out.append(
                UserMessageChunk(
                    session_update="user_message_chunk",
                    content=text_block(record.text),
                    field_meta=meta,
                )
            )
            continue
        pieces = in_shown_order(record)
        if pieces is None:  # stored before calls kept their place: the calls, then the text
            pieces = [*record.tool_calls, *([record.text] if record.text else [])]
        for piece in pieces:
            if isinstance(piece, str):
                out.append(message(piece, meta))
            else:
                out.append(_stored_call(piece, workspace, meta))
    return out


def _stored_call(call: ToolCallRecord, workspace: Path, meta: dict[str, Any]) -> ToolCallStart:
    view = tool_view(call.name, call.input, workspace)
    content: list[ToolContent] = list(view.diffs)
    if call.output:
        content.append(ContentToolCallContent(type="content", content=text_block(call.output)))
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call.tool_call_id,
        title=view.title,
        kind=view.kind,
        status="failed" if call.is_error else "completed",
        raw_input=call.input,
        raw_output=None
        if call.output is None
        else {"output": call.output, "isError": call.is_error},
        locations=view.locations or None,
        content=content or None,
        field_meta=meta,
    )

"""milk's `milk/update` payloads as ACP session updates, and stored turns as their replay.

One `UpdateMapper` per open ACP session. It remembers the tool calls it has announced, so the
first sight of a call is a `tool_call` and every later one a `tool_call_update`, and so the
edit's diff is sent again with the call's output (ACP's `content` replaces, it does not
append). A call's status only moves forward: `pending` when first seen (a permission question
may still come: both agents report a call as running before they ask), `in_progress` once the
user allowed it, then `completed` or `failed`; the calls a cancelled or failed turn left open
are closed `failed`, with milk's status (`cancelled`) in `_meta`. Every update carries
`_meta.milk` with the turn, `seq`, milk's kind and the agent, so a client can tell the local
model from Claude; a hand-off in the middle of a turn is also shown in the text, as a marker
line.

Tools are shown the way ACP clients present them: a title, a kind (read, edit, search,
execute, fetch, think, switch_mode), the files they touch as absolute locations, and for edits
a `diff` of the replaced text (old → new fragment, as Claude Code's own ACP adapter does).
A successful `TodoWrite` (a call the CLI answered without an error) also becomes a `plan`.
`usage_update` is sent only when milk knows the model's context window (ACP requires `size`):
for the local model milk runs itself (`local.provider: "embedded"`, its `contextSize`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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
    ResourceContentBlock,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from milk_lsp.acp.tool_views import ToolView, plan_of, tool_view
from milk_lsp.guided.citations import (
    PROPOSED_HEADING,
    SOURCES_HEADING,
    is_sources_block,
    wire_place,
)
from milk_lsp.sessions.model import (
    RecordStatus,
    Role,
    ToolCallRecord,
    TurnRecord,
    in_shown_order,
)

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
RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}
"""How far along a call is: a status is never followed by one of a lower rank."""


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


# ---- live updates ------------------------------------------------------------------------


@dataclass
class _Call:
    """An announced tool call: what it is, and what the client was told of it."""

    name: str
    input: dict[str, Any]
    turn_id: Any
    status: str = "pending"
    """The ACP status last sent."""
    asked: bool = False
    """A permission question was asked for it: a `running` after it means allowed."""
    plan: AgentPlanUpdate | None = field(default=None, repr=False)


class UpdateMapper:
    """The ACP updates of one session's `milk/update` payloads, in order.

    `context_windows`: the context window in tokens of the agents milk knows it of (by
    `agent`); `usage_update` is sent for those only."""

    def __init__(self, workspace: Path, context_windows: Mapping[str, int] | None = None) -> None:
        self.workspace = workspace
        self.context_windows = dict(context_windows or {})
        self._calls: dict[str, _Call] = {}
        """Announced tool calls, by id."""
        self.cost_usd = 0.0
        """Claude's cost in this session since it was opened here (ACP's cumulative cost)."""

    def knows(self, tool_call_id: str) -> bool:
        return tool_call_id in self._calls

    def view(self, tool_call_id: str) -> ToolView | None:
        call = self._calls.get(tool_call_id)
        return None if call is None else tool_view(call.name, call.input, self.workspace)

    def asking(self, tool_call_id: str) -> None:
        """A permission question for this call is about to be asked."""
        call = self._calls.get(tool_call_id)
        if call is not None:
            call.asked = True

    def updates(self, payload: dict[str, Any]) -> list[SessionUpdate]:
        kind = payload.get("kind")
        meta = _meta(payload)
        match kind:
            case "text" if is_sources_block(str(payload.get("delta", ""))):
                return []  # the `citations` update that follows gives them as links
            case "text":
                return [message(str(payload.get("delta", "")), meta)]
            case "citations":
                return _citations(payload, meta)
            case "thinking":
                return [thought(str(payload.get("delta", "")), meta)]
            case "tool_call":
                return self._tool_call(payload, meta)
            case "tool_result":
                return self._tool_result(payload, meta)
            case "escalated":
                return _hand_off_marker(payload, meta)
            case "usage":
                return self._usage(payload, meta)
            case "notice" if payload.get("severity") != "error":
                # An error notice precedes the failed turn's end; the prompt's error says it.
                return [thought(f"⚠ {payload.get('message', '')}\n", meta)]
            case "turn_ended" if payload.get("stopReason") in ("cancelled", "error"):
                return self._close_open_calls(payload, meta)
            case "plan":
                return [_plan(payload, meta)]
            case "turn_started" if payload.get("elsewhere"):
                # another door's turn: its message first, as a replayed session shows it
                meta["milk"]["door"] = payload.get("door")
                text = str(payload.get("userText") or "")
                return [
                    UserMessageChunk(
                        session_update="user_message_chunk",
                        content=text_block(text),
                        field_meta=meta,
                    )
                ]
        # turn_started, turn_ended, error notices: nothing the chat shows. `need` neither:
        # milk's note of the goal echoes the prompt, and a thought would gather the
        # model's reasoning under it.
        return []

    def announce(
        self, tool_call_id: str, name: str, tool_input: dict[str, Any], meta: dict[str, Any]
    ) -> ToolCallStart:
        """A `tool_call` for a call milk asks about before any agent reported it (hand-off)."""
        self._calls[tool_call_id] = _Call(name, tool_input, meta["milk"].get("turnId"))
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

    def close(self, tool_call_id: str, status: str) -> None:
        """milk closed a call itself (the hand-off question) with this ACP status."""
        call = self._calls.get(tool_call_id)
        if call is not None:
            call.status = status

    def _next_status(self, call: _Call | None, milk_status: str) -> str | None:
        """The ACP status to send, or None to leave it as the client has it."""
        target = STATUS.get(milk_status)
        if call is None:  # first sight: a question may still come
            return target if target in ("completed", "failed") else "pending"
        if target is None or RANK[target] <= RANK[call.status]:
            return None
        if target == "in_progress" and not call.asked:
            return None  # a call reported running before its question would go back
        return target

    def _tool_call(self, payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
        call_id = str(payload.get("toolCallId", ""))
        name = str(payload.get("name", ""))
        tool_input = payload.get("input") if isinstance(payload.get("input"), dict) else {}
        assert isinstance(tool_input, dict)
        milk_status = str(payload.get("status", ""))
        meta["milk"]["status"] = milk_status
        call = self._calls.get(call_id)
        status = self._next_status(call, milk_status)
        view = tool_view(name, tool_input, self.workspace)
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
        if call is None:
            call = self._calls[call_id] = _Call(name, tool_input, payload.get("turnId"))
            out: list[SessionUpdate] = [ToolCallStart(session_update="tool_call", **whole)]
        elif call.input != tool_input:  # Claude's input arrives after the call starts
            call.name, call.input = name or call.name, tool_input
            out = [ToolCallProgress(session_update="tool_call_update", **whole)]
        elif status is not None:
            out = [
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status=status,
                    field_meta=meta,
                )
            ]
        else:
            return []
        if status is not None:
            call.status = status
        if name == "TodoWrite":
            call.plan = plan_of(tool_input)  # shown once the CLI ran it (`_tool_result`)
        return out

    def _tool_result(self, payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
        call_id = str(payload.get("toolCallId", ""))
        output = str(payload.get("output", ""))
        is_error = bool(payload.get("isError"))
        view = self.view(call_id)
        content: list[ToolContent] = list(view.diffs) if view is not None else []
        if output:
            content.append(ContentToolCallContent(type="content", content=text_block(output)))
        out: list[SessionUpdate] = [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                content=content or None,
                raw_output={"output": output, "isError": is_error},
                field_meta=meta,
            )
        ]
        call = self._calls.get(call_id)
        if call is not None and call.plan is not None and not is_error:
            call.plan.field_meta = meta
            out.append(call.plan)
        return out

    def _close_open_calls(
        self, payload: dict[str, Any], meta: dict[str, Any]
    ) -> list[SessionUpdate]:
        """A cancelled or failed turn: the calls it left open end `failed`."""
        milk_status = "cancelled" if payload.get("stopReason") == "cancelled" else "failed"
        out: list[SessionUpdate] = []
        for call_id, call in self._calls.items():
            if call.turn_id != payload.get("turnId") or RANK[call.status] == RANK["completed"]:
                continue
            call.status = "failed"
            out.append(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="failed",
                    field_meta={"milk": {**meta["milk"], "status": milk_status}},
                )
            )
        return out

    def _usage(self, payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
        counts = [
            payload.get(key)
            for key in ("inputTokens", "cacheReadTokens", "cacheCreationTokens", "outputTokens")
        ]
        used = sum(count for count in counts if isinstance(count, int) and count > 0)
        cost = payload.get("costUsd")
        if isinstance(cost, int | float) and cost > 0:
            self.cost_usd += float(cost)
        size = self.context_windows.get(str(payload.get("agent")))
        if size is None or used <= 0:
            # ACP's `size` is required: unknown, the meter is left alone rather than told
            # "0 of 0"; a report of the cost alone (Claude's last) has no context to show.
            return []
        for key in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"):
            if key in payload:
                meta["milk"][key] = payload[key]
        if isinstance(cost, int | float):
            meta["milk"]["costUsd"] = cost
        total = Cost(amount=round(self.cost_usd, 6), currency="USD") if self.cost_usd else None
        update = UsageUpdate(
            session_update="usage_update", used=used, size=size, cost=total, field_meta=meta
        )
        return [update]


def _meta(payload: dict[str, Any]) -> dict[str, Any]:
    keys = ("kind", "turnId", "seq", "agent", "elsewhere")
    milk = {key: payload[key] for key in keys if key in payload}
    return {"milk": milk}


_WHO = {"local": "local model", "claude": "Claude"}


def _plan(payload: dict[str, Any], meta: dict[str, Any]) -> SessionUpdate:
    """An advisor turn's checklist as ACP's plan (whole, each time). ACP has no failed step:
    a failed one is `completed` with "(failed)" after it; who does or did a step follows."""
    entries = []
    for step in payload.get("steps") or []:
        if not isinstance(step, dict):
            continue
        status = str(step.get("status"))
        who = "milk" if step.get("byMilk") else _WHO.get(str(step.get("agent")))
        content = str(step.get("content", ""))
        if status == "failed":
            content += " (failed)"
        if who is not None and status != "pending":
            content += f" [{who}]"
        entries.append(
            PlanEntry(
                content=content,
                priority="medium",
                status="completed" if status == "failed" else status,
            )
        )
    return AgentPlanUpdate(session_update="plan", entries=entries, field_meta=meta)


def _citations(payload: dict[str, Any], meta: dict[str, Any]) -> list[SessionUpdate]:
    """A local answer's checked sources: the heading, then a resource link per place (the
    client opens the file), then the files it proposes, marked as not there yet."""
    updates: list[SessionUpdate] = []
    citations = payload.get("citations") or []
    if citations:
        updates.append(message(f"\n\n{SOURCES_HEADING}\n", meta))
        for cited in citations:
            link = ResourceContentBlock(
                type="resource_link",
                name=wire_place(cited),
                uri=f"{cited.get('uri')}#L{cited.get('line')}",
                description=str(cited.get("quote") or "") or None,
            )
            updates.append(
                AgentMessageChunk(
                    session_update="agent_message_chunk", content=link, field_meta=meta
                )
            )
    proposed = payload.get("proposed") or []
    if proposed:
        listed = "\n".join(f"- {item.get('path')} (not in the workspace yet)" for item in proposed)
        updates.append(message(f"\n\n{PROPOSED_HEADING}\n{listed}\n", meta))
    return updates


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
                out.append(_stored_call(piece, record, workspace, meta))
    return out


def _stored_call(
    call: ToolCallRecord, record: TurnRecord, workspace: Path, meta: dict[str, Any]
) -> ToolCallStart:
    """A stored call as it ended live: milk's final status (`cancelled`, `denied`) in
    `_meta`; a call of a failed turn that never returned is `failed`."""
    view = tool_view(call.name, call.input, workspace)
    content: list[ToolContent] = list(view.diffs)
    if call.output:
        content.append(ContentToolCallContent(type="content", content=text_block(call.output)))
    status = call.status
    if status is None:  # stored before calls kept their status, or never finished
        unfinished = call.output is None and record.status is not RecordStatus.OK
        status = "failed" if call.is_error or unfinished else "completed"
    meta = {"milk": {**meta["milk"], "toolStatus": status}}  # `status` is the record's
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call.tool_call_id,
        title=view.title,
        kind=view.kind,
        status="completed" if status == "completed" else "failed",
        raw_input=call.input,
        raw_output=None
        if call.output is None
        else {"output": call.output, "isError": call.is_error},
        locations=view.locations or None,
        content=content or None,
        field_meta=meta,
    )

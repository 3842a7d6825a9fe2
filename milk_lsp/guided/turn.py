"""A guided local turn: milk drives, the model fills in.

milk locates the code (`locate`), asks the model one request whose reply is constrained to
`shape.SCHEMA`, and verifies the reply mechanically: an answer's citations and claims
(`verify`), edits by applying them through the workspace tools (the user's permission, the
parse check after each) and by the project's own check before and after
(`project_check`). A failed check goes back to the model once with the mechanical reason;
a second failure ends the local part with a hand-off signal, the reasons as its detail.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from milk_lsp.agents.base import (
    AgentEvent,
    CitationsEvent,
    EscalationRequested,
    FailureReason,
    LocalGaveUp,
    LocalSignal,
    NoticeEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    TurnDone,
    TurnFailed,
    UsageEvent,
)
from milk_lsp.agents.local.client import LocalClient
from milk_lsp.agents.local.judge.edit_intent import edits_elsewhere
from milk_lsp.agents.local.reply.stream import LocalModelError, Reply
from milk_lsp.agents.local.rounds import request_body
from milk_lsp.agents.local.tool_specs import EDIT_FILE, READ_FILE
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.guided import prompt
from milk_lsp.guided.citations import sources_block
from milk_lsp.guided.locate import Budget, Chunk, Located, Locator
from milk_lsp.guided.project_check import check_for, places, run_check
from milk_lsp.guided.shape import GuidedReply, NotTheShape, parse_reply, response_format
from milk_lsp.guided.verify import Verdict, check_answer

logger = logging.getLogger(__name__)

REPLY_TOKENS = 2048
ATTEMPTS = 2
"""The first reply and one repair."""


@dataclass
class _Attempt:
    reply: GuidedReply | None = None
    text: str = ""
    problems: list[str] = field(default_factory=list)
    signal: LocalSignal = LocalSignal.UNGROUNDED_ANSWER
    lines: str = ""
    """The lines a failed check names, numbered, for the repair request."""


class GuidedTurn:
    """One guided local part (see the module)."""

    def __init__(
        self,
        client: LocalClient,
        locator: Locator,
        tools: WorkspaceTools,
        root: Path,
        progress: Callable[[str], None],
        *,
        offer_escalation: bool,
        history: Sequence[dict[str, Any]] = (),
        budget: Budget | None = None,
        run_project_check: bool = True,
    ) -> None:
        self._client = client
        self._locator = locator
        self._tools = tools
        self._root = root
        self._progress = progress
        self._offer_escalation = offer_escalation
        self._history = list(history)
        self._budget = budget
        self._project_check = check_for(root) if run_project_check else None

    async def run(self, request: str, shown_request: str) -> AsyncGenerator[AgentEvent, None]:
        """The turn's events; ends with `TurnDone`, `EscalationRequested`, `LocalGaveUp` or
        `TurnFailed`. `request` is what the user typed; `shown_request` it with what they
        attached (the model sees that)."""
        try:
            async with aclosing(self._run(request, shown_request)) as events:
                async for event in events:
                    yield event
        except LocalModelError as exc:
            self._client.forget_model()
            yield TurnFailed(exc.reason, exc.message)
        except Exception as exc:
            logger.exception("guided turn failed unexpectedly")
            yield TurnFailed(
                FailureReason.INTERNAL,
                f"the guided local turn failed unexpectedly: {type(exc).__name__}: {exc}",
            )

    async def _run(self, request: str, shown_request: str) -> AsyncGenerator[AgentEvent, None]:
        self._progress("locating the code the request is about…")
        located = await self._locator.locate(request, self._tools, self._budget)
        for event in _shown_reads(located):
            yield event
        model = await self._client.resolve_model()
        conversation = prompt.messages(
            shown_request, located, self._history, offer_escalation=self._offer_escalation
        )
        attempt = _Attempt()
        for number in range(ATTEMPTS):
            if number:
                conversation += prompt.repair(attempt.text, attempt.problems, attempt.lines)
                yield NoticeEvent(
                    "info",
                    "milk's check of the local reply failed, so it asked once more: "
                    + "; ".join(attempt.problems[:3]),
                )
            attempt = _Attempt()
            async for event in self._ask(model, conversation, attempt):
                yield event
            if attempt.reply is None:
                continue
            reply = attempt.reply
            if reply.kind == "escalate":
                reason = reply.reason.strip() or reply.answer.strip() or "the model asked for it"
                if self._offer_escalation:
                    yield EscalationRequested(reason)
                else:
                    yield LocalGaveUp(LocalSignal.NO_ANSWER, f"the local model could not: {reason}")
                return
            mismatch = _intent_mismatch(reply)
            if mismatch is not None:
                attempt.problems, attempt.signal = [mismatch[0]], mismatch[1]
                continue
            if reply.kind == "edits" and reply.edits:
                async for event in self._edits(reply, attempt, request, located.names):
                    yield event
                if attempt.problems:
                    continue
                if reply.answer.strip():
                    yield TextDelta(reply.answer.strip())
                yield TurnDone()
                return
            verdict = check_answer(reply, located, self._locator.index, shown_request)
            if not reply.answer.strip():
                verdict.problems.append("`answer` is empty: answer the request there")
            if not verdict.ok:
                attempt.problems = verdict.problems
                continue
            for event in _answer(reply, verdict):
                yield event
            yield TurnDone()
            return
        yield LocalGaveUp(
            attempt.signal,
            "milk's check of the local model's reply failed twice: "
            + "; ".join(attempt.problems[:4]),
            tried=tuple(f"located {path}" for path in located.ranked[:4]),
        )

    async def _ask(
        self, model: str, conversation: list[dict[str, Any]], attempt: _Attempt
    ) -> AsyncGenerator[AgentEvent, None]:
        """One constrained request; fills `attempt` with the parsed reply or the problem."""
        body = request_body(model, conversation, [], self._client.settings, False)
        body["max_tokens"] = REPLY_TOKENS  # the shape's bounds fit in it, edits included
        while True:
            constrained = self._client.takes_json_schema(model)
            if constrained:
                body["response_format"] = response_format()
            else:
                body.pop("response_format", None)
            reply = Reply()
            pieces = 0
            self._progress("the local model is writing its reply…")
            try:
                async with aclosing(self._client.stream_reply(body, reply)) as stream:
                    async for event in stream:
                        if isinstance(event, UsageEvent):
                            yield event
                        elif isinstance(event, TextDelta):
                            pieces += 1
                            if pieces % 50 == 0:
                                self._progress(f"the local model is writing ({pieces} tokens)…")
            except LocalModelError as exc:
                if constrained and exc.http_status in (400, 422, 501):
                    # a server without JSON schemas: the shape is validated, asked again
                    self._client.refuses_json_schema(model)
                    continue
                raise
            break
        attempt.text = "".join(reply.text)
        if reply.finish_reason == "length":
            attempt.problems = ["the reply was cut off at its length limit: write less"]
            return
        try:
            attempt.reply = parse_reply(attempt.text)
        except NotTheShape as exc:
            attempt.problems = [str(exc)]

    async def _edits(
        self, reply: GuidedReply, attempt: _Attempt, request: str, names: Sequence[str]
    ) -> AsyncGenerator[AgentEvent, None]:
        """Apply the reply's edits through the tools, then check them; on a failure put
        the files back and leave the reasons in `attempt.problems`."""
        tools = self._tools
        check = self._project_check
        baseline = None
        if check is not None:
            allowed = await tools.ask_to_run(
                _call_id("check"),
                check.command,
                f"Run the project's check before and after the local edits: {check.command}",
            )
            if allowed:
                self._progress(f"running {check.command} before the edits…")
                baseline = await run_check(check, self._root)
        for edit in reply.edits[:8]:
            call_id = _call_id("edit")
            arguments = {"path": edit.path, "old_text": edit.old_text, "new_text": edit.new_text}
            yield ToolCallEvent(call_id, EDIT_FILE, arguments, ToolStatus.RUNNING)
            outcome = await tools.call(call_id, EDIT_FILE, arguments)
            status = (
                ToolStatus.DENIED
                if outcome.denied
                else ToolStatus.FAILED
                if outcome.is_error
                else ToolStatus.COMPLETED
            )
            yield ToolCallEvent(call_id, EDIT_FILE, arguments, status)
            yield ToolResultEvent(call_id, outcome.output, outcome.is_error or outcome.denied)
            if outcome.denied:
                await tools.restore_edited()
                attempt.problems = []
                yield LocalGaveUp(
                    LocalSignal.FAILED_EDIT, f"the user did not allow the edit of {edit.path}"
                )
                return
            if outcome.is_error:
                attempt.problems.append(f"the edit of {edit.path} failed: {outcome.output}")
                attempt.signal = LocalSignal.FAILED_EDIT
        if not attempt.problems:
            edited = {path: (was, await tools.text_of(path)) for path, was in tools.texts_before()}
            away = edits_elsewhere(request, edited, names)
            if away is not None:
                attempt.problems.append(f"{away}: make the change where the request says")
                attempt.signal = LocalSignal.EDIT_NOT_MADE
        broken = tools.broken_files()
        for path, problem in broken.items():
            attempt.problems.append(f"after the edits {path} is broken: {problem}")
            attempt.signal = LocalSignal.EDIT_BROKE_FILE
        if not attempt.problems and check is not None and baseline is not None:
            self._progress(f"running {check.command} after the edits…")
            after = await run_check(check, self._root)
            if baseline.passed and not after.passed:
                attempt.problems.append(
                    f"`{check.command}` passed before the edits and fails after them:\n"
                    + after.output[-1500:]
                )
                attempt.signal = LocalSignal.CHECK_FAILED
            elif baseline.passed:
                yield NoticeEvent("info", f"milk checked the local edits: {check.command} passed")
        if not attempt.problems and tools.pending_check() is not None:
            ran = await tools.check_edits(_call_id("check"))
            if ran is not None and ran.failed:
                attempt.problems.append(f"`{ran.command}` fails after the edits:\n{ran.output}")
                attempt.signal = LocalSignal.CHECK_FAILED
        if attempt.problems:
            restored = await tools.restore_edited()
            if restored:
                yield NoticeEvent(
                    "info", f"milk put {', '.join(restored)} back: the edits did not pass its check"
                )
            if attempt.signal is LocalSignal.CHECK_FAILED:
                attempt.lines = await self._named_lines("\n".join(attempt.problems))

    async def _named_lines(self, output: str) -> str:
        """The lines a failed check names, each with a few around it, numbered."""
        chunks: list[Chunk] = []
        for path, number in places(output, self._root):
            text = await self._tools.text_of(path)
            if text is None:
                continue
            lines = text.splitlines()
            first, last = max(1, number - 2), min(len(lines), number + 2)
            if first > last or any(c.path == path and c.first <= number <= c.last for c in chunks):
                continue
            chunks.append(Chunk(path, first, tuple(lines[first - 1 : last]), "named by the check"))
        return "\n\n".join(chunk.render() for chunk in chunks)


def _intent_mismatch(reply: GuidedReply) -> tuple[str, LocalSignal] | None:
    """The reply does not do what the model itself read the request as: a change answered
    in words (the files would not have changed), a question answered by editing files."""
    if reply.intent == "change" and reply.kind == "answer":
        return (
            "you read the request as a change but gave no edits: give the change as edits"
            " (path, old_text copied from the file, new_text)",
            LocalSignal.EDIT_NOT_MADE,
        )
    if reply.intent == "question" and reply.kind == "edits":
        return (
            "you read the request as a question but gave edits: answer it without changing files",
            LocalSignal.UNGROUNDED_ANSWER,
        )
    return None


def _answer(reply: GuidedReply, verdict: Verdict) -> list[AgentEvent]:
    """The verified answer as the user sees it: its text, then its sources."""
    events: list[AgentEvent] = [TextDelta(reply.answer.strip())]
    block = sources_block(verdict.citations, verdict.proposed)
    if block:
        events.append(TextDelta(block))
    if verdict.citations or verdict.proposed:
        events.append(CitationsEvent(tuple(verdict.citations), tuple(verdict.proposed)))
    return events


def _shown_reads(located: Located) -> list[AgentEvent]:
    """What milk read for the model, one `read_file` row per file (milk's own reads)."""
    events: list[AgentEvent] = []
    prefix = _call_id("milk-look-located")
    for number, path in enumerate(dict.fromkeys(chunk.path for chunk in located.chunks)):
        chunks = [chunk for chunk in located.chunks if chunk.path == path]
        spans = ", ".join(f"{chunk.first}-{chunk.last}" for chunk in chunks)
        call_id = f"{prefix}-{number}"
        body = "\n\n".join(chunk.render() for chunk in chunks)
        events.append(
            ToolCallEvent(call_id, READ_FILE, {"path": path, "lines": spans}, ToolStatus.COMPLETED)
        )
        events.append(ToolResultEvent(call_id, body, False))
    return events


def _call_id(kind: str) -> str:
    return f"{kind}-{secrets.token_hex(4)}"

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
)
from milk_lsp.agents.local.client import LocalClient
from milk_lsp.agents.local.judge.scope import reach
from milk_lsp.agents.local.reply.stream import LocalModelError, Reply
from milk_lsp.agents.local.rounds import request_body
from milk_lsp.agents.local.tool_specs import READ_FILE
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.guided import prompt
from milk_lsp.guided.apply import Applied, apply_edits, call_id, crossed_edits
from milk_lsp.guided.ask import Ask
from milk_lsp.guided.citations import sources_block
from milk_lsp.guided.locate import Budget, Chunk, Located, Locator
from milk_lsp.guided.project_check import check_for, chunks_at, named_chunks, places
from milk_lsp.guided.shape import (
    GuidedReply,
    NotTheShape,
    old_texts,
    parse_reply,
    parse_size,
    response_format,
    size_format,
)
from milk_lsp.guided.verify import Verdict, check_answer

logger = logging.getLogger(__name__)

WORDS_MIN_CHARS = 12
"""A request shorter than this (blanks aside: "hi", "thanks!") is searched for nothing; one
this long holding no word of the code (a question all in Japanese) is (`Ask.words`)."""
REPLY_TOKENS = 2048
WIDE_AS_READ = (
    "the local model reads it as a change of many places (several files, new files or a design)"
)
"""Why a change the model sized "many" goes to Claude (see `_read`)."""
ATTEMPTS = 2
"""The first reply and one repair."""


@dataclass
class _Attempt:
    reply: GuidedReply | None = None
    text: str = ""
    problems: list[str] = field(default_factory=list)
    signal: LocalSignal = LocalSignal.UNGROUNDED_ANSWER
    named: tuple[Chunk, ...] = ()
    """The lines a failed check names, for the repair request."""
    named_files: tuple[str, ...] = ()
    """The files a failed check names."""
    cut: bool = False
    """The reply was ended (it repeated itself, or reached its limit): not given back."""
    at_places: bool = False
    """`named` are the lines where what the request writes stands, after edits that missed
    them: the repair's edits may only copy from those (`GuidedTurn._run`)."""


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
        wide: str | None = None,
        hand_off_wide: bool = False,
    ) -> None:
        self._client = client
        self._requests = Ask(client, progress)
        self._locator = locator
        self._tools = tools
        self._root = root
        self._progress = progress
        self._offer_escalation = offer_escalation
        self._history = list(history)
        self._budget = budget
        self._project_check = check_for(root) if run_project_check else None
        self._wide = wide
        self._hand_off_wide = hand_off_wide

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

    async def _located_by_words(
        self, model: str, request: str
    ) -> AsyncGenerator[AgentEvent | Located, None]:
        """A request holding no word of the code located again with the words the model
        would search it for (`Ask.words`), yielded last; nothing when it named none."""
        words: list[str] = []
        async for named in self._requests.words(model, request):
            if isinstance(named, list):
                words = named
            else:
                yield named
        if words:
            joined = " ".join(words)
            yield NoticeEvent("info", f"milk looked for what the local model named: {joined}")
            yield await self._locator.locate(request, self._tools, self._budget, joined)

    async def _run(self, request: str, shown_request: str) -> AsyncGenerator[AgentEvent, None]:
        self._progress("locating the code the request is about…")
        located = await self._locator.locate(request, self._tools, self._budget)
        model = await self._client.resolve_model()
        intent: str | None = None
        async for said in self._requests.intent(model, request):
            if isinstance(said, str | None):
                intent = said
            else:
                yield said
        wide = self._wide
        if wide is None and self._hand_off_wide and intent == "change":
            sizing = self._requests.read(model, prompt.size_messages(request), size_format())
            async for said in sizing:
                if isinstance(said, str):
                    wide = WIDE_AS_READ if parse_size(said) == "many" else None
                else:
                    yield said
        if wide is not None and intent != "question":
            yield NoticeEvent("info", f"milk handed this change to Claude: {wide}.")
            yield LocalGaveUp(
                LocalSignal.WIDE_REQUEST,
                f"{wide}, more than the local model does well; milk handed it to Claude"
                " once the local model read it as a change",
            )
            return
        if len("".join(request.split())) >= WORDS_MIN_CHARS and not located.speaks_code:
            async for found in self._located_by_words(model, request):
                if isinstance(found, Located):
                    located = found
                else:
                    yield found
        for event in shown_reads(located):
            yield event
        conversation = prompt.messages(
            shown_request, located, self._history, offer_escalation=self._offer_escalation
        )
        # the files an edit may name: those shown (located, or named by a failed check) and
        # the new files the request names
        new_files = reach(request, self._locator.index).new_files
        attempt = _Attempt()
        asked = conversation
        # edits given in this turn: the model read the request as a change, and an answer in
        # words after its edits failed is the change not made (slugify's length-invariant had
        # ended "The edits to LICENSE failed …" as if done)
        gave_edits = False
        for number in range(ATTEMPTS):
            if number:
                lines = "\n\n".join(chunk.render() for chunk in attempt.named)
                edited = attempt.reply is not None and attempt.reply.kind == "edits"
                # given back, a reply that repeated itself was repeated again (cross-env's
                # sigint-exit-code, twice)
                earlier = None if edited or attempt.cut else attempt.text
                asked = prompt.repair(conversation, attempt.problems, lines, earlier)
                yield NoticeEvent(
                    "info",
                    "milk's check of the local reply failed, so it asked once more: "
                    + "; ".join(attempt.problems[:3]),
                )
            # after edits that missed where the request's texts stand, the repair's edits
            # copy from those lines only: dotenv's encoding-latin1 got the same edit of
            # `const DotenvModule = {` twice, `let encoding = 'utf8'` shown both times
            at = attempt.at_places
            paths = [*([] if at else located.paths), *attempt.named_files, *new_files]
            shown = shown_texts([*([] if at else located.chunks), *attempt.named])
            attempt = _Attempt()
            async for event in self._ask(model, asked, attempt, intent, paths, shown):
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
            mismatch = _intent_mismatch(reply, began_change=gave_edits)
            if mismatch is not None:
                attempt.problems, attempt.signal = [mismatch[0]], mismatch[1]
                continue
            if reply.kind == "edits" and reply.edits:
                gave_edits = True
                async for event in self._edits(reply, attempt, request, located):
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
        self,
        model: str,
        conversation: list[dict[str, Any]],
        attempt: _Attempt,
        intent: str | None,
        edit_paths: Sequence[str],
        shown: dict[str, list[str]],
    ) -> AsyncGenerator[AgentEvent, None]:
        """One constrained request; fills `attempt` with the parsed reply or the problem
        (`edit_paths`: the files an edit may name; `shown`: the old texts an edit of each
        may copy)."""
        body = request_body(model, conversation, [], self._client.settings, False)
        body["max_tokens"] = REPLY_TOKENS  # the shape's bounds fit in it, edits included
        reply = Reply()
        self._progress("the local model is writing its reply…")
        shape = response_format(intent, edit_paths, shown)
        async for event in self._requests.stream(model, body, shape, reply):
            yield event
        attempt.text = "".join(reply.text)
        if reply.stopped is not None:
            attempt.problems = [f"milk ended the reply: {reply.stopped}; write a short reply"]
            attempt.cut = True
            return
        if reply.finish_reason == "length":
            attempt.problems = ["the reply was cut off at its length limit: write less"]
            attempt.cut = True
            return
        try:
            parsed = parse_reply(attempt.text)
        except NotTheShape as exc:
            attempt.problems = [str(exc)]
            return
        # a server without schemas may leave the intent out: the one the model gave first
        attempt.reply = parsed if parsed.intent else parsed.model_copy(update={"intent": intent})

    async def _edits(
        self, reply: GuidedReply, attempt: _Attempt, request: str, located: Located
    ) -> AsyncGenerator[AgentEvent, None]:
        """Apply the reply's edits and check them (`apply.apply_edits`); on a failure the
        files are put back and the reasons left in `attempt.problems`. Edits that are not
        one batch (`apply.crossed_edits`) are not applied; one whose new text is its old
        text changes nothing and is left out: alone, it is the change not made (cross-env's
        stdio-pipe got three, and each failed as an edit)."""
        edits = [edit for edit in reply.edits if edit.new_text != edit.old_text]
        if not edits:
            attempt.problems = [
                "each edit's new_text is its old_text, so nothing would change: write the"
                " change in new_text"
            ]
            attempt.signal = LocalSignal.EDIT_NOT_MADE
            return
        paths = dict.fromkeys(edit.path for edit in edits)
        texts = {path: await self._tools.text_of(path) for path in paths}
        crossed = crossed_edits(edits, texts)
        if crossed:
            attempt.problems, attempt.signal = crossed, LocalSignal.FAILED_EDIT
            return
        applied = Applied()
        async with aclosing(
            apply_edits(
                self._tools,
                edits,
                applied,
                root=self._root,
                check=self._project_check,
                progress=self._progress,
                request=request,
                names=located.names,
                files=located.written,
                locator=self._locator,
            )
        ) as events:
            async for event in events:
                yield event
        attempt.problems = applied.problems
        if applied.problems:
            attempt.signal = applied.signal
            if applied.signal is LocalSignal.CHECK_FAILED:
                output = "\n".join(applied.problems)
                named = await named_chunks(output, self._root, self._tools.text_of)
                attempt.named = tuple(named)
                attempt.named_files = tuple(path for path, _ in places(output, self._root))
            elif applied.places:
                at = await chunks_at(applied.places, self._tools.text_of, "what the request names")
                attempt.named = tuple(at)
                attempt.named_files = tuple(path for path, _ in applied.places)
                attempt.at_places = bool(at)


def _intent_mismatch(
    reply: GuidedReply, *, began_change: bool = False
) -> tuple[str, LocalSignal] | None:
    """The reply does not do what the model itself read the request as: a change answered
    in words (the files would not have changed; `began_change`: it gave edits earlier in
    the turn, whatever this reply says it read), a question answered by editing files."""
    if (reply.intent == "change" or began_change) and reply.kind == "answer":
        return (
            "you read the request as a change but gave no edits: give the change as edits"
            " (path, old_text copied from the lines shown, new_text)",
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


def shown_texts(chunks: Sequence[Chunk]) -> dict[str, list[str]]:
    """The old texts an edit of each file may copy: runs of whole lines shown together
    (`shape.old_texts`)."""
    by_path: dict[str, list[tuple[str, ...]]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk.lines)
    return {path: old_texts(runs) for path, runs in by_path.items()}


def shown_reads(located: Located) -> list[AgentEvent]:
    """What milk read for the model, one `read_file` row per file (milk's own reads)."""
    events: list[AgentEvent] = []
    prefix = call_id("milk-look-located")
    for number, path in enumerate(dict.fromkeys(chunk.path for chunk in located.chunks)):
        chunks = [chunk for chunk in located.chunks if chunk.path == path]
        spans = ", ".join(f"{chunk.first}-{chunk.last}" for chunk in chunks)
        read_id = f"{prefix}-{number}"
        body = "\n\n".join(chunk.render() for chunk in chunks)
        events.append(
            ToolCallEvent(read_id, READ_FILE, {"path": path, "lines": spans}, ToolStatus.COMPLETED)
        )
        events.append(ToolResultEvent(read_id, body, False))
    return events

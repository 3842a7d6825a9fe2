"""The local agent: the bounded tool loop over an OpenAI-compatible endpoint.

One `LocalAgent` per configured endpoint. Each turn (`run`) is an async generator of
`AgentEvent`s: it streams a reply through its `LocalClient` (`milk_lsp.agents.local.client`,
the HTTP side), runs the tool calls the model made, sends their results back and asks
again, until a reply has no tool calls (`TurnDone`), the model calls `escalate_to_claude`
(`EscalationRequested`), milk sees the turn fail (`LocalGaveUp`, see
`milk_lsp.agents.local.judge.watch`) or the request fails (`TurnFailed`). It never raises except
for cancellation; the client closes each response in `finally`, so a cancelled turn leaves
no open stream behind.

Streamed tool calls are merged leniently (`merge_tool_call_deltas`); a reply that runs away
(a loop, text after a call written as text) is ended as it streams (`runaway`).

Small models (Qwen2.5-Coder behind llama.cpp, Ollama or vLLM) often write a tool call as
text instead: a ```json block, bare JSON, or `<tool_call>`/`[tool_call]` tags. With
`LocalSettings.text_tool_calls`, a reply without structured calls whose whole text is such
a call to an offered tool is run as that call (`parse_text_tool_calls`); so is the one
runnable call written among prose (`embedded_call`). Text that starts like a call is held
back while it still could be one (`TextCallGate`), so the JSON is never shown as an
answer; any other text streams as it comes.

Per-turn state lives in the generator's locals: several sessions can run turns at once.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import httpx

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
from milk_lsp.agents.local.client import LocalClient, LocalSettings
from milk_lsp.agents.local.judge.edit_check import EditCheck, check_message, run_check
from milk_lsp.agents.local.judge.finish import (
    FINISH_TOOL_NAME,
    FINISH_TOOL_SPEC,
    Finish,
    finish_of,
    prose_before_finish,
)
from milk_lsp.agents.local.judge.watch import (
    AnswerJudge,
    MadeAlready,
    Nudge,
    TurnWatch,
    WrittenEscalation,
    refuses_tool_choice,
)
from milk_lsp.agents.local.reply.runaway import RunawayWatch, end_reply
from milk_lsp.agents.local.reply.stream import (
    LocalModelError,
    Reply,
    final_reply_notices,
    length_notice,
    usage_event,
)
from milk_lsp.agents.local.reply.tool_calls import (
    MergedToolCall,
    TextCallGate,
    merge_tool_call_deltas,
    parse_text_tool_calls,
    parse_tool_arguments,
)
from milk_lsp.agents.local.reply.written import embedded_call
from milk_lsp.agents.local.rounds import (
    Call,
    Outcome,
    Paragraphs,
    escalation_reason,
    new_call_id,
    plan_note,
    prepare_calls,
    request_body,
    spec_names,
)
from milk_lsp.agents.local.tool_specs import (
    EDIT_FILE,
    ESCALATE_TOOL_NAME,
    ESCALATE_TOOL_SPEC,
    LocalTools,
    ToolOutcomeLike,
)
from milk_lsp.text import one_line

__all__ = [
    "ESCALATE_TOOL_NAME",
    "ESCALATE_TOOL_SPEC",
    "LocalAgent",
    "LocalModelError",
    "LocalSettings",
    "LocalTools",
    "ToolOutcomeLike",
]

logger = logging.getLogger(__name__)


_RAW_ARGS_CHARS = 500
"""Characters of invalid tool arguments quoted back to the model."""
RAN_ON = (
    "milk: your reply ran on and milk ended it, so it is no answer yet. Give your answer"
    " again, short, with finish, citing each line it rests on. Why it was ended: "
)
"""Sent once when milk ended a final reply as it ran on (`runaway`): the kept text may be a
plan ("To answer this, I need to find…") or half an answer, and only the files could tell."""
RAN_ON_SHOWN = "milk asked the local model for its answer again: milk had ended its reply"
RAN_ON_TWICE = "the local model's reply ran on again and milk ended it, with no answer: "


# -- the agent ---------------------------------------------------------------------------------


class LocalAgent:
    """The tool loop over one endpoint's `LocalClient`; `run` is one turn."""

    def __init__(
        self, settings: LocalSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.client = LocalClient(settings, transport=transport)

    @property
    def settings(self) -> LocalSettings:
        return self.client.settings

    @property
    def model_in_use(self) -> str | None:
        """The model the last turn ran on, if known (a reloaded chat's badge names it)."""
        return self.client.model_in_use

    async def aclose(self) -> None:
        await self.client.aclose()

    async def list_models(self) -> list[str]:
        """The model ids `GET {base_url}/models` lists. Raises `LocalModelError`."""
        return await self.client.list_models()

    async def probe(self) -> tuple[bool, str | None, str | None]:
        """(reachable, model, error message) for `milk/status` and `doctor`."""
        return await self.client.probe()

    async def run(
        self,
        messages: list[dict[str, Any]],
        tools: LocalTools | None,
        *,
        offer_escalation: bool,
        cut_short: bool = False,
        change_requested: bool = False,
        look_first: bool = False,
        judge: AnswerJudge | None = None,
        check: EditCheck | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """One turn: stream replies and run tools until a reply has no tool calls.

        `messages` (system prompt, history, user message) is not modified. Ends with
        `TurnDone`, `EscalationRequested`, `LocalGaveUp` (a hand-off signal, see
        `local_watch`) or `TurnFailed`; raises only on cancellation. `cut_short` stops the
        loop at the first mid-turn signal (route `auto`, where Claude can take over).
        `change_requested`: the request spells out a change (`edit_intent.
        spelled_out_change`): a turn changing no file did not do it. `look_first`: the
        request names what this workspace defines and nothing attached
        covers it, so the first request requires a tool call (a server that ignores or
        refuses that gets milk's own look instead, remembered per model). `judge` checks
        the final answer;
        `check` runs `local.checkCommand` after edits before the turn counts as done.
        """
        try:
            async with aclosing(
                self._turn(
                    messages,
                    tools,
                    offer_escalation,
                    cut_short,
                    change_requested,
                    look_first,
                    judge,
                    check,
                )
            ) as events:
                async for event in events:
                    yield event
        except LocalModelError as exc:
            logger.info("local turn failed (%s): %s", exc.reason, exc.message)
            self.client.forget_model()
            yield TurnFailed(exc.reason, exc.message)
        except Exception as exc:
            logger.exception("local turn failed unexpectedly")
            yield TurnFailed(
                FailureReason.INTERNAL,
                f"the local agent failed unexpectedly: {type(exc).__name__}: {exc}",
            )

    async def _turn(
        self,
        messages: list[dict[str, Any]],
        tools: LocalTools | None,
        offer_escalation: bool,
        cut_short: bool,
        change_requested: bool,
        look_first: bool,
        judge: AnswerJudge | None,
        check: EditCheck | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        model = await self.client.resolve_model()
        check_fed_back = False
        check_failure: str | None = None
        specs = list(tools.specs()) if tools is not None else []
        if offer_escalation:
            specs.append(ESCALATE_TOOL_SPEC)
        if tools is not None and tools.names:
            specs.append(FINISH_TOOL_SPEC)
        offered = frozenset(spec_names(specs))
        paragraphs = Paragraphs()
        watch = TurnWatch(
            offered,
            cut_short,
            escalation_tool=ESCALATE_TOOL_NAME if offer_escalation else "",
            change_requested=change_requested,
        )
        conversation = list(messages)
        used_ids: set[str] = set()
        max_rounds = self.settings.max_tool_rounds
        rounds = 0
        noticed_text_calls, ran_on_asked = False, False
        require_call = (
            look_first and bool(tools is not None and tools.names) and self.client.obeys(model)
        )
        if look_first and not require_call and judge is not None:
            look = await judge.look()  # a server known to ignore `tool_choice`: milk looks
            for seen in look.events:
                yield seen
            if look.found:
                conversation.append({"role": "user", "content": look.message})
                yield NoticeEvent("info", look.notice)
        tool_outputs: list[str] = []
        while True:
            body = request_body(model, conversation, specs, self.settings, EDIT_FILE in offered)
            held: list[str] | None = None
            if require_call:  # the answer waits until the model has looked: none is shown
                body["tool_choice"] = "required"
                held = []
            reply = Reply()
            paragraphs.new_reply()
            gate = TextCallGate(offered) if self.settings.text_tool_calls and offered else None
            runaway, ended = RunawayWatch(offered, calls=gate is not None), None
            try:
                async with aclosing(self.client.stream_reply(body, reply)) as stream:
                    async for event in stream:
                        if isinstance(event, TextDelta):  # a loop, or text after a call, ends it
                            event, ended = runaway.take(event)
                        if held is not None and isinstance(event, TextDelta):
                            held.append(event.text)
                        elif gate is not None and isinstance(event, TextDelta):
                            shown = gate.feed(event.text)
                            if shown:
                                yield paragraphs.delta(shown)
                        elif isinstance(event, TextDelta):
                            if event.text:
                                yield paragraphs.delta(event.text)
                        else:
                            yield event
                        if ended is not None:
                            yield end_reply(reply, ended, body, runaway.pieces)
                            break
            except LocalModelError as exc:
                if require_call and refuses_tool_choice(exc.http_status, exc.message):
                    # The server refuses `tool_choice`: milk looks itself, and remembers.
                    self.client.ignores_tool_choice(model)
                    require_call = False
                    if judge is not None:  # the unlooked answer goes unseen; milk's look instead
                        look = await judge.look()
                        for seen in look.events:
                            yield seen
                        conversation.append({"role": "user", "content": look.message})
                        yield NoticeEvent("info", look.notice)
                    continue
                if gate is not None and gate.holding and gate.held:
                    yield paragraphs.delta(gate.release())  # what arrived before the failure
                raise

            merged = merge_tool_call_deltas(reply.fragments)
            text_calls: list[MergedToolCall] | None = None
            if gate is not None and gate.holding and gate.held:
                if not reply.fragments:
                    text_calls = parse_text_tool_calls(gate.held, offered)
                if text_calls is None:
                    yield paragraphs.delta(gate.release())
            if reply.usage is not None:
                yield usage_event(reply.usage)
            plan_rest, ended_at_call = 0, bool(ended and ended.call)
            if not merged and not text_calls and gate is not None:
                embedded = embedded_call("".join(reply.text), offered)
                if embedded is not None:  # shown already; run it rather than leave it inert
                    text_calls = [embedded.call]
                    plan_rest = embedded.written - 1
            if text_calls:
                merged = text_calls
                if not noticed_text_calls:
                    noticed_text_calls = True
                    yield NoticeEvent(
                        "info",
                        "the local model wrote its tool call as text; milk ran it as a tool "
                        "call (turn this off with local.textToolCalls)",
                    )
            named = [call for call in merged if call.name]
            unnamed = len(merged) - len(named)
            finish: Finish | None = None
            if named and all(call.name == FINISH_TOOL_NAME for call in named):
                # the model ended its turn: this reply is its final one, judged as any is
                finish = finish_of(parse_tool_arguments(named[0].arguments)[0])
                named = []
            else:  # `finish` beside other calls waits for their results
                named = [call for call in named if call.name != FINISH_TOOL_NAME]
            if held is not None:
                require_call = False
                if not named:  # the server ignored `tool_choice`: this answer did not look
                    self.client.ignores_tool_choice(model)
                    if judge is not None:  # the unlooked answer goes unseen; milk's look instead
                        look = await judge.look()
                        for seen in look.events:
                            yield seen
                        conversation.append({"role": "user", "content": look.message})
                        yield NoticeEvent("info", look.notice)
                    continue
                if "".join(held).strip() and not text_calls:  # said before its call
                    yield paragraphs.delta("".join(held))
            if unnamed:
                yield NoticeEvent(
                    "warning",
                    f"ignored {unnamed} tool call(s) without a function name from the local model",
                )
            if not named:
                answer = "".join(reply.text)
                if finish is not None:
                    answer = prose_before_finish(answer)
                    if finish.outcome == "cannot":
                        yield self._cannot(finish, offer_escalation, watch, used_ids)
                        return
                    if not answer.strip() and finish.summary:  # its summary is its answer
                        answer = finish.summary
                        yield paragraphs.delta(answer)
                grounded = (
                    judge.judge(answer, tool_outputs, looked=bool(watch.tried), finish=finish)
                    if judge is not None
                    else None
                )
                verdict = watch.final_reply(
                    answer,
                    reasoned=reply.reasoned,
                    grounded=grounded,
                    cut=reply.finish_reason == "length",
                    finish=finish,
                )
                if isinstance(verdict, Nudge) and rounds < max_rounds:
                    rounds += 1
                    conversation.append({"role": "assistant", "content": answer})
                    conversation.append({"role": "user", "content": verdict.text})
                    yield NoticeEvent("info", verdict.shown)
                    continue
                if isinstance(verdict, WrittenEscalation):
                    call_id = new_call_id(used_ids)
                    yield ToolCallEvent(
                        call_id,
                        ESCALATE_TOOL_NAME,
                        {"reason": verdict.reason},
                        ToolStatus.COMPLETED,
                    )
                    yield EscalationRequested(reason=verdict.reason, tool_call_id=call_id)
                    return
                if isinstance(verdict, LocalGaveUp):
                    if reply.finish_reason == "length":
                        yield length_notice()
                    yield verdict
                    return
                if reply.stopped is not None and finish is None:
                    # milk ended it as it ran on: what it kept may be a plan or half an answer
                    if ran_on_asked or rounds >= max_rounds:
                        yield watch.gave_up(LocalSignal.NO_ANSWER, RAN_ON_TWICE + reply.stopped)
                        return
                    ran_on_asked, rounds = True, rounds + 1
                    conversation.append({"role": "assistant", "content": answer})
                    conversation.append({"role": "user", "content": RAN_ON + reply.stopped})
                    yield NoticeEvent("info", RAN_ON_SHOWN)
                    continue
                if check is not None and check.pending_check() is not None:
                    check_failure = None  # new edits: what the check says now is what counts
                    checking = run_check(check, f"milk-check-{secrets.token_hex(4)}")
                    async with aclosing(checking) as check_steps:
                        async for check_step in check_steps:
                            if isinstance(check_step, str):
                                check_failure = check_step
                            else:
                                yield check_step
                if check_failure is not None and not check_fed_back:
                    check_fed_back = True  # once: the model may fix what the check found
                    conversation.append({"role": "assistant", "content": answer})
                    conversation.append({"role": "user", "content": check_message(check_failure)})
                    continue
                if check_failure is not None:
                    yield watch.check_failed(check_failure)
                    return
                for notice in final_reply_notices(reply):
                    yield notice
                if grounded is not None and (grounded.citations or grounded.proposed):
                    yield paragraphs.delta(grounded.sources)  # the answer's checked sources
                    yield CitationsEvent(grounded.citations, grounded.proposed)
                yield TurnDone()
                return

            calls = prepare_calls(named, used_ids)
            escalation = next(
                (c for c in calls if offer_escalation and c.name == ESCALATE_TOOL_NAME), None
            )
            over_limit = rounds >= max_rounds
            if over_limit and escalation is None:
                yield watch.round_limit(max_rounds)
                return
            rounds += 1
            conversation.append(
                {
                    "role": "assistant",
                    # a call written as text goes back as the call alone, not as its JSON too
                    "content": "" if text_calls else "".join(reply.text),
                    "tool_calls": [call.wire() for call in calls],
                }
            )
            if not over_limit:
                for call in calls:
                    if escalation is not None and call.name == ESCALATE_TOOL_NAME:
                        continue  # the first escalation call wins; it is handled below
                    stop = watch.before_call(call.name, call.arguments)
                    if isinstance(stop, MadeAlready):
                        yield ToolCallEvent(
                            call.id, call.name, call.display_input, ToolStatus.COMPLETED
                        )
                        yield ToolResultEvent(call.id, f"not run: {stop.detail}", False)
                        yield NoticeEvent("info", stop.detail[0].upper() + stop.detail[1:])
                        async for ending in self._checked_end(check, watch):
                            yield ending
                        return
                    if stop is not None:
                        yield ToolCallEvent(
                            call.id, call.name, call.display_input, ToolStatus.FAILED
                        )
                        yield ToolResultEvent(call.id, f"not run: {stop.detail}", True)
                        yield stop
                        return
                    repeated = watch.repeat_notice(call.name, call.arguments)
                    if repeated is not None:
                        yield NoticeEvent("warning", repeated)
                    outcome = Outcome("")
                    async with aclosing(self._run_tool(call, tools, offer_escalation)) as steps:
                        async for step in steps:
                            if isinstance(step, Outcome):
                                outcome = step
                            else:
                                yield step
                    watch.after_call(
                        call.name,
                        call.arguments,
                        is_error=outcome.is_error,
                        denied=outcome.denied,
                        output=outcome.output,
                        made_already=outcome.made_already,
                    )
                    if not (outcome.is_error or outcome.denied):  # evidence: what it saw and did
                        tool_outputs.append(outcome.output)
                        tool_outputs.append(json.dumps(call.arguments, ensure_ascii=False))
                    conversation.append(
                        {
                            "role": "tool",
                            "tool_call_id": call.id,
                            "content": outcome.output + plan_note(plan_rest, ended_at_call),
                        }
                    )
            if escalation is not None:
                reason = escalation_reason(escalation)
                yield ToolCallEvent(
                    escalation.id,
                    escalation.name,
                    escalation.arguments
                    if escalation.arguments is not None
                    else {"reason": reason},
                    ToolStatus.COMPLETED,
                )
                yield EscalationRequested(reason=reason, tool_call_id=escalation.id)
                return

    @staticmethod
    def _cannot(
        finish: Finish, offer_escalation: bool, watch: TurnWatch, used_ids: set[str]
    ) -> EscalationRequested | LocalGaveUp:
        """`finish(cannot)`: the model's own verdict. Where Claude may take over it is an
        escalation with the model's reason; on route local the turn ends saying why."""
        why = finish.summary or "the local model said it cannot do this"
        if offer_escalation:
            return EscalationRequested(reason=why, tool_call_id=new_call_id(used_ids))
        return watch.gave_up(
            LocalSignal.NO_ANSWER, f"the local model said it cannot do this: {one_line(why)}"
        )

    @staticmethod
    async def _checked_end(
        check: EditCheck | None, watch: TurnWatch
    ) -> AsyncGenerator[AgentEvent, None]:
        """End a turn whose edits are in place: `local.checkCommand` first when edits are
        unchecked (its failure, with no model turn left to fix it, is `check_failed`)."""
        if check is not None and check.pending_check() is not None:
            checking = run_check(check, f"milk-check-{secrets.token_hex(4)}")
            async with aclosing(checking) as steps:
                async for step in steps:
                    if isinstance(step, str):
                        yield watch.check_failed(step)
                        return
                    yield step
        yield TurnDone()

    async def _run_tool(
        self, call: Call, tools: LocalTools | None, offer_escalation: bool
    ) -> AsyncGenerator[AgentEvent | Outcome, None]:
        """Run one call: its events, then its `Outcome` (for the tool message) last."""
        if call.arguments is None:
            outcome = Outcome(
                f"error: the arguments of your {call.name} call were {call.invalid}, so "
                f"nothing was run. Call {call.name} again with a JSON object as its "
                f"arguments. You sent: {call.raw_arguments[:_RAW_ARGS_CHARS]}",
                is_error=True,
            )
            yield ToolCallEvent(call.id, call.name, call.display_input, ToolStatus.FAILED)
            yield ToolResultEvent(call.id, outcome.output, True)
            yield outcome
            return
        if tools is None or call.name not in tools.names:
            available = sorted(tools.names) if tools is not None else []
            if offer_escalation:
                available.append(ESCALATE_TOOL_NAME)
            if call.name == ESCALATE_TOOL_NAME:
                text = f"error: {ESCALATE_TOOL_NAME} is not available in this turn"
            else:
                text = f"error: there is no tool named {call.name!r}"
            outcome = Outcome(
                f"{text}. Available tools: {', '.join(available) or 'none'}.", is_error=True
            )
            yield ToolCallEvent(call.id, call.name, call.arguments, ToolStatus.FAILED)
            yield ToolResultEvent(call.id, outcome.output, True)
            yield outcome
            return
        yield ToolCallEvent(call.id, call.name, call.arguments, ToolStatus.RUNNING)
        try:
            result = await tools.call(call.id, call.name, call.arguments)
            outcome = Outcome(
                str(result.output),
                bool(result.is_error),
                bool(result.denied),
                bool(result.made_already),
            )
        except Exception as exc:
            logger.exception("tool %s raised", call.name)
            outcome = Outcome(
                f"error: the {call.name} tool failed: {type(exc).__name__}: {exc}", True
            )
        if outcome.denied:
            status = ToolStatus.DENIED
        elif outcome.is_error:
            status = ToolStatus.FAILED
        else:
            status = ToolStatus.COMPLETED
        yield ToolCallEvent(call.id, call.name, call.arguments, status)
        yield ToolResultEvent(call.id, outcome.output, outcome.is_error or outcome.denied)
        yield outcome

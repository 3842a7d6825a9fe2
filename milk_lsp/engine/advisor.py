"""The advisor route (issue 32): Claude plans, the local model does.

Claude Code is asked for a plan only, in its plan permission mode (it may read the
workspace, it may not edit or run), as a short checklist whose steps name their files. The
local agent then carries the steps out one at a time, each a local part of the same turn,
judged by evidence as any local turn is (the edit parsed, the change the step quotes made,
the check command). A step the local agent fails goes to Claude alone, in the resumed
conversation, with the step and what failed; the steps after it go on locally. The user
sees the plan as `plan` updates whose steps tick as they are done, and by whom. It stays
one turn: one checkpoint before and after (one review, one undo), one cancel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from milk_lsp.agents.base import EscalationRequested, FailureReason, LocalGaveUp
from milk_lsp.engine.claude_part import ClaudePart
from milk_lsp.engine.local.part import BRIEF_MAX_CHARS, LocalPart
from milk_lsp.engine.routing import Plan
from milk_lsp.engine.turn import Turn
from milk_lsp.sessions.model import Agent, Session
from milk_lsp.sessions.service import Sessions
from milk_lsp.text import cut, one_line
from milk_lsp.wire import PlanStep, StepStatus, StopReason

MAX_STEPS = 8
"""Steps of a plan carried out at most (the rest are named in the plan's last step)."""
STEP_CHARS = 600

PLAN_REQUEST = """milk's advisor mode: change nothing yourself. Read what you need, then \
answer with a plan only: a numbered checklist of at most {max_steps} steps, one line each, in \
the order to do them. Each step names its file(s) as a relative path in backticks and says \
the exact change: for an edit, the exact text to replace and what replaces it, each in \
backticks. A small local model carries the steps out one at a time and sees only its step, \
so each step must stand on its own. No code blocks, no text after the list.

The request:
{request}"""

STEP_REQUEST = """(milk: step {number} of {total} of a plan for the request "{request}"; \
the other steps are done apart.)

{step}"""
"""What the local model gets for a step: the step as Claude wrote it, last (small models do
what they read last), after one line of where it stands. The whole plan made Qwen2.5-Coder-1.5B
edit for the other steps too."""

CLAUDE_STEP = """The local model could not do step {number} of your plan ({why}). Do this \
step alone, then stop, leaving the other steps to the local model: {step}"""

_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?:\d{1,2}[.)]|[-*•])[ \t]+(?:\[[ xX]\][ \t]*)?(?P<text>\S.*)$"
)


def plan_steps(text: str, limit: int = MAX_STEPS) -> list[str]:
    """The steps of a checklist Claude wrote: its top-level items, numbered or bulleted, in
    order; a nested item or a wrapped line joins the step above it. Beyond `limit`, the
    remaining items join the last step."""
    steps: list[str] = []
    top: int | None = None
    for line in text.splitlines():
        match = _ITEM.match(line)
        indent = len(match["indent"].expandtabs(4)) if match else None
        if match and (top is None or (indent is not None and indent <= top)):
            top = indent if top is None else top
            steps.append(match["text"].strip())
        elif steps and line.strip() and (match or line[:1].isspace()):
            steps[-1] = f"{steps[-1]} {line.strip()}"
        elif steps and not line.strip():
            continue
        elif steps:
            break  # the list ended: text after it is no step
    if len(steps) > limit:
        steps[limit - 1 :] = ["; ".join(steps[limit - 1 :])]
    return [cut(step, STEP_CHARS) for step in steps]


@dataclass
class Checklist:
    """The plan as the user sees it; `show()` sends it whole as a `plan` update."""

    steps: list[PlanStep] = field(default_factory=list)

    def show(self, turn: Turn) -> None:
        turn.plan = [step.model_copy() for step in self.steps]
        turn.update("plan", steps=[step.to_wire() for step in self.steps])

    def mark(self, turn: Turn, index: int, status: StepStatus, agent: Agent | None) -> None:
        step = self.steps[index]
        step.status = status
        step.agent = agent.value if agent is not None else None
        self.show(turn)


class Advisor:
    """Runs an advisor turn's parts: Claude's plan, then each step locally (or by Claude)."""

    def __init__(
        self,
        local: LocalPart,
        claude: ClaudePart,
        sessions: Sessions,
        claude_path: Callable[[], str | None],
    ) -> None:
        """`claude_path` gives the `claude` CLI the settings run (None: not found)."""
        self._local = local
        self._claude = claude
        self._sessions = sessions
        self._claude_path = claude_path

    async def run(
        self, session: Session, turn: Turn, text: str, plan: Plan, display_text: str
    ) -> StopReason:
        """The turn's parts; `text` is the request with its attachments. Cancelling stops
        the running step (its agent and tools) and the steps after it."""
        if not turn.config.local.memory_tags:  # the request is the goal, not a step
            turn.set_need(display_text, news_for_claude=False)
        asked = PLAN_REQUEST.format(max_steps=MAX_STEPS, request=text)
        stop = await self._claude.run(
            session, turn, asked, "user", plan.escalation_reason, plan_only=True
        )
        turn.plan_cost_usd = turn.usage.cost_usd
        if stop != "end_turn":
            return stop
        steps = plan_steps(self._plan_text(turn))
        if not steps:
            turn.notice(
                "warning",
                "Claude wrote no checklist to carry out; its answer is the turn's answer.",
            )
            return "end_turn"
        checklist = Checklist([PlanStep(content=step, status="pending") for step in steps])
        checklist.show(turn)
        failed: list[str] = []
        for index, step in enumerate(steps):
            number = index + 1
            checklist.mark(turn, index, "in_progress", Agent.LOCAL)
            self._say(turn, f"step {number} of {len(steps)}: local model")
            ask = STEP_REQUEST.format(
                number=number, total=len(steps), request=one_line(display_text), step=step
            )
            why = await self._local_step(session, turn, ask, plan, step)
            if why is None:
                checklist.mark(turn, index, "completed", Agent.LOCAL)
                continue
            if self._claude_path() is None:
                checklist.mark(turn, index, "failed", Agent.LOCAL)
                failed.append(f"step {number} ({why}; Claude Code was not found to do it)")
                continue
            checklist.mark(turn, index, "in_progress", Agent.CLAUDE)
            turn.clear_failure()
            self._say(turn, f"step {number} of {len(steps)}: Claude")
            self._brief_claude(session, turn, number, why)
            stop = await self._claude.run(
                session,
                turn,
                CLAUDE_STEP.format(number=number, why=why, step=step),
                "fallback",
                f"step {number} of the plan: {why}",
            )
            if stop == "end_turn":
                checklist.mark(turn, index, "completed", Agent.CLAUDE)
                continue
            checklist.mark(turn, index, "failed", Agent.CLAUDE)
            return stop
        if failed:
            done = len(steps) - len(failed)
            turn.failure = (
                FailureReason.LOCAL_FAILED,
                f"{'; '.join(failed).capitalize()}. {done} of {len(steps)} steps are done: "
                "make that step yourself, or install Claude Code (or set claude.path) and "
                "ask again; undo takes the turn's steps back",
            )
            return "error"
        return "end_turn"

    @staticmethod
    def _say(turn: Turn, message: str) -> None:
        turn.bridge.progress_report(turn.progress_token, message)

    def _brief_claude(self, session: Session, turn: Turn, number: int, why: str) -> None:
        """What the resumed Claude conversation learns besides the step: the brief (the
        step and why the local model failed it) and this turn's local parts so far."""
        session.escalation_brief = cut(
            f"The local model could not do step {number} of your plan: {why}", BRIEF_MAX_CHARS
        )
        pending = [part.record(turn.turn_id) for part in turn.parts if part.agent is Agent.LOCAL]
        session.last_local_summary = self._sessions.local_brick(session, pending[::-1])

    async def _local_step(
        self, session: Session, turn: Turn, ask: str, plan: Plan, step: str
    ) -> str | None:
        """One step by the local agent; None when it was done, else why it was not (the
        judge's words: an edit that does not parse, a change not made, ...)."""
        local_plan = Plan(Agent.LOCAL, "advise", plan.reason, offer_escalation=True)
        turn.clear_failure()
        outcome = await self._local.run(session, turn, ask, local_plan, step)
        if isinstance(outcome, LocalGaveUp):
            return one_line(outcome.detail)
        if isinstance(outcome, EscalationRequested):
            return f"the local model asked for Claude: {one_line(outcome.reason)}"
        if turn.failure is not None:
            return one_line(turn.failure[1])
        return None

    @staticmethod
    def _plan_text(turn: Turn) -> str:
        """Claude's plan: what it gave `ExitPlanMode` when it called it, else its answer."""
        part = turn.part_of(Agent.CLAUDE)
        if part is None:
            return ""
        for call in part.tool_calls.values():
            planned = call.input.get("plan") if call.name == "ExitPlanMode" else None
            if isinstance(planned, str) and planned.strip():
                return planned
        return part.text

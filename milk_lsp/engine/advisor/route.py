"""The advisor route (issues 32 and 39): Claude plans from a brief, the local side does.

milk locates what the request is about (the guided turn's `Locator`: the definitions and
lines it names, a repository map) and asks Claude for a plan in ONE small request without
tools (`ask.ask_brief`): exact replacements `{path, old_text, new_text, why}`, at most 8,
or once a list of what it needs to see first. The reply is checked before anything changes
(`shape`). Each step then runs in order: one whose old text is in its file exactly once is
applied by milk itself (asked and verified as any edit: `guided.apply`); any other goes to
the local agent, judged by evidence as any local turn. A step the local side fails goes to
Claude as one fresh small request (the step, the file's lines around it, why it failed),
whose answer is the same checked shape, applied and verified by milk. No Claude Code
conversation is resumed. It stays one turn: one checkpoint (one review, one undo), one
cancel; the user sees the plan as `plan` updates whose steps tick as they are done, and by
whom.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from milk_lsp.agents.base import (
    AgentEvent,
    EscalationRequested,
    FailureReason,
    LocalGaveUp,
    TextDelta,
)
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.engine.advisor import brief, costs
from milk_lsp.engine.advisor.ask import ask_brief
from milk_lsp.engine.advisor.shape import (
    STEP_EDITS_MAX,
    BriefReply,
    NotTheShape,
    StepEdit,
    check_steps,
    unmade,
    unnumbered,
)
from milk_lsp.engine.advisor.shape import parse_reply as parse_brief_reply
from milk_lsp.engine.agent_host import TurnHost
from milk_lsp.engine.claude_part import ClaudePart
from milk_lsp.engine.local.part import LocalPart
from milk_lsp.engine.routing import Plan
from milk_lsp.engine.turn import Turn
from milk_lsp.guided.apply import Applied, apply_edits, check_after, check_before
from milk_lsp.guided.locate import Budget
from milk_lsp.guided.project_check import CheckOutcome, ProjectCheck, check_for, named_lines
from milk_lsp.sessions.model import Agent, Session
from milk_lsp.sessions.service import Sessions
from milk_lsp.text import cut, fenced, one_line
from milk_lsp.wire import PlanStep, StepStatus, StopReason

BRIEF_BUDGET = Budget(chunks=4500, map=1200)
"""What of the workspace Claude's brief shows, in characters (about 1,400 tokens at most):
enough for exact old text around what the request names; more is one `needs` away."""

STEP_REQUEST = """(milk: step {number} of {total} of a plan for the request "{request}"; \
the other steps are done apart.)

{step}"""
"""What the local model gets for a step: the step, last (small models do what they read
last), after one line of where it stands."""


@dataclass
class Checklist:
    """The plan as the user sees it; `show()` sends it whole as a `plan` update."""

    steps: list[PlanStep] = field(default_factory=list)

    def show(self, turn: Turn) -> None:
        turn.plan = [step.model_copy() for step in self.steps]
        turn.update("plan", steps=[step.to_wire() for step in self.steps])

    def mark(
        self,
        turn: Turn,
        index: int,
        status: StepStatus,
        agent: Agent | None,
        *,
        by_milk: bool = False,
    ) -> None:
        step = self.steps[index]
        step.status = status
        step.agent = agent.value if agent is not None else None
        step.by_milk = True if by_milk else None
        self.show(turn)


def step_text(step: StepEdit) -> str:
    """A plan step in words for the local model: why, then the exact change."""
    why = (step.why.strip() or "Make this edit").rstrip(".")
    if "\n" not in step.old_text + step.new_text and "`" not in step.old_text + step.new_text:
        return f"{why}: in `{step.path}`, change `{step.old_text}` to `{step.new_text}`."
    old, new = fenced(step.old_text), fenced(step.new_text)
    return f"{why}. In `{step.path}`, replace:\n{old}with:\n{new}"


class Advisor:
    """Runs an advisor turn's parts: Claude's plan, then each step by milk, the local model
    or Claude."""

    def __init__(
        self,
        local: LocalPart,
        claude: ClaudePart,
        sessions: Sessions,
        claude_path: Callable[[], str | None],
    ) -> None:
        """`claude_path` gives the `claude` CLI the settings run (None: not found);
        `sessions` the folder's figures (`costs`)."""
        self._local = local
        self._claude = claude
        self._sessions = sessions
        self._claude_path = claude_path

    async def pays(self, turn: Turn, workspace: str) -> bool:
        """Whether a hand-off takes the advisor route (`costs.pays`); when the folder's
        history says it does not save, a notice says so and why."""
        saves, figures = costs.pays(await costs.folder_stats(self._sessions, workspace))
        if not saves:
            turn.notice(
                "info",
                f"milk gave this turn to Claude Code rather than as a plan: {figures} "
                "(milk/stats).",
            )
        return saves

    async def run(
        self, session: Session, turn: Turn, text: str, plan: Plan, display_text: str
    ) -> StopReason:
        """The turn's parts; `text` is the request with its attachments. Cancelling stops
        the running request or step (its agent, tools or Claude process) and the rest."""
        if not turn.config.local.memory_tags:  # the request is the goal, not a step
            turn.set_need(display_text, news_for_claude=False)
        before = costs.estimate(await costs.folder_stats(self._sessions, session.workspace_folder))
        if before is not None:
            turn.notice("info", f"Before Claude's plan: {before}.")
        try:
            return await self._run(session, turn, text, plan, display_text)
        finally:
            after = costs.spent(turn.plan_cost_usd, turn.usage.cost_usd)
            if after is not None:
                turn.notice("info", f"{after}.")

    async def _run(
        self, session: Session, turn: Turn, text: str, plan: Plan, display_text: str
    ) -> StopReason:
        reply = await self._plan(session, turn, text, plan, display_text)
        if reply is None:
            return "error"
        steps = reply.steps
        checklist = Checklist([PlanStep(content=s.shown(), status="pending") for s in steps])
        checklist.show(turn)
        root = Path(session.workspace_folder)
        check = check_for(root)
        baseline = await check_before(
            self._tools(session, turn), check, root, PLAN_STEPS, lambda m: self._say(turn, m)
        )
        failed: list[str] = []
        for index, step in enumerate(steps):
            number = index + 1
            why = await self._local_side(session, turn, plan, checklist, index, step, display_text)
            if why is None:
                continue
            if why.startswith(DENIED):
                checklist.mark(turn, index, "failed", Agent.LOCAL)
                failed.append(f"step {number} ({why})")
                continue
            if self._claude_path() is None:
                checklist.mark(turn, index, "failed", Agent.LOCAL)
                failed.append(f"step {number} ({why}; Claude Code was not found to do it)")
                continue
            checklist.mark(turn, index, "in_progress", Agent.CLAUDE)
            turn.clear_failure()
            self._say(turn, f"step {number} of {len(steps)}: Claude")
            problem = await self._claude_step(session, turn, number, step, why, display_text)
            if problem is None:
                checklist.mark(turn, index, "completed", Agent.CLAUDE)
                continue
            checklist.mark(turn, index, "failed", Agent.CLAUDE)
            if turn.failure is not None:  # Claude did not answer: the turn ends here
                return "error"
            failed.append(f"step {number} ({problem})")
        if not failed and check is not None and baseline is not None:
            problem = await self._plan_check(session, turn, check, baseline, display_text)
            if problem is not None:
                turn.failure = (
                    FailureReason.LOCAL_FAILED,
                    f"The plan's {len(steps)} steps are made, but {problem}. Fix it yourself, "
                    "or ask again; undo takes the turn's steps back",
                )
                return "error"
        if failed:
            done = len(steps) - len(failed)
            turn.failure = (
                FailureReason.LOCAL_FAILED,
                f"{'; '.join(failed).capitalize()}. {done} of {len(steps)} steps are done: "
                "make the rest yourself, or ask again; undo takes the turn's steps back",
            )
            return "error"
        return "end_turn"

    # -- the plan ----------------------------------------------------------------------------

    async def _plan(
        self, session: Session, turn: Turn, text: str, plan: Plan, display_text: str
    ) -> BriefReply | None:
        """Claude's checked plan, from one brief (two when it asks for more); None: the
        turn's failure says why, and no file changed."""
        self._say(turn, "locating what the request is about…")
        tools = self._tools(session, turn)
        locator = await self._local.locator(session.workspace_folder)
        located = await locator.locate(display_text, tools, BRIEF_BUDGET)
        asked = brief.plan_brief(text, located, session.escalation_brief)
        self._say(turn, "asking Claude for a plan…")
        answer = await ask_brief(
            self._claude,
            session,
            turn,
            system=brief.PLAN_SYSTEM,
            prompt=asked,
            by="user",
            reason=plan.escalation_reason,
        )
        reply = None if answer.failed else self._parsed(turn, answer.text, needs_allowed=True)
        if reply is not None and reply.needs:
            given = await locator.locate(" ".join(reply.needs), tools, BRIEF_BUDGET)
            missing = [n for n in reply.needs if not _found(n, given.shown, given.paths)]
            self._say(turn, "giving Claude what it asked for…")
            answer = await ask_brief(
                self._claude,
                session,
                turn,
                system=brief.PLAN_SYSTEM,
                prompt=brief.needs_brief(asked, reply.needs, given, missing),
                by="user",
                reason=f"{plan.escalation_reason}: the code Claude asked for",
            )
            reply = None if answer.failed else self._parsed(turn, answer.text, needs_allowed=False)
        turn.plan_cost_usd = turn.usage.cost_usd
        if reply is None:
            return None
        texts = {step.path: await tools.text_of(step.path) for step in reply.steps}
        unnumbered(reply, texts)
        problems = check_steps(reply, texts)
        if problems:
            turn.failure = (
                FailureReason.CLAUDE_FAILED,
                f"Claude's plan does not fit the files: {'; '.join(problems)}. No file was "
                "changed; ask again, or send the request to Claude",
            )
            return None
        session.escalation_brief = ""  # delivered
        listed = "\n".join(f"{n}. {s.shown()}" for n, s in enumerate(reply.steps, 1))
        turn.apply(TextDelta(f"Plan:\n{listed}\n"))
        turn.flush_text()
        return reply

    @staticmethod
    def _parsed(turn: Turn, text: str, *, needs_allowed: bool) -> BriefReply | None:
        try:
            return parse_brief_reply(text, needs_allowed=needs_allowed)
        except NotTheShape as exc:
            turn.failure = (
                FailureReason.CLAUDE_FAILED,
                f"{exc}. No file was changed; ask again, or send the request to Claude",
            )
            return None

    # -- the steps ---------------------------------------------------------------------------

    async def _local_side(
        self,
        session: Session,
        turn: Turn,
        plan: Plan,
        checklist: Checklist,
        index: int,
        step: StepEdit,
        request: str,
    ) -> str | None:
        """One step by milk (an old text its file holds once, or every occurrence when the
        step says `replace_all`) or else the local agent;
        None when it was done, else why not (`DENIED…` when the user denied the edit)."""
        number, total = index + 1, len(checklist.steps)
        tools = self._tools(session, turn)
        now = await tools.text_of(step.path)
        creates = step.old_text == "" and now is None
        found = 0 if now is None or not step.old_text else now.count(step.old_text)
        if creates or found == 1 or (found and step.replace_all):
            checklist.mark(turn, index, "in_progress", Agent.LOCAL, by_milk=True)
            self._say(turn, f"step {number} of {total}: milk applies it")
            if not turn.parts or turn.part.agent is not Agent.LOCAL:
                turn.start_part(Agent.LOCAL)
            applied = await self._apply(turn, tools, session, [step], "Claude's step")
            if not applied.problems and not applied.denied:
                checklist.mark(turn, index, "completed", Agent.LOCAL, by_milk=True)
                return None
            if applied.denied:
                return f"{DENIED} the edit of {step.path}"
            return f"milk applied it and its check failed: {'; '.join(applied.problems)}"
        checklist.mark(turn, index, "in_progress", Agent.LOCAL)
        self._say(turn, f"step {number} of {total}: local model")
        words = step_text(step)
        ask = STEP_REQUEST.format(number=number, total=total, request=one_line(request), step=words)
        local_plan = Plan(Agent.LOCAL, "advise", plan.reason, offer_escalation=True)
        turn.clear_failure()
        outcome = await self._local.run(session, turn, ask, local_plan, words)
        if isinstance(outcome, LocalGaveUp):
            why = one_line(outcome.detail)
        elif isinstance(outcome, EscalationRequested):
            why = f"the local model asked for Claude: {one_line(outcome.reason)}"
        elif turn.failure is not None:
            why = one_line(turn.failure[1])
        elif (missing := unmade(step, now, await tools.text_of(step.path))) is not None:
            why = f"the local model ended the step, but {missing}"
        else:
            checklist.mark(turn, index, "completed", Agent.LOCAL)
            return None
        return why

    async def _claude_step(
        self, session: Session, turn: Turn, number: int, step: StepEdit, why: str, request: str
    ) -> str | None:
        """The step as one fresh brief request to Claude, its answer checked and applied by
        milk; None when done, else why not (the turn's failure is set when Claude itself
        failed to answer)."""
        tools = self._tools(session, turn)
        now = await tools.text_of(step.path)
        answer = await ask_brief(
            self._claude,
            session,
            turn,
            system=brief.STEP_SYSTEM,
            prompt=brief.step_brief(number, request, step, now, why),
            by="fallback",
            reason=f"step {number} of the plan: {cut(why, 300)}",
        )
        if answer.failed:
            return "Claude did not answer"
        return await self._claude_edits(session, turn, tools, answer.text)

    async def _plan_check(
        self,
        session: Session,
        turn: Turn,
        check: ProjectCheck,
        baseline: CheckOutcome,
        request: str,
    ) -> str | None:
        """The project's check after the plan's last step (steps are not checked one by
        one: a Go rename done a file a step breaks the build until its last step). When it
        passed before and fails now, Claude gets one fresh request with the check's output
        and the lines it names; None when it passes after."""
        root = Path(session.workspace_folder)
        say = partial(self._say, turn)
        failed = await check_after(check, root, baseline, PLAN_STEPS, say)
        if failed is None:
            if baseline.passed:
                turn.notice("info", f"milk checked {PLAN_STEPS}: {check.command} passed")
            return None
        if self._claude_path() is None:
            return failed
        tools = self._tools(session, turn)
        lines = await named_lines(failed, root, tools.text_of)
        answer = await ask_brief(
            self._claude,
            session,
            turn,
            system=brief.STEP_SYSTEM,
            prompt=brief.check_brief(request, failed, lines),
            by="fallback",
            reason=f"the plan's steps fail the project's check ({check.command})",
        )
        if answer.failed:
            return failed
        problem = await self._claude_edits(session, turn, tools, answer.text)
        if problem is not None:
            return f"{failed}\n(Claude's fix: {problem})"
        return await check_after(check, root, baseline, "Claude's fix", say)

    async def _claude_edits(
        self, session: Session, turn: Turn, tools: WorkspaceTools, answer: str
    ) -> str | None:
        """Claude's answer in the edit shape, each old text checked to be in its file once
        (or there, for a `replace_all` edit), applied by milk; None when applied, else why
        not."""
        try:
            reply = parse_brief_reply(answer, needs_allowed=False, limit=STEP_EDITS_MAX)
        except NotTheShape as exc:
            return str(exc)
        texts = {edit.path: await tools.text_of(edit.path) for edit in reply.steps}
        unnumbered(reply, texts)
        for edit in reply.steps:
            text = texts[edit.path]
            found = 0 if text is None or not edit.old_text else text.count(edit.old_text)
            fits = found == 1 or (found > 1 and edit.replace_all)
            if not (fits or (edit.old_text == "" and text is None)):
                where = "is not in" if found == 0 else f"occurs {found} times in"
                return f"Claude's answer: its old_text {where} {edit.path}"
        applied = await self._apply(turn, tools, session, reply.steps, "Claude's edits")
        if applied.denied:
            return f"{DENIED} Claude's edit"
        if applied.problems:
            return f"Claude's answer failed milk's check: {'; '.join(applied.problems)}"
        return None

    async def _apply(
        self,
        turn: Turn,
        tools: WorkspaceTools,
        session: Session,
        steps: list[StepEdit],
        whose: str,
    ) -> Applied:
        """Apply exact replacements through the tools (permission, parse check), shown in
        the turn's current part; the project's check runs after the plan's last step."""
        applied = Applied()
        root = Path(session.workspace_folder)
        events = apply_edits(
            tools,
            [step.edit() for step in steps],
            applied,
            limit=STEP_EDITS_MAX,
            root=root,
            check=None,
            progress=lambda message: self._say(turn, message),
            whose=whose,
        )
        await _fold(turn, events)
        return applied

    def _tools(self, session: Session, turn: Turn) -> WorkspaceTools:
        return WorkspaceTools(
            Path(session.workspace_folder),
            TurnHost(turn, turn.config.claude.permission_timeout_seconds),
            check_command=turn.config.local.check_command,
        )

    @staticmethod
    def _say(turn: Turn, message: str) -> None:
        turn.bridge.progress_report(turn.progress_token, message)


DENIED = "the user did not allow"
PLAN_STEPS = "the plan's steps"


async def _fold(turn: Turn, events: AsyncGenerator[AgentEvent, None]) -> None:
    """Show milk's own edit events in the turn (a denied edit's signal is in `Applied`)."""
    async with aclosing(events) as running:
        async for event in running:
            if not isinstance(event, LocalGaveUp):
                turn.apply(event)
    turn.flush_text()


def _found(need: str, shown: str, paths: frozenset[str]) -> bool:
    """Whether what Claude asked for is in what milk found (a path, or a name in the lines)."""
    return need in paths or need.split("/")[-1] in shown

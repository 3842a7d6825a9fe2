"""The local part of a turn: the local agent's conversation, its events folded into the
turn, and what happens when it fails (the twin of `claude_part.py`).

`LocalPart.run` builds the messages (the cache-stable system prompt, the history tail, the
user's text with the session notes), runs the local agent with the workspace tools and
returns what ended the part: an `escalate_to_claude` call, a hand-off signal
(`LocalGaveUp`, also made from a failed request to the model server), or nothing.
`LocalPart.hand_off` then decides, per `local.handOff`, whether Claude takes over; if not,
the turn's failure says why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from milk_lsp.agents.base import (
    AgentEvent,
    EscalationRequested,
    LocalGaveUp,
    LocalSignal,
    TurnFailed,
)
from milk_lsp.agents.local.agent import LocalAgent
from milk_lsp.agents.local.judge.asked import asked
from milk_lsp.agents.local.judge.checks import check_kind
from milk_lsp.agents.local.judge.edit_intent import (
    edits_elsewhere,
    no_new_file,
    spelled_out_change,
    unmade_change,
    unwritten_member,
)
from milk_lsp.agents.local.judge.read_first import focus_names
from milk_lsp.agents.local.judge.scope import reach
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.doors import LSP, Door
from milk_lsp.engine.agent_host import TurnHost
from milk_lsp.engine.local import handoff
from milk_lsp.engine.local.events import LocalOutcome, fold_local_events
from milk_lsp.engine.local.guided import GuidedPart
from milk_lsp.engine.routing import Plan
from milk_lsp.engine.turn import Turn
from milk_lsp.guided.answers import AgentAnswers
from milk_lsp.guided.apply import check_after, check_before
from milk_lsp.guided.ask import intent_of
from milk_lsp.guided.locate import Locator
from milk_lsp.guided.project_check import CheckOutcome, ProjectCheck, check_for
from milk_lsp.local_model.provider import LocalModels
from milk_lsp.prompts import local as prompts
from milk_lsp.sessions.model import Agent, Session, SessionState, TurnRecord
from milk_lsp.sessions.service import Sessions
from milk_lsp.text import blank_space_only, cut
from milk_lsp.workspace.index import WorkspaceIndex

logger = logging.getLogger(__name__)


INDEX_WAIT_SECONDS = 2.0
"""How long a turn waits for the workspace's index before its first model request."""
BRIEF_MAX_CHARS = 1000
"""Cap on `escalate_to_claude(reason)`, which becomes the brief in Claude's context."""
LOCAL_EDITS = "the local edits"
"""What the project check's notices call the agent's edits."""


@dataclass(frozen=True)
class HandOff:
    """Claude takes over the turn: who decided and the `escalated.reason`; the session
    already holds the brief, the goal and the refreshed local brick."""

    by: Literal["agent", "fallback"]
    reason: str
    signal: str | None = None
    """The hand-off signal of a fallback."""


class LocalPart:
    """Runs the local agent for a turn, and decides whether Claude takes over."""

    def __init__(
        self,
        sessions: Sessions,
        models: LocalModels,
        claude_path: Callable[[], str | None],
        door: Callable[[], Door] = lambda: LSP,
    ) -> None:
        """`claude_path`: where the `claude` CLI is (None: not found, so no hand-off);
        `door`: how the front door names the way to Claude (`milk_lsp.doors`)."""
        self._door = door
        self._sessions = sessions
        self._models = models
        self._claude_path = claude_path
        self._guided = GuidedPart()
        """The strategy of each turn, and the guided turns (`milk_lsp.guided`)."""
        self._indexes: dict[str, WorkspaceIndex] = {}
        """Per workspace folder: what exists there, for the judge of local answers."""

    async def run(
        self, session: Session, turn: Turn, text: str, plan: Plan, user_ask: str
    ) -> LocalOutcome:
        """The local agent's part of the turn: its escalation or failure signal, if any.
        `text` is what the model gets (with attachments), `user_ask` what the user typed."""
        config = turn.config
        # the workspace's index is brought up to date while the prompt is put together
        indexed = asyncio.ensure_future(self._fresh_index(session.workspace_folder))
        turn.start_part(Agent.LOCAL)
        session.state = SessionState.LOCAL
        percepts = await self._sessions.percepts(session.workspace_folder)
        history = await self._sessions.records(session.id, prompts.HISTORY_TURNS + 1)
        history = [record for record in history if record.turn_id != turn.turn_id]
        memory_tags = config.local.memory_tags
        goal = session.current_need
        follows = not memory_tags and not plan.advises
        if follows and not session.current_need:
            turn.set_need(user_ask)  # no tags from the model: the first request is the goal
            goal = ""  # ...and the request itself says it
        notes = prompts.session_notes(
            session.escalation_nonce, goal, percepts, memory_tags=memory_tags
        )
        # back from Claude: what Claude did, once (this turn makes the local agent active)
        returning = prompts.demotion_summary(session.active_agent, session.last_claude_summary)
        notes = prompts.claude_notes(returning) + notes
        system = prompts.local_system_prompt(plan.offer_escalation)
        index = await indexed
        progress = self._progress(turn)
        async with self._models.around(progress, turn.notice) as agent:
            if isinstance(agent, TurnFailed):  # the embedded model could not start
                return handoff.from_model_failure(agent)
            turn.local_model = agent.model_in_use  # known from an earlier turn, if any
            strategy = await self._guided.strategy(config.local.strategy, agent)
            tools = self._tools(session, turn, user_ask, index)
            hand_off_wide = self._hands_off_wide(plan, config.local.hand_off)
            wide = (reach(user_ask, index).reason() or None) if hand_off_wide else None
            if wide is not None and not strategy.guided:  # the guided turn asks first
                turn.notice(
                    "info",
                    f"milk handed this turn to Claude before the local model started: {wide}.",
                )
                return LocalGaveUp(
                    LocalSignal.WIDE_REQUEST,
                    f"{wide}, more than the local model does well; milk handed it to Claude"
                    " before the local model started",
                )
            if strategy.guided:
                turn.notice("info", f"milk guides this local turn: {strategy.why}.")
                outcome = await self._guided.run(
                    turn,
                    agent,
                    index,
                    tools,
                    user_ask=user_ask,
                    text=text,
                    offer_escalation=plan.offer_escalation,
                    history=prompts.history_messages(history),
                    progress=progress,
                    wide=wide,
                    hand_off_wide=hand_off_wide,
                    project_check=not plan.advises,  # a plan's check runs after its steps
                )
            else:
                outcome = await self._agent_loop(
                    turn, agent, tools, index, plan, text, user_ask, system, notes, history
                )
                self._guided.saw(agent.model_in_use, outcome)
        if follows and tools.edited_files() and outcome is None:
            turn.set_need(user_ask)  # the files changed: this request is the goal now
        if not turn.part.is_empty:
            session.local_turns_since_claude += 1
        return outcome

    async def locator(self, workspace: str) -> Locator:
        """The workspace's up-to-date `Locator` (the guided turn's locate step), for the
        advisor's brief."""
        return self._guided.locator(await self._fresh_index(workspace))

    def _tools(
        self, session: Session, turn: Turn, user_ask: str, index: WorkspaceIndex
    ) -> WorkspaceTools:
        return WorkspaceTools(
            Path(session.workspace_folder),
            TurnHost(turn, turn.config.claude.permission_timeout_seconds),
            focus=focus_names(user_ask, index),
            check_command=turn.config.local.check_command,
        )

    async def _agent_loop(
        self,
        turn: Turn,
        agent: LocalAgent,
        tools: WorkspaceTools,
        index: WorkspaceIndex,
        plan: Plan,
        text: str,
        user_ask: str,
        system: str,
        notes: str,
        history: list[TurnRecord],
    ) -> LocalOutcome:
        """The model drives the tool loop (`local.strategy` agent), once it has said what
        it reads the request as (`guided.ask.intent_of`, as a guided turn asks). Its edits
        are judged as a guided turn's are: the project's own check runs before the first
        edit and after the loop (`project_check`)."""
        root = Path(index.root)
        project = None if plan.advises else check_for(root)  # a plan's: after its steps
        baseline: list[CheckOutcome | None] = []
        if project is not None:

            async def before_first_edit() -> None:
                say = self._progress(turn)
                baseline.append(await check_before(tools, project, root, LOCAL_EDITS, say))

            tools.before_first_edit(before_first_edit)
        messages = [
            {"role": "system", "content": system},
            *prompts.history_messages(history),
            {"role": "user", "content": prompts.with_session_notes(text, notes)},
        ]
        judge = AgentAnswers(
            user_ask,
            text,
            index,
            tools=tools,
            texts=tools,
            conversation=[str(message["content"]) for message in messages],
        )
        spelled_out = spelled_out_change(user_ask, index)

        async def run() -> AsyncGenerator[AgentEvent, None]:
            # what the model reads the request as, asked first (a plan's step is a change
            # by its plan): a change it then answers in words changed nothing
            intent = None
            if not plan.advises and not spelled_out:
                reading = intent_of(agent.client, user_ask, self._progress(turn))
                async with aclosing(reading) as said_all:
                    async for said in said_all:
                        if isinstance(said, str | None):
                            intent = said
                        else:
                            yield said
            loop = agent.run(
                messages,
                tools,
                offer_escalation=plan.offer_escalation,
                cut_short=plan.watches_local,
                change_requested=spelled_out or intent == "change",
                look_first=judge.about_workspace and text.strip() == user_ask.strip(),
                judge=judge,
                check=tools if turn.config.local.check_command else None,
            )
            async with aclosing(loop) as events:
                async for event in events:
                    yield event

        outcome = await fold_local_events(turn, agent, run(), self._progress(turn))
        self._say_checks(turn, tools)
        broken = await self._put_back_broken(turn, tools)
        if broken is not None and not isinstance(outcome, LocalGaveUp | EscalationRequested):
            outcome = broken
        if outcome is None and tools.edited_files():
            outcome = await self._unmade_change(turn, tools, user_ask, index)
        if outcome is None and project is not None and baseline and baseline[0] is not None:
            outcome = await self._project_checked(turn, tools, project, baseline[0], root)
        return outcome

    async def _project_checked(
        self,
        turn: Turn,
        tools: WorkspaceTools,
        project: ProjectCheck,
        baseline: CheckOutcome,
        root: Path,
    ) -> LocalGaveUp | None:
        """The project's check after the agent's edits: passing before and failing now,
        the edits are put back and the turn is a `check_failed` (a Go rename that left a
        use behind parses, and does not build)."""
        failed = await check_after(project, root, baseline, LOCAL_EDITS, self._progress(turn))
        if failed is None:
            if baseline.passed:
                turn.notice("info", f"milk checked {LOCAL_EDITS}: {project.command} passed")
            return None
        restored = await tools.restore_edited()
        done = (
            f"; milk put {', '.join(restored)} back as it was before the turn" if restored else ""
        )
        detail = f"{cut(failed, 600)}{done}"
        turn.notice("warning", f"The local edits failed the project's check: {detail}")
        return LocalGaveUp(LocalSignal.CHECK_FAILED, detail)

    async def hand_off(
        self, session: Session, turn: Turn, plan: Plan, outcome: LocalOutcome, user_ask: str
    ) -> HandOff | None:
        """Whether Claude takes this turn over. If so, the session is ready for it: the
        brief, a goal (at least the user's ask) and a local brick with this very turn's local
        part (not stored yet). When a failure is not handed off, the turn's failure says why."""
        if isinstance(outcome, EscalationRequested):
            hand_off, brief = HandOff("agent", outcome.reason), outcome.reason
        elif isinstance(outcome, LocalGaveUp) and await self._fallback_wanted(turn, plan, outcome):
            hand_off = HandOff("fallback", handoff.reason_text(outcome), outcome.signal.value)
            brief = handoff.brief(outcome, user_ask)
        else:
            return None
        session.escalation_brief = cut(brief, BRIEF_MAX_CHARS)
        if not plan.advises:  # Claude's goal is the request it takes over
            turn.set_need(user_ask, news_for_claude=False)
        local_part = turn.part_of(Agent.LOCAL)
        pending = [] if local_part is None else [local_part.record(turn.turn_id)]
        session.last_local_summary = self._sessions.local_brick(session, pending)
        return hand_off

    def _hands_off_wide(self, plan: Plan, mode: str) -> bool:
        """Whether a Claude-sized request goes to Claude before the local model changes
        anything: on route `auto` with `local.handOff: "auto"` and Claude at hand. Claude-
        sized: reaching several files at once (`judge.scope`, by what it locates), or, on a
        guided turn, a change the model sizes "many" from the request alone."""
        return plan.watches_local and mode in ("auto", "advise") and self._claude_path() is not None

    async def _put_back_broken(self, turn: Turn, tools: WorkspaceTools) -> LocalGaveUp | None:
        """Files the local model's edits left broken (it was told, and did not fix them) are
        put back as they were: never left broken silently. The `edit_broke_file` signal."""
        broken = tools.broken_files()
        if not broken:
            return None
        restored = await tools.restore_broken()
        path, problem = next(iter(broken.items()))
        if path in restored:
            done = f"milk put {path} back as it was before the turn"
        else:
            done = (
                f"milk could not put {path} back: it is left as the edit made it"
                f" ({self._door().undo} puts the turn's files back)"
            )
        detail = f"the local model's edit of {path} broke it ({problem}); {done}"
        turn.notice("warning", detail[0].upper() + detail[1:])
        return LocalGaveUp(LocalSignal.EDIT_BROKE_FILE, detail)

    async def _unmade_change(
        self, turn: Turn, tools: WorkspaceTools, user_ask: str, index: WorkspaceIndex
    ) -> LocalGaveUp | None:
        """The request spells out what to change (quoted text, a name to rename) and the
        local model's edits left it as it was, or every edit lies away from what the request
        names (`names`, its words written as code): the edit went elsewhere, so the turn did
        not do what was asked (`edit_not_made`). Those edits are put back, as broken ones are:
        whoever goes on (Claude, the user) starts from the files as the user left them."""
        edited = await _edited_texts(tools)
        why = (
            blank_space_only(edited)
            or unmade_change(user_ask, edited)
            or unwritten_member(user_ask, edited, index)
            or no_new_file(reach(user_ask, index).new_files, edited)
            or edits_elsewhere(
                user_ask, edited, focus_names(user_ask, index), asked(user_ask, index).written
            )
        )
        if why is None:
            return None
        restored = await tools.restore_edited()
        kept = [path for path in edited if path not in restored]
        done = []
        if restored:
            done.append(f"milk put {', '.join(restored)} back as it was before the turn")
        if kept:
            done.append(
                f"milk could not put {', '.join(kept)} back: left as the edits made it"
                f" ({self._door().undo} puts the turn's files back)"
            )
        detail = f"{why}; {'; '.join(done)}"
        turn.notice("warning", detail[0].upper() + detail[1:])
        return LocalGaveUp(LocalSignal.EDIT_NOT_MADE, detail)

    @staticmethod
    def _say_checks(turn: Turn, tools: WorkspaceTools) -> None:
        """Which checks the files the local model edited passed (the broken ones were
        said already): a kept edit is a checked one."""
        broken = tools.broken_files()
        passed = [
            f"{path} ({kind})"
            for path in tools.edited_files()
            if path not in broken and (kind := check_kind(path)) is not None
        ]
        if passed:
            turn.notice("info", "milk checked the local edits: " + "; ".join(passed))

    async def _fresh_index(self, workspace: str) -> WorkspaceIndex:
        """The workspace's index, brought up to date (only changed files are read again).
        A first index of a large workspace may take longer than a turn should wait: the
        turn then goes on with what is indexed so far, and the refresh finishes behind it."""
        index = self._indexes.get(workspace)
        if index is None:
            index = self._indexes[workspace] = WorkspaceIndex(Path(workspace))
        refresh = asyncio.ensure_future(asyncio.to_thread(index.refresh))
        try:
            await asyncio.wait_for(asyncio.shield(refresh), INDEX_WAIT_SECONDS)
        except TimeoutError:
            logger.info("the index of %s is still being built", workspace)
        except Exception:  # the judge is a help; a broken index must not fail the turn
            logger.warning("indexing %s failed", workspace, exc_info=True)
        return index

    @staticmethod
    def _progress(turn: Turn) -> Callable[[str], None]:
        return lambda message: turn.bridge.progress_report(turn.progress_token, message)

    async def _fallback_wanted(self, turn: Turn, plan: Plan, gave_up: LocalGaveUp) -> bool:
        mode = turn.config.local.hand_off
        timeout = turn.config.claude.permission_timeout_seconds
        if not plan.watches_local:
            kept = ""  # the user chose the local model
        elif mode == "off":
            kept = "Hand-off to Claude is off (local.handOff)."
        elif self._claude_path() is None:
            kept = "Claude Code was not found, so it could not take over."
        elif mode in ("auto", "advise") or await handoff.ask_user(turn, gave_up, timeout):
            return True
        else:
            kept = (
                "You kept the local answer."
                if handoff.has_local_answer(turn)
                else "You chose not to hand it to Claude."
            )
        turn.failure = handoff.failure(gave_up, kept, self._door())
        turn.failure_signal = gave_up.signal.value
        if gave_up.signal is LocalSignal.MODEL_UNREACHABLE and self._claude_path() is not None:
            turn.notice(
                "info",
                f"The local model is unreachable; you can still {self._door().escalate}.",
            )
        return False


async def _edited_texts(tools: WorkspaceTools) -> dict[str, tuple[str | None, str | None]]:
    """Each file the turn's edits wrote: its text before the turn and now (None: absent)."""
    return {path: (was, await tools.text_of(path)) for path, was in tools.texts_before()}

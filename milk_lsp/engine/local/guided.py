"""The local part of a turn run guided (`milk_lsp.guided`): the strategy chosen per turn,
and a guided turn's events folded into the turn as the agent loop's are (`part.py`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from milk_lsp.agents.base import (
    LocalGaveUp,
)
from milk_lsp.agents.local.agent import LocalAgent
from milk_lsp.agents.local.reply.stream import LocalModelError
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.engine.local.events import LocalOutcome, fold_local_events
from milk_lsp.engine.turn import Turn
from milk_lsp.guided.locate import Budget, Locator
from milk_lsp.guided.strategy import PROTOCOL_SIGNALS, Strategy, choose
from milk_lsp.guided.turn import GuidedTurn
from milk_lsp.workspace.index import WorkspaceIndex

logger = logging.getLogger(__name__)


class GuidedPart:
    """Chooses each local turn's strategy and runs the guided ones."""

    def __init__(self) -> None:
        self._locators: dict[int, Locator] = {}
        self._protocol_failures: set[str] = set()
        """Models that failed to drive the tool loop in a turn of this server."""

    async def strategy(self, setting: str, agent: LocalAgent) -> Strategy:
        """`local.strategy` resolved for this turn's model (`guided.strategy.choose`)."""
        if setting in ("guided", "agent"):
            return choose(setting, "", drops_tools=False, failed_protocol=False)
        try:
            model = await agent.client.resolve_model()
            drops = await agent.client.drops_tools()
        except LocalModelError:
            return Strategy(False, "the model server did not answer")  # the loop says why
        except Exception:
            logger.warning("could not tell which model the server runs", exc_info=True)
            return Strategy(False, "the model server did not say which model it runs")
        return choose(
            setting, model, drops_tools=drops, failed_protocol=model in self._protocol_failures
        )

    def saw(self, model: str | None, outcome: LocalOutcome) -> None:
        """An agent-loop turn ended: one that failed the tool protocol makes `auto` guide
        the model's later turns."""
        if model and isinstance(outcome, LocalGaveUp) and outcome.signal in PROTOCOL_SIGNALS:
            self._protocol_failures.add(model)

    def locator(self, index: WorkspaceIndex) -> Locator:
        """The workspace's `Locator`, kept between turns (its postings are updated, not
        rebuilt)."""
        locator = self._locators.get(id(index))
        if locator is None or locator.index is not index:
            locator = self._locators[id(index)] = Locator(index)
        return locator

    async def run(
        self,
        turn: Turn,
        agent: LocalAgent,
        index: WorkspaceIndex,
        tools: WorkspaceTools,
        *,
        user_ask: str,
        text: str,
        offer_escalation: bool,
        history: list[dict[str, object]],
        progress: Callable[[str], None],
        wide: str | None = None,
        hand_off_wide: bool = False,
        project_check: bool = True,
    ) -> LocalOutcome:
        """The guided local part: its events shown, its hand-off signal returned. `wide`:
        why the request is Claude-sized (`judge.scope`), handed off when it asks a change;
        `hand_off_wide`: a change the model sizes "many" is handed off too (Claude is at
        hand and `local.handOff` is "auto"); `project_check`: run the project's check around
        the edits (an advisor step's is the plan's, run once after its last step)."""
        locator = self.locator(index)
        config = turn.config
        budget = Budget.for_context(
            config.local.context_size if config.local.provider == "embedded" else None
        )
        guided = GuidedTurn(
            agent.client,
            locator,
            tools,
            Path(index.root),
            progress,
            offer_escalation=offer_escalation,
            history=history,
            budget=budget,
            wide=wide,
            hand_off_wide=hand_off_wide,
            run_project_check=project_check,
        )
        return await fold_local_events(turn, agent, guided.run(user_ask, text), progress)

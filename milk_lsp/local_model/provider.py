"""`LocalModels`: the local agent for the current settings, and the embedded server it may
talk to.

The agent is made on first use (httpx loads with it: start-up stays quick) and again when
the `local.*` settings change or the embedded server comes back on a new port. An agent a
running part still streams through is closed when that part lets go of it, never under it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from milk_lsp.agents.base import TurnFailed
from milk_lsp.agents.local.reply.stream import LocalModelError
from milk_lsp.config import MilkConfig
from milk_lsp.doors import LSP, Door
from milk_lsp.local_model.embedded import (
    EmbeddedServer,
    EmbeddedSettings,
    Provider,
    resolve_provider,
)
from milk_lsp.system.redact import register as redact_register

if TYPE_CHECKING:
    from milk_lsp.agents.local.agent import LocalAgent

Progress = Callable[[str], None]
"""Where the embedded server's load progress goes (a progress message)."""
Notice = Callable[[str, str], None]
"""Where notices go: (severity, message)."""


class LocalModels:
    """The local agent and the embedded server, for the settings `config` gives."""

    def __init__(
        self,
        config: Callable[[], MilkConfig],
        agent: LocalAgent | None = None,
        door: Callable[[], Door] = lambda: LSP,
    ):
        """`agent`: a ready agent (tests); otherwise made from the settings when needed.
        `door`: how the front door names settings in the agent's failure messages."""
        self._config = config
        self._door = door
        self._agent: LocalAgent | None = agent
        self._embedded: EmbeddedServer | None = None
        self._holders: dict[int, int] = {}
        """How many running parts hold each agent (by id): a dropped agent closes at 0."""
        self._dropped: dict[int, LocalAgent] = {}

    @property
    def agent(self) -> LocalAgent:
        """The agent for the current settings (for a status probe; a turn uses `around`)."""
        if self._agent is None:
            from milk_lsp.agents.local.agent import LocalAgent, LocalSettings

            cfg = self._config().local
            redact_register(cfg.api_key)
            embedded = self._embedded if self._embedded and self._embedded.base_url else None
            self._agent = LocalAgent(
                LocalSettings(
                    base_url=embedded.base_url if embedded and embedded.base_url else cfg.base_url,
                    model=embedded.alias if embedded else cfg.model,
                    api_key=cfg.api_key,
                    max_tool_rounds=cfg.max_tool_rounds,
                    read_timeout_seconds=cfg.request_timeout_seconds,
                    text_tool_calls=cfg.text_tool_calls,
                    temperature=cfg.temperature,
                    max_tokens=cfg.max_tokens,
                    door=self._door(),
                )
            )
        return self._agent

    @property
    def embedded(self) -> EmbeddedServer | None:
        """The embedded model's server if one was made (for `milk/status`)."""
        return self._embedded

    async def provider(self) -> Provider:
        return await resolve_provider(self._config().local)

    @asynccontextmanager
    async def around(
        self, progress: Progress, notice: Notice
    ) -> AsyncIterator[LocalAgent | TurnFailed]:
        """Held around a local part: the agent pointed at the provider's server, the embedded
        one started ("loading model…") and held while the part runs. A model that cannot
        start is yielded as the part's failure instead of an agent."""
        server: EmbeddedServer | None = None
        if await self.provider() != "embedded":
            if self._embedded is not None:  # auto found a server after all
                await self._point_at(self._config().local.base_url)
        else:
            if self._embedded is None:
                self._embedded = EmbeddedServer(EmbeddedSettings.of(self._config().local))
            server = self._embedded
            loading = server.state != "running"
            if loading:
                progress("loading model…")
            try:
                base_url = await server.acquire(progress, notice)
            except LocalModelError as exc:
                yield TurnFailed(exc.reason, exc.message)
                return
            if loading and server.load_seconds is not None:
                notice(
                    "info",
                    f"Loaded the embedded model {server.alias} in {server.load_seconds:.1f} s.",
                )
            await self._point_at(base_url)
        agent = self.agent
        key = id(agent)
        self._holders[key] = self._holders.get(key, 0) + 1
        try:
            yield agent
            if server is not None:  # once, after a part that ended (not a cancelled one)
                await server.remember_prompt()
        finally:
            self._holders[key] -= 1
            if self._holders[key] == 0:
                del self._holders[key]
                dropped = self._dropped.pop(key, None)
                if dropped is not None:
                    await dropped.aclose()
            if server is not None:
                server.release()

    async def _point_at(self, base_url: str) -> None:
        """Drop the agent when it talks to another server (the embedded one restarted on a
        new port, or the provider changed); the next use makes it afresh."""
        if self._agent is not None and self._agent.settings.base_url != base_url:
            await self._drop_agent()

    async def _drop_agent(self) -> None:
        """The next use makes the agent afresh; the old one's client is closed now, or when
        the last part still streaming through it lets go."""
        agent, self._agent = self._agent, None
        if agent is None:
            return
        if self._holders.get(id(agent)):
            self._dropped[id(agent)] = agent
        else:
            await agent.aclose()

    async def settings_changed(self, old: MilkConfig, new: MilkConfig) -> None:
        """New `local.*` settings: a new agent; a new embedded model or provider: the old
        server stops now, or when the turns using it end."""
        if old.local != new.local:
            await self._drop_agent()
        embedded_changed = EmbeddedSettings.of(old.local) != EmbeddedSettings.of(new.local)
        if self._embedded is not None and (
            embedded_changed or old.local.provider != new.local.provider
        ):
            self._embedded.retire()
            self._embedded = None

    async def aclose(self) -> None:
        if self._agent is not None:
            await self._agent.aclose()
        for agent in self._dropped.values():
            await agent.aclose()
        self._dropped.clear()
        if self._embedded is not None:
            await self._embedded.aclose()

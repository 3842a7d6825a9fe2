"""`milk-lsp acp`: milk as an ACP v1 agent on stdio, on the same engine, store and sessions
as the LSP server (an ACP session id is the milk session id, so a session started over LSP
loads here, and the other way round). docs/acp.md is the reference.

The SDK (`agent-client-protocol`) provides the schema models, the method router and the
JSON-RPC `Connection`; milk adds its stdio framing (`transport`), the engine's bridge
(`bridge`), its errors (`errors`), the slash commands and `_milk/*` extensions (`commands`)
and these handlers. A turn that fails after it started is answered with a -32603 error
carrying the turn id and milk's reason, after the turn's updates; the turn is stored like
any other.

Modes: `auto`, `local`, `claude` are milk's routes; a prompt is sent with the session's mode
as its route. While an `auto` session is with Claude (the user escalated, or Claude asked a
question), the mode shows `claude` (`current_mode_update`), and `auto` again once it is not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import acp
from acp import RequestError
from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.interfaces import Agent as AcpAgent
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    Usage,
)

from milk_lsp import __version__, wire
from milk_lsp.acp import commands, mcp
from milk_lsp.acp.bridge import AcpBridge, OpenSession, current_session
from milk_lsp.acp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    busy,
    checked,
    engine_errors,
    invalid_params,
)
from milk_lsp.acp.prompt import ContentBlock, Prompt, PromptError, context_item
from milk_lsp.acp.prompt import read_prompt as read_prompt_blocks
from milk_lsp.acp.transport import StdioTransport
from milk_lsp.acp.updates import UpdateMapper, message, replay
from milk_lsp.agents.claude.command import McpServer
from milk_lsp.config import MilkConfig, load_sources
from milk_lsp.doors import ACP
from milk_lsp.engine import Engine
from milk_lsp.engine.views import iso
from milk_lsp.sessions.model import Session
from milk_lsp.workspace.paths import path_to_uri

logger = logging.getLogger(__name__)

LIST_PAGE = 100
"""Sessions per `session/list` page."""
CANCELLED_TURN_SECONDS = 15.0
"""How long a prompt sent after `session/cancel` waits for the cancelled turn to end."""

MODES = [
    SessionMode(
        id="auto",
        name="Auto",
        description="The local model answers; hard work goes to Claude Code with milk's context.",
    ),
    SessionMode(
        id="local",
        name="Local",
        description="Only the local model, no escalation; takes the session back from Claude.",
    ),
    SessionMode(id="claude", name="Claude", description="Claude Code answers every turn."),
    SessionMode(
        id="advise",
        name="Advise",
        description="Claude Code plans each request; the local model carries the plan out.",
    ),
]
MODE_IDS = [mode.id for mode in MODES]
STOP_REASONS = {"end_turn": "end_turn", "cancelled": "cancelled", "max_turns": "max_turn_requests"}


class MilkAgent:
    """The ACP agent's handlers (the SDK's `Agent` interface, snake_case keyword style)."""

    def __init__(self, engine: Engine, bridge: AcpBridge, problems: Sequence[str] = ()) -> None:
        self.engine = engine
        self.bridge = bridge
        self.settings_problems = list(problems)

    # ---- lifecycle ----------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None
        self.bridge.can_read = bool(fs and fs.read_text_file)
        self.bridge.can_write = bool(fs and fs.write_text_file)
        logger.info(
            "ACP client %s (protocol %s, fs read %s, write %s)",
            client_info.name if client_info is not None else "?",
            protocol_version,
            self.bridge.can_read,
            self.bridge.can_write,
        )
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,  # the only version: the client decides
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                # stdio servers are a must; Claude Code also connects to these two itself
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            auth_methods=[],
            agent_info=Implementation(name="milk-lsp", title="milk", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        return AuthenticateResponse()  # nothing to log in to: Claude Code keeps its own login

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        folder = _absolute(cwd, "cwd")
        servers, ignored = mcp.read_servers(mcp_servers)
        with engine_errors("cwd"):
            stored = await self.engine.sessions.new(path_to_uri(str(folder)), None)
        session = self._open(stored, servers, ignored)
        meta: dict[str, Any] = {"milk": {"workspaceFolder": path_to_uri(stored.workspace_folder)}}
        if servers:
            meta["milk"]["mcpServers"] = [server.name for server in servers]
        if ignored:
            meta["milk"]["ignoredMcpServers"] = ignored
        self._after_response(lambda: commands.announce(self.bridge, session))
        return NewSessionResponse(session_id=stored.id, modes=_modes(session), field_meta=meta)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        running = self.bridge.sessions.get(session_id)
        if running is not None and running.prompt is not None and not running.prompt.done():
            raise busy(session_id)
        folder = _absolute(cwd, "cwd")
        servers, ignored = mcp.read_servers(mcp_servers)
        with engine_errors("sessionId"):
            stored = await self.engine.sessions.get(session_id)
        _same_folder(folder, stored)
        with engine_errors("sessionId"):
            records = await self.engine.sessions.records(stored.id, max(stored.turn_count, 1))
        session = self._open(stored, servers, ignored)
        for update in replay(records, session.workspace):
            self.bridge.notify(session, update)
        self._after_response(lambda: commands.announce(self.bridge, session))
        return LoadSessionResponse(modes=_modes(session))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        uri = None if cwd is None else path_to_uri(str(_absolute(cwd, "cwd")))
        offset = 0
        if cursor is not None:
            if not cursor.isdigit():
                raise invalid_params("cursor", "not a cursor from a session/list answer")
            offset = int(cursor)
        with engine_errors("cwd"):
            sessions = await self.engine.sessions.of_workspace(uri)
        page = sessions[offset : offset + LIST_PAGE]
        more = offset + LIST_PAGE < len(sessions)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.id,
                    cwd=s.workspace_folder,
                    title=s.title or None,
                    updated_at=iso(s.updated_at),
                )
                for s in page
            ],
            next_cursor=str(offset + LIST_PAGE) if more else None,
        )

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in MODE_IDS:
            raise invalid_params(
                "modeId", f"unknown mode {mode_id!r} (one of {', '.join(MODE_IDS)})"
            )
        session.mode = mode_id
        session.shown_mode = mode_id
        # `claude` while with Claude
        self._after_response(lambda: commands.show_mode(self.engine, self.bridge, session))
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.bridge.sessions.get(session_id)
        if session is not None and session.prompt is not None and not session.prompt.done():
            session.prompt.cancel()

    # ---- prompts ------------------------------------------------------------------------

    async def prompt(
        self, prompt: list[ContentBlock], session_id: str, **kwargs: Any
    ) -> PromptResponse:
        session = self._session(session_id)
        running = session.prompt
        if running is not None and not running.done():
            if not running.cancelling():
                raise busy(session_id)
            # A client may send its next prompt right after `session/cancel`: that one
            # goes on once the cancelled turn has ended (and been stored).
            await asyncio.wait({running}, timeout=CANCELLED_TURN_SECONDS)
            if not running.done():
                raise busy(session_id)
        try:
            parsed = read_prompt_blocks(prompt, session.workspace)
        except PromptError as exc:
            raise invalid_params(exc.field, exc.message) from None
        task = asyncio.create_task(self._run_prompt(session, parsed))
        session.prompt = task
        try:
            return await task
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if task.cancelled() and (this is None or not this.cancelling()):
                commands.show_mode(self.engine, self.bridge, session)
                return PromptResponse(stop_reason="cancelled")  # session/cancel
            raise
        finally:
            if session.prompt is task:
                session.prompt = None

    async def _run_prompt(self, session: OpenSession, parsed: Prompt) -> PromptResponse:
        current_session.set(session)  # the turn's task inherits it: buffers, edits
        await self.bridge.refresh_buffers(session)
        items = []
        for item, path in parsed.embedded:
            items.append(item)
            if path is not None and item.text is not None:
                self.bridge.keep_buffer(session, path, item.text)
        for link in parsed.links:
            text = None if link.path is None else await self.bridge.read_buffer(session, link.path)
            items.append(context_item(link.field, link.uri, text))
        command, argument = parsed.command, parsed.argument
        if command == "escalate" and not argument:
            with engine_errors("sessionId"):
                escalate = wire.EscalateParams(session_id=session.milk_id)
                return self._finished(session, await self.engine.escalate(escalate))
        answer = await commands.run_command(self.engine, self.bridge, session, command, argument)
        if answer is not None:
            return answer
        route = {"escalate": "claude", "local": "local", "advise": "advise"}.get(
            command or "", session.mode
        )
        chat = _chat_params(session.milk_id, argument if command else parsed.text, route, items)
        with engine_errors("sessionId"):
            return self._finished(session, await self.engine.chat(chat))

    def _finished(self, session: OpenSession, result: wire.TurnResult) -> PromptResponse:
        """After the turn's updates: the mode and title as they are now, then the answer."""
        if session.mcp_notice and result.agent == "local":
            told = {"milk": {"kind": "mcp", "turnId": result.turn_id, "agent": "local"}}
            self.bridge.notify(session, message(session.mcp_notice, told))
            session.mcp_notice = ""
        commands.show_mode(self.engine, self.bridge, session)
        commands.show_title(self.engine, self.bridge, session)
        meta: dict[str, Any] = {"milk": {"turnId": result.turn_id, "agent": result.agent}}
        if result.escalated is not None:
            meta["milk"]["escalated"] = result.escalated.to_wire()
        if result.error is not None or result.stop_reason == "error":
            reason = result.error.reason if result.error is not None else "internal"
            text = result.error.message if result.error is not None else "the turn failed"
            data = {"reason": reason, "turnId": result.turn_id, "stopReason": "error"}
            if result.error is not None and result.error.data:
                data.update(result.error.data)  # the hand-off signal, for clients
            raise RequestError(INTERNAL_ERROR, text, {**data, "agent": result.agent})
        usage = None
        if result.usage is not None:
            counted = result.usage
            usage = Usage(
                total_tokens=counted.input_tokens
                + counted.output_tokens
                + (counted.cache_read_tokens or 0)
                + (counted.cache_creation_tokens or 0),
                input_tokens=counted.input_tokens,
                output_tokens=counted.output_tokens,
                cached_read_tokens=counted.cache_read_tokens,
                cached_write_tokens=counted.cache_creation_tokens,
            )
            if counted.cost_usd is not None:
                meta["milk"]["costUsd"] = counted.cost_usd
        stop = STOP_REASONS.get(result.stop_reason, "end_turn")
        return PromptResponse(stop_reason=stop, usage=usage, field_meta=meta)

    # ---- extensions ---------------------------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await commands.ext_method(
            self.engine, self.bridge, method, params, self.settings_problems
        )

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        logger.debug("ignored extension notification _%s", method)

    # ---- helpers ------------------------------------------------------------------------

    def _session(self, session_id: str) -> OpenSession:
        session = self.bridge.sessions.get(session_id)
        if session is None:
            raise invalid_params(
                "sessionId",
                f"no open session {session_id!r}: create it with session/new or open it "
                "with session/load",
                reason="session_not_found",
            )
        return session

    def _open(
        self, stored: Session, servers: tuple[McpServer, ...], ignored: list[str]
    ) -> OpenSession:
        workspace = Path(stored.workspace_folder)
        local = self.engine.config.local
        # the window of the local model milk runs itself; any other's is not known
        windows = {"local": local.context_size} if local.provider == "embedded" else {}
        session = OpenSession(
            acp_id=stored.id,
            milk_id=stored.id,
            workspace=workspace,
            mode=self.engine.config.route,
            mapper=UpdateMapper(workspace, windows),
            mcp_notice=mcp.local_notice(servers, ignored) if servers or ignored else "",
        )
        if servers:  # Claude Code gets them on its command line
            self.engine.claude.mcp_servers[stored.id] = servers
        else:
            self.engine.claude.mcp_servers.pop(stored.id, None)
        session.shown_mode = commands.effective_mode(self.engine, session, stored)
        self.bridge.open(session)
        # turns other doors run on this folder are shown in the session as they stream
        self.engine.sessions.watched.add(stored.workspace_folder)
        self.engine.live.watch()
        return session

    def _after_response(self, action: Callable[[], None]) -> None:
        """Run `action` once the current request's answer is written (it is written in the
        same step as the handler returns; this runs on the loop's next turn)."""
        asyncio.get_running_loop().call_soon(action)


def _modes(session: OpenSession) -> SessionModeState:
    return SessionModeState(current_mode_id=session.shown_mode, available_modes=MODES)


def _chat_params(
    milk_id: str, text: str, route: str, items: list[wire.ContextItem]
) -> wire.ChatParams:
    raw = {
        "sessionId": milk_id,
        "text": text,
        "route": route,
        "context": [item.to_wire() for item in items],
    }
    try:
        return wire.parse(wire.ChatParams, raw)
    except wire.ParamsError as exc:
        detail = str(exc).removeprefix("invalid params: ")
        raise invalid_params("prompt", f"as milk's message: {detail}") from None


def _same_folder(cwd: Path, stored: Session) -> None:
    """`session/load`'s `cwd` must be the session's folder: milk's sessions keep theirs
    (its checkpoints, percepts and the Claude conversation belong to it)."""
    folder = Path(stored.workspace_folder)
    try:
        same = cwd.resolve() == folder.resolve()
    except OSError:
        same = False
    if not same:
        raise RequestError(
            INVALID_PARAMS,
            f"invalid params: cwd: session {stored.id} belongs to the folder {folder}, not "
            f"{cwd}; load it with that cwd, or start a new session here",
            {
                "reason": "workspace_mismatch",
                "field": "cwd",
                "cwd": str(cwd),
                "workspaceFolder": str(folder),
            },
        )


def _absolute(raw: str, field: str) -> Path:
    if "\x00" in raw or not Path(raw).is_absolute():
        raise invalid_params(field, f"must be an absolute path, got {raw!r}")
    return Path(raw)


# ---- serving -----------------------------------------------------------------------------


class _Link:
    """`bridge.ClientLink` over the connection: notifications are written at once."""

    def __init__(self, transport: StdioTransport) -> None:
        self.transport = transport
        self.connection: Connection | None = None

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.transport.write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if self.connection is None:
            raise ConnectionError("not connected")
        return await self.connection.send_request(method, params)


def load_config(cli_settings: dict[str, Any]) -> tuple[MilkConfig, list[str]]:
    """Defaults < config.json < command-line flags; problems are logged and kept for
    `_milk/status` (ACP has no settings channel, so nobody else would see them)."""
    loaded = load_sources(("command line", cli_settings))
    problems = [loaded.file_error] if loaded.file_error else []
    for problem in loaded.problems:
        what = "unknown setting" if problem.unknown else f"invalid ({problem.message})"
        problems.append(f"{problem.key}: {what} ({problem.source})")
    for line in problems:
        logger.warning("milk: %s", line)
    return loaded.config, problems


async def run(cli_settings: dict[str, Any]) -> None:
    config, problems = load_config(cli_settings)
    reader, writer = await acp.stdio_streams()
    transport = StdioTransport(reader, writer)
    link = _Link(transport)
    bridge = AcpBridge(link)
    engine = Engine(config, bridge, door=ACP)
    agent = MilkAgent(engine, bridge, problems)
    # MilkAgent has the methods milk serves; for the rest of the SDK's `Agent` protocol
    # (fork, resume, close, config options) the router answers -32601 by itself.
    router = build_agent_router(cast(AcpAgent, agent))
    connection = Connection(checked(router), transport, listening=False)
    link.connection = connection
    logger.info("milk-lsp %s serving ACP on stdio", __version__)
    try:
        await connection.main_loop()
    finally:
        await engine.aclose()  # running turns end as cancelled turns, stored
        await connection.close()


def serve(cli_settings: dict[str, Any]) -> int:
    """Serve ACP on stdio (`cli.main` runs this inside `system.orphans.guard`)."""
    from milk_lsp.system.orphans import sweep as sweep_orphans

    sweep_orphans()  # kill what runs of dead milk-lsp servers left running (Linux)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(cli_settings))
    return 0

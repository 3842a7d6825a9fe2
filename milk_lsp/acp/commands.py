"""The chat's slash commands and milk's `_milk/*` extension methods over ACP.

Functions of the collaborators they need: the engine, the bridge and the ACP session. The
commands `/local`, `/context` and `/undo` answer their `session/prompt` at once with
`end_turn` and tell what they did as an agent message (`/escalate` and `/local <message>`
are turns: `server` runs them). `/new` is not offered: an ACP session id is its milk
session's id for good (a chat reloaded later must show what was said in it), so a new
session is a new chat, which only the client can start; typed anyway, it says so. The
extensions answer with milk's wire results.

Also here: what the client is shown of a session besides its turns, which the commands and
the handlers both update: its mode (`claude` while an `auto` session is with Claude), its
title, and the commands it offers.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    PromptResponse,
    SessionInfoUpdate,
    UnstructuredCommandInput,
)

from milk_lsp import wire
from milk_lsp.acp.bridge import AcpBridge, OpenSession
from milk_lsp.acp.errors import INVALID_PARAMS, engine_errors, invalid_params
from milk_lsp.acp.prompt import COMMANDS, UNOFFERED
from milk_lsp.acp.updates import message
from milk_lsp.engine import Engine, EngineError
from milk_lsp.engine.routing import RoutingState, route_turn
from milk_lsp.engine.views import iso, turn_changes_result
from milk_lsp.sessions.model import Agent, Session
from milk_lsp.text import fence_for
from milk_lsp.workspace.paths import path_to_uri, shown_path

# ---- slash commands ---------------------------------------------------------------------


async def run_command(
    engine: Engine, bridge: AcpBridge, session: OpenSession, command: str | None, argument: str
) -> PromptResponse | None:
    """The answer of a command that is not a turn, or None (the prompt is a turn)."""
    if command == "local" and not argument:
        return to_local(engine, bridge, session)
    if command == "context":
        return await show_context(engine, bridge, session, argument or None)
    if command == "new":
        return new_chat_hint(bridge, session)
    if command == "undo":
        return await undo(engine, bridge, session, argument)
    return None


def to_local(engine: Engine, bridge: AcpBridge, session: OpenSession) -> PromptResponse:
    """`/local` without a message: every message goes to the local model from now on."""
    session.mode = "local"
    show_mode(engine, bridge, session)
    bridge.notify(session, message("Mode: local. Your messages go to the local model from now on."))
    return PromptResponse(stop_reason="end_turn")


async def show_context(
    engine: Engine, bridge: AcpBridge, session: OpenSession, reason: str | None
) -> PromptResponse:
    with engine_errors("sessionId"):
        preview = await engine.context_preview(session.milk_id, reason)
    fence = fence_for(preview.context_file)
    lines = [
        f"**What Claude would receive** ({preview.mode}: "
        f"{preview.chars.context_file} characters appended to its system prompt"
        + (
            f", {preview.chars.user_message_prefix} in front of your message)"
            if preview.user_message_prefix
            else ")"
        ),
        "",
        "`" + " ".join(preview.argv) + "`",
        "",
        f"{fence}\n{preview.context_file}\n{fence}",
    ]
    if preview.user_message_prefix:
        prefix_fence = fence_for(preview.user_message_prefix)
        lines += ["", f"{prefix_fence}\n{preview.user_message_prefix}\n{prefix_fence}"]
    bridge.notify(session, message("\n".join(lines) + "\n", {"milk": {"kind": "context"}}))
    return PromptResponse(stop_reason="end_turn")


async def undo(
    engine: Engine, bridge: AcpBridge, session: OpenSession, argument: str
) -> PromptResponse:
    """`/undo [force]`: the session's last turn with changes, put back; a conflict is
    told with the files and how to force it."""
    if argument.strip() not in ("", "force"):
        raise invalid_params("prompt", "/undo takes nothing, or `force`", reason="bad_command")
    force = argument.strip() == "force"
    turn_id = await engine.last_undoable_turn(session.milk_id)
    if turn_id is None:
        text = "Nothing to undo: no recent turn of this session changed files."
    else:
        try:
            restored = await engine.turn_undo(session.milk_id, turn_id, force)
        except EngineError as exc:
            if exc.reason is not wire.RequestErrorReason.UNDO_CONFLICT:
                with engine_errors("sessionId"):
                    raise
            text = f"Not undone: {exc.message} Type `/undo force` to do it anyway."
        else:
            names = ", ".join(f"`{shown_path(path, session.workspace)}`" for path in restored)
            text = f"Undone: {names or 'nothing was left to restore'}."
    bridge.notify(session, message(text + "\n", {"milk": {"kind": "undo"}}))
    return PromptResponse(stop_reason="end_turn")


def new_chat_hint(bridge: AcpBridge, session: OpenSession) -> PromptResponse:
    """`/new`, typed although not offered: where a new session comes from over ACP."""
    text = (
        f"This chat is milk session `{session.milk_id}` and stays it, so that it reloads "
        "with everything said in it. For a new session, start a new chat (thread) in your "
        "editor; milk's earlier sessions stay in its session list."
    )
    bridge.notify(session, message(text + "\n", {"milk": {"kind": "new"}}))
    return PromptResponse(stop_reason="end_turn")


# ---- extensions -------------------------------------------------------------------------


async def ext_method(
    engine: Engine,
    bridge: AcpBridge,
    method: str,
    params: dict[str, Any],
    settings_problems: list[str],
) -> dict[str, Any]:
    """`_milk/context`, `_milk/turn/changes`, `_milk/turn/undo` and `_milk/status`."""
    if method == "milk/context":
        try:
            parsed = wire.parse(wire.ContextParams, params)
        except wire.ParamsError as exc:
            raise RequestError(INVALID_PARAMS, str(exc), {"reason": "invalid_params"}) from None
        open_session = bridge.sessions.get(parsed.session_id)
        milk_id = open_session.milk_id if open_session is not None else parsed.session_id
        with engine_errors("sessionId"):
            return (await engine.context_preview(milk_id, parsed.reason)).to_wire()
    if method == "milk/turn/changes":
        turn = _turn_params(bridge, wire.TurnParams, params)
        with engine_errors("sessionId"):
            changes, undone = await engine.turn_changes(turn.session_id, turn.turn_id)
        return turn_changes_result(changes, undone).to_wire()
    if method == "milk/turn/undo":
        asked = _turn_params(bridge, wire.TurnUndoParams, params)
        with engine_errors("sessionId"):
            restored = await engine.turn_undo(asked.session_id, asked.turn_id, asked.force)
        return wire.TurnUndoResult(restored=[path_to_uri(path) for path in restored]).to_wire()
    if method == "milk/status":
        status = (await engine.status()).to_wire()
        status["settingsProblems"] = settings_problems
        return status
    raise RequestError.method_not_found(f"_{method}")


def _turn_params(bridge: AcpBridge, model: type[wire.M], params: dict[str, Any]) -> wire.M:
    """Params of `_milk/turn/*`, their ACP session id mapped to milk's."""
    try:
        parsed = wire.parse(model, params)
    except wire.ParamsError as exc:
        raise RequestError(INVALID_PARAMS, str(exc), {"reason": "invalid_params"}) from None
    open_session = bridge.sessions.get(str(params.get("sessionId")))
    if open_session is not None:
        parsed = parsed.model_copy(update={"session_id": open_session.milk_id})
    return parsed


# ---- what the client is shown of a session ----------------------------------------------


def effective_mode(engine: Engine, session: OpenSession, stored: Session | None = None) -> str:
    if session.mode != "auto":
        return session.mode
    if stored is None:
        try:
            stored = engine.sessions.get_now(session.milk_id)
        except EngineError:
            return "auto"
    return "claude" if with_claude(stored) else "auto"


def show_mode(engine: Engine, bridge: AcpBridge, session: OpenSession) -> None:
    shown = effective_mode(engine, session)
    if shown != session.shown_mode:
        session.shown_mode = shown
        update = CurrentModeUpdate(session_update="current_mode_update", current_mode_id=shown)
        bridge.notify(session, update)


def show_title(engine: Engine, bridge: AcpBridge, session: OpenSession) -> None:
    try:
        stored = engine.sessions.get_now(session.milk_id)
    except EngineError:
        return
    update = SessionInfoUpdate(
        session_update="session_info_update",
        title=stored.title or None,
        updated_at=iso(stored.updated_at),
    )
    bridge.notify(session, update)


def announce(bridge: AcpBridge, session: OpenSession) -> None:
    """After session/new or session/load answered: the commands the chat offers."""
    commands = [
        AvailableCommand(
            name=name,
            description=description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)),
        )
        for name, (description, hint) in COMMANDS.items()
        if name not in UNOFFERED
    ]
    update = AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=commands
    )
    bridge.notify(session, update)


def with_claude(session: Session) -> bool:
    """Whether an `auto` turn of this session would go to Claude (the engine's routing)."""
    current = RoutingState(session.state, session.user_escalated, bool(session.claude_session_id))
    plan, _ = route_turn(current, "auto")
    return plan.agent is Agent.CLAUDE

"""`milk-lsp chat`: a terminal client that drives the real server over LSP like an editor.

It starts `python -m milk_lsp` as a subprocess, initializes it with the workspace folder,
sends one `milk/chat`, prints the streamed text as it arrives (agents and tool calls marked
on stderr-free lines), answers permission questions on the terminal, and exits non-zero
with the server's reason when the turn fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.client import LanguageClient

from milk_lsp import __version__, wire
from milk_lsp.doors import TERMINAL_CLIENT_NAME
from milk_lsp.lsp.standard.questions import permission_question
from milk_lsp.workspace.edit_preview import wire_edit_diff
from milk_lsp.workspace.paths import shown_uri

_MARK = {"local": "local", "claude": "Claude"}
INVALID_PARAMS = -32602


class ChatPrinter:
    """Renders `milk/update` notifications on the terminal as they arrive."""

    def __init__(self, out: Any = None) -> None:
        self.out = out or sys.stdout
        self.workspace: Path | None = None
        """Paths inside it are shown relative to it."""
        self._agent: str | None = None
        self._mid_line = False
        self._calls_shown: set[object] = set()

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        if text:
            self._mid_line = not text.endswith("\n")

    def _line(self, text: str) -> None:
        if self._mid_line:
            self._write("\n")
        self._write(text + "\n")

    def on_update(self, update: dict[str, Any]) -> None:
        kind = update.get("kind")
        agent = update.get("agent")
        if kind == "turn_started":
            self._line(f"── {_MARK.get(str(agent), agent)} ({_why(update)})")
            self._agent = agent
        elif kind == "text":
            if agent != self._agent:
                self._line(f"── {_MARK.get(str(agent), agent)}")
                self._agent = agent
            self._write(str(update.get("delta", "")))
        elif kind == "tool_call":
            status, call_id = update.get("status"), update.get("toolCallId")
            # milk's own reads arrive completed, never running: shown once all the same
            first = status == "completed" and call_id not in self._calls_shown
            if status in ("running", "denied", "failed") or first:
                self._calls_shown.add(call_id)
                summary = json.dumps(update.get("input"), ensure_ascii=False)[:120]
                self._line(f"  ⚙ {update.get('name')} {summary} [{status}]")
        elif kind == "tool_result":
            output = str(update.get("output", "")).strip().splitlines()
            first = output[0][:100] if output else ""
            mark = "✗" if update.get("isError") else "→"
            self._line(f"    {mark} {first}{' …' if len(output) > 1 else ''}")
        elif kind == "escalated":
            self._line(
                f"⇧ escalated to Claude by {update.get('by')}: {update.get('reason')} "
                f"(mode {update.get('mode')}, {update.get('contextChars')} chars of context)"
            )
        elif kind == "need":
            self._line(f"◎ goal: {update.get('currentNeed')}")
        elif kind == "notice":
            self._line(f"[{update.get('severity')}] {update.get('message')}")
        elif kind == "changes":
            changed = [
                f"{shown_uri(str(c.get('uri', '')), self.workspace)} "
                f"(+{c.get('added')} -{c.get('removed')})"
                for c in update.get("changes") or []
                if isinstance(c, dict)
            ]
            self._line(f"✎ {len(changed)} file(s) changed: {', '.join(changed)}")
        elif kind == "turn_ended":
            stop = str(update.get("stopReason"))
            self._line(f"── {_STOP_WORDS.get(stop, stop)}")


_STOP_WORDS = {"end_turn": "done", "cancelled": "cancelled", "error": "failed"}


def _why(update: dict[str, Any]) -> str:
    """Why the turn went to its agent: the option the user gave, else the server's reason
    (a route the command line chose is the user's `--route`, not a choice made for them)."""
    route = update.get("route")
    if route in ("local", "claude"):
        return f"--route {route}"
    return str(update.get("reason"))


_STANDARD_KEYS = {"allow_once": "o", "allow_session": "s", "deny": "d"}


def _ask_on_terminal(params: dict[str, Any], workspace: Path | None = None) -> str:
    """Ask a permission question (or the hand-off question) with the server's own labels;
    who asks and for what comes first, the diff (paths relative to `workspace`) after."""
    options = [o for o in params.get("options") or [] if isinstance(o, dict)]
    if not sys.stdin.isatty():
        sys.stderr.write(f"milk: denied {params.get('tool')} (no terminal to ask on)\n")
        return "deny"
    keys: dict[str, str] = {}
    for number, option in enumerate(options, 1):
        option_id = str(option.get("optionId"))
        keys[_STANDARD_KEYS.get(option_id, str(number))] = option_id
        keys[str(number)] = option_id
    choices = "  ".join(
        f"[{_STANDARD_KEYS.get(str(o.get('optionId')), str(n))}] {o.get('label')}"
        for n, o in enumerate(options, 1)
    )
    if params.get("tool") in ("hand_off_to_claude", "claude_budget"):  # questions in words
        question = f"\n{params.get('description')}\n"
    else:
        question = "\n" + permission_question(params, workspace) + "\n"
        for edit in params.get("edits") or []:
            question += wire_edit_diff(edit, workspace) + "\n"
    answer = input(f"{question}  {choices} > ").strip().lower()
    return keys.get(answer[:1], "deny")


@contextlib.asynccontextmanager
async def connected(
    workspace: Path, settings: dict[str, Any], *, verbose: bool = False
) -> AsyncIterator[tuple[LanguageClient, ChatPrinter]]:
    """The real server as a subprocess, initialized on `workspace`, as an editor would have
    it: updates printed, permission questions asked on the terminal; shut down on exit."""
    client = LanguageClient("milk-chat", __version__, converter_factory=get_converter)
    printer = ChatPrinter()
    printer.workspace = workspace

    @client.feature(wire.UPDATE)
    def on_update(ls: LanguageClient, params: Any) -> None:
        printer.on_update(params if isinstance(params, dict) else {})

    @client.feature(wire.REQUEST_PERMISSION)
    async def on_permission(ls: LanguageClient, params: Any) -> dict[str, str]:
        answer = await asyncio.to_thread(_ask_on_terminal, params, workspace)
        return {"optionId": answer}

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def on_show_message(ls: LanguageClient, params: types.ShowMessageParams) -> None:
        sys.stderr.write(f"milk: {params.message.removeprefix('milk: ')}\n")

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log_message(ls: LanguageClient, params: types.LogMessageParams) -> None:
        if verbose:  # the server's log lines; its log file has them too
            sys.stderr.write(f"milk-lsp: {params.message}\n")

    @client.feature(wire.NUDGE)
    def on_nudge(ls: LanguageClient, params: Any) -> None:
        """Nothing to do: it only makes sure this client reads what came before it."""

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def on_configuration(ls: LanguageClient, params: types.ConfigurationParams) -> list[Any]:
        return [settings or None for _ in params.items]

    await client.start_io(sys.executable, "-m", "milk_lsp", env=dict(os.environ))
    try:
        await client.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                client_info=types.ClientInfo(name=TERMINAL_CLIENT_NAME),
                root_uri=workspace.as_uri(),
                workspace_folders=[
                    types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)
                ],
                capabilities=types.ClientCapabilities(
                    workspace=types.WorkspaceClientCapabilities(configuration=True),
                    experimental={"milk": {"requestPermission": True}},
                ),
                initialization_options=settings or None,
            )
        )
        client.initialized(types.InitializedParams())
        yield client, printer
    finally:
        try:
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
        except Exception:
            pass
        await client.stop()


def _refused(exc: Exception) -> int:
    """A RequestFailed / InvalidParams answer, told on stderr."""
    data = getattr(exc, "data", None)
    reason = data.get("reason") if isinstance(data, dict) else None
    sys.stderr.write(f"milk: {reason + ': ' if reason else ''}{exc}\n")
    return 2


async def run_chat(
    text: str,
    workspace: Path,
    route: str,
    session_id: str | None,
    settings: dict[str, Any],
    *,
    verbose: bool = False,
) -> int:
    async with connected(workspace, settings, verbose=verbose) as (client, _):
        request: dict[str, Any] = {
            "text": text,
            "route": route,
            "workspaceFolder": workspace.as_uri(),
        }
        if session_id:
            request["sessionId"] = session_id
        try:
            result = await client.protocol.send_request_async(wire.CHAT, request)
        except Exception as exc:
            return _refused(exc)
        outcome = result if isinstance(result, dict) else {}
        if outcome.get("stopReason") == "error":
            error = outcome.get("error") or {}
            sys.stderr.write(f"milk: turn failed ({error.get('reason')}): {error.get('message')}\n")
            return 1
        if outcome.get("stopReason") == "cancelled":
            return 130
        sys.stderr.write(f"milk: session {outcome.get('sessionId')}\n")
        return 0


async def run_undo(
    workspace: Path,
    session_id: str | None,
    force: bool,
    settings: dict[str, Any],
    *,
    turn_id: str | None = None,
    verbose: bool = False,
) -> int:
    """`milk-lsp undo`: take back the last turn with changes of the folder's latest session
    (or `session_id`), or the turn `turn_id`, through the server's `milk.undo` command."""
    async with connected(workspace, settings, verbose=verbose) as (client, _):
        execute = client.workspace_execute_command_async
        try:
            if session_id:
                await execute(types.ExecuteCommandParams("milk.switchSession", [session_id]))
            undo: dict[str, Any] = {"force": force}
            if turn_id:
                undo["turnId"] = turn_id
            result = await execute(types.ExecuteCommandParams("milk.undo", [undo]))
        except Exception as exc:
            data = getattr(exc, "data", None)
            if isinstance(data, dict) and data.get("reason") == "undo_conflict":
                sys.stderr.write(f"milk: {exc}\n  (run `milk-lsp undo --force` to do it anyway)\n")
                return 1
            if getattr(exc, "code", None) == INVALID_PARAMS:  # nothing to undo: said in words
                said = str(getattr(exc, "message", "") or exc).removeprefix("arguments: ")
                sys.stderr.write(f"milk: {said}\n")
                return 1
            return _refused(exc)
        restored = result.get("restored", []) if isinstance(result, dict) else []
        names = [shown_uri(str(uri), workspace) for uri in restored]
        turn = result.get("turnId") if isinstance(result, dict) else None
        print(f"milk: undid turn {turn}: " + (", ".join(names) or "nothing left to restore"))
        return 0

"""Taking a turn back from the terminal: `milk-lsp undo`, and `/undo` in `milk-lsp chat`.

Both go through the server's `milk.undo` command, as a plain LSP editor does, so the
terminal undoes exactly what an editor would (the last turn with changes not undone yet,
refusing when a file changed since).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from milk_lsp.terminal.link import connected
from milk_lsp.terminal.printer import ChatPrinter
from milk_lsp.workspace.paths import shown_uri

INVALID_PARAMS = -32602


def refused(exc: Exception, printer: ChatPrinter) -> int:
    """A RequestFailed / InvalidParams answer, told on stderr with its reason."""
    data = getattr(exc, "data", None)
    reason = data.get("reason") if isinstance(data, dict) else None
    printer.say(f"{reason + ': ' if reason else ''}{exc}", "failed")
    return 2


async def undo_with(
    client: LanguageClient,
    printer: ChatPrinter,
    workspace: Path,
    session_id: str | None,
    *,
    force: bool = False,
    turn_id: str | None = None,
) -> int:
    """Take back the last turn with changes of `session_id` (else of the folder's latest
    session), or the turn `turn_id`; 0 when done, 1 when there was nothing to undo or a
    file changed since, 2 when refused otherwise."""
    execute = client.workspace_execute_command_async
    printer.quiet_info = True  # the server's "undid …" message: the files are named below
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
            printer.say(f"{exc}\n  (run `milk-lsp undo --force` to do it anyway)", "warning")
            return 1
        if getattr(exc, "code", None) == INVALID_PARAMS:  # nothing to undo: said in words
            said = str(getattr(exc, "message", "") or exc).removeprefix("arguments: ")
            printer.say(said)
            return 1
        return refused(exc, printer)
    finally:
        printer.quiet_info = False
    restored = result.get("restored", []) if isinstance(result, dict) else []
    names = [shown_uri(str(uri), workspace) for uri in restored]
    turn = result.get("turnId") if isinstance(result, dict) else None
    printer.show(f"milk: undid turn {turn}: " + (", ".join(names) or "nothing left to restore"))
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
    async with connected(workspace, settings, verbose=verbose) as (client, printer):
        return await undo_with(client, printer, workspace, session_id, force=force, turn_id=turn_id)

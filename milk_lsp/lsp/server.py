"""The pygls glue: every handler parses its params, calls the engine and maps the result.

This module, `protocol.py` (reading and writing messages), `editor.py` (the client as the
server sees it) and `standard/handlers.py` (the `milk.*` commands, code actions and
transcripts) are the only ones that import pygls/lsprotocol.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any, BinaryIO

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from milk_lsp import __version__, wire
from milk_lsp.config import MilkConfig, SettingProblem, load_sources, merge_settings
from milk_lsp.doors import door_for_client
from milk_lsp.engine import Engine
from milk_lsp.engine.views import session_detail, session_info, turn_changes_result
from milk_lsp.jsonrpc.framing import FrameReader
from milk_lsp.lsp.editor import Editor
from milk_lsp.lsp.protocol import MilkProtocol, refusals_answered, serve_frames
from milk_lsp.lsp.standard.handlers import install as install_standard_lsp
from milk_lsp.system.orphans import sweep as sweep_orphans
from milk_lsp.workspace.paths import path_to_uri, uri_to_path

logger = logging.getLogger(__name__)

CONFIG_WAIT_SECONDS = 5.0
CLOSE_SECONDS = 0.8
"""When the client's input ends, how long running turns get to end (stored as cancelled)
before the server exits anyway: an editor that quits waits for nobody."""


class MilkServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "milk-lsp",
            __version__,
            protocol_cls=MilkProtocol,
            converter_factory=get_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.editor = Editor(self)
        self.engine = Engine(MilkConfig(), self.editor)
        self._base_config = MilkConfig()
        """Defaults < user file < initializationOptions: what workspace settings merge over."""
        self._told: set[tuple[str, bool, str]] = set()
        """The setting problems told already (key, unknown, message)."""
        self.config_ready = asyncio.Event()
        """Set once the settings pulled at `initialized` are in force; requests wait for it."""

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio, reading with milk's framing (`protocol.serve_frames`) in place of
        pygls' reader, which dies on an absurd Content-Length and drops malformed messages."""
        self._stop_event = stop_event = threading.Event()
        reader = FrameReader(stdin or sys.stdin.buffer)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self._serve(reader, stop_event))
        except BrokenPipeError:
            logger.error("the connection to the client is lost; stopping")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    async def _serve(self, reader: FrameReader, stop_event: threading.Event) -> None:
        """Serve until the input ends; then end what runs, for `CLOSE_SECONDS` at most."""
        assert isinstance(self.protocol, MilkProtocol)
        await serve_frames(reader, self.protocol, stop_event, self.thread_pool)
        closing = asyncio.ensure_future(self.engine.aclose())
        done, _ = await asyncio.wait({closing}, timeout=CLOSE_SECONDS)
        if not done:  # what is left is cancelled on the way out (asyncio.run)
            logger.info("running turns did not end within %s s; exiting anyway", CLOSE_SECONDS)
        elif closing.exception() is not None:
            logger.error("closing failed: %s", closing.exception())

    def start_config(self, initialization_options: Any) -> None:
        """Defaults < the user file < `initializationOptions`, the problems told the user."""
        loaded = load_sources(("initializationOptions", initialization_options))
        if loaded.file_error:
            self.editor.show(f"milk: {loaded.file_error}", "warn")
        self.tell_problems(loaded.problems)
        self._base_config = loaded.config
        self.engine.config = loaded.config

    def settle_config(self, raw: Any, source: str) -> MilkConfig:
        """Workspace settings over the start's, an invalid key keeping the value in force."""
        merged, problems = merge_settings(self._base_config, raw, source, self.engine.config)
        self.tell_problems(problems)
        return merged

    def tell_problems(self, problems: list[SettingProblem]) -> None:
        """Unknown keys go to the log, invalid values are shown; each once per connection
        (the same settings come again from every source and every pull: one problem, one
        line in the editor's log)."""
        for problem in problems:
            told = (problem.key, problem.unknown, problem.message)
            if told in self._told:
                continue
            self._told.add(told)
            if problem.unknown:
                self.editor.log(
                    f"milk: unknown setting '{problem.key}' ignored ({problem.source})", "warn"
                )
            else:
                self.editor.show(
                    f"milk: setting '{problem.key}' is invalid ({problem.message}); "
                    "keeping its previous value",
                    "warn",
                )

    async def pull_configuration(self) -> None:
        if not self.editor.supports("workspace.configuration"):
            return
        try:
            answer = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="milk")])
            )
        except Exception as exc:  # a client that fails here still gets a working server
            logger.warning("workspace/configuration failed: %s", exc)
            return
        raw = answer[0] if answer else None
        await self.engine.set_config(self.settle_config(raw, "workspace settings"))

    async def ready(self) -> None:
        """Wait (briefly) for the settings pulled at `initialized` to be in force."""
        try:
            await asyncio.wait_for(self.config_ready.wait(), CONFIG_WAIT_SECONDS)
        except TimeoutError:  # a client that never sent `initialized`: stop waiting for it
            self.config_ready.set()


server = MilkServer()
standard_lsp = install_standard_lsp(server, server.engine, server.editor, server.ready)
"""The `milk.*` commands, code actions and transcripts (docs/protocol.md, "Standard LSP")."""


async def _parsed(ls: MilkServer, model: type[wire.M], raw: Any) -> wire.M:
    """Validate the params (-32602 naming the field), then wait for the settings."""
    try:
        parsed = wire.parse(model, _plain(raw))
    except wire.ParamsError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    await ls.ready()
    return parsed


def _plain(raw: Any) -> Any:
    """Params arrive as plain JSON values with lsprotocol's converter; guard the odd case."""
    if raw is None or isinstance(raw, dict | list | str | int | float | bool):
        return raw
    return get_converter().unstructure(raw)


# ---- lifecycle ---------------------------------------------------------------------------


@server.feature(types.INITIALIZE)
def on_initialize(ls: MilkServer, params: types.InitializeParams) -> None:
    sweep_orphans()  # kill what runs of dead milk-lsp servers left running (Linux)
    ls.editor.set_client_capabilities(params.capabilities)
    client_name = params.client_info.name if params.client_info is not None else None
    ls.engine.door = door_for_client(client_name, params.capabilities.experimental)
    folders = [
        (f"workspaceFolders.{n}", f.uri) for n, f in enumerate(params.workspace_folders or [])
    ]
    if not folders and params.root_uri:
        folders = [("rootUri", params.root_uri)]
    ls.engine.sessions.set_workspaces(_folder_paths(ls, folders))
    ls.start_config(params.initialization_options)


def _folder_paths(ls: MilkServer, folders: list[tuple[str, str]]) -> list[str]:
    """The resolved paths of `(field, uri)` folders (other schemes left out, as before); a URI
    no path can be made of (a lone surrogate, a NUL) is skipped with a warning naming it."""
    paths = []
    for field, uri in folders:
        path = uri_to_path(uri)
        if path is None:
            continue
        try:
            paths.append(str(path.resolve()))
        except UnicodeError:
            _skipped(ls, field, uri, "it contains a lone surrogate (not valid Unicode)")
        except ValueError:
            _skipped(ls, field, uri, "it contains a NUL character")
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
            _skipped(ls, field, uri, str(exc))
    return paths


def _skipped(ls: MilkServer, field: str, uri: str, problem: str) -> None:
    shown = uri.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate escaped
    ls.editor.log(f"milk: the workspace folder {field} ({shown}) is skipped: {problem}", "warn")


@server.feature(types.INITIALIZED)
async def on_initialized(ls: MilkServer, params: types.InitializedParams) -> None:
    try:
        await ls.pull_configuration()
    finally:
        ls.config_ready.set()
        ls.engine.live.watch()  # turns other doors run on these folders, shown live


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_did_change_configuration(
    ls: MilkServer, params: types.DidChangeConfigurationParams
) -> None:
    if ls.editor.supports("workspace.configuration"):
        await ls.pull_configuration()
        return
    settings = params.settings
    if isinstance(settings, dict) and "milk" in settings:
        await ls.engine.set_config(ls.settle_config(settings["milk"], "didChangeConfiguration"))


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def on_did_change_workspace_folders(
    ls: MilkServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    current = list(ls.engine.sessions.workspaces)
    removed = [(f"removed.{n}", f.uri) for n, f in enumerate(params.event.removed)]
    for path in _folder_paths(ls, removed):
        if path in current:
            current.remove(path)
    current += _folder_paths(ls, [(f"added.{n}", f.uri) for n, f in enumerate(params.event.added)])
    ls.engine.sessions.set_workspaces(current)


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: MilkServer, params: None) -> None:
    await ls.engine.aclose()


# ---- sessions ----------------------------------------------------------------------------


@server.feature(wire.SESSION_NEW)
async def on_session_new(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.SessionNewParams, params)
    with refusals_answered():
        session = await ls.engine.sessions.new(parsed.workspace_folder, parsed.title)
    return session_info(session).to_wire()


@server.feature(wire.SESSION_LIST)
async def on_session_list(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.SessionListParams, params)
    with refusals_answered():
        sessions = await ls.engine.sessions.of_workspace(parsed.workspace_folder)
    return {"sessions": [session_info(s).to_wire() for s in sessions]}


@server.feature(wire.SESSION_GET)
async def on_session_get(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.SessionGetParams, params)
    with refusals_answered():
        session = await ls.engine.sessions.get(parsed.session_id)
        records = await ls.engine.sessions.records(session.id, parsed.limit)
        infos = await ls.engine.sessions.turn_infos(session.id, records)
    return session_detail(session, records, infos).to_wire()


@server.feature(wire.SESSION_DELETE)
async def on_session_delete(ls: MilkServer, params: Any) -> None:
    parsed = await _parsed(ls, wire.SessionIdParams, params)
    with refusals_answered():
        await ls.engine.delete_session(parsed.session_id)
    standard_lsp.door.book.drop(parsed.session_id)


# ---- turns -------------------------------------------------------------------------------


@server.feature(wire.CHAT)
async def on_chat(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.ChatParams, params)
    with refusals_answered():
        result = await ls.engine.chat(parsed)
    return result.to_wire()


@server.feature(wire.ESCALATE)
async def on_escalate(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.EscalateParams, params)
    with refusals_answered():
        result = await ls.engine.escalate(parsed)
    return result.to_wire()


@server.feature(wire.CANCEL)
async def on_cancel(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.SessionIdParams, params)
    return {"cancelled": await ls.engine.cancel(parsed.session_id)}


@server.feature(wire.CONTEXT)
async def on_context(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.ContextParams, params)
    with refusals_answered():
        preview = await ls.engine.context_preview(parsed.session_id, parsed.reason)
    return preview.to_wire()


@server.feature(wire.STATUS)
async def on_status(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.StatusParams, params if isinstance(params, dict) else {})
    status = await ls.engine.status(check_login=parsed.check_login)
    return status.to_wire()


@server.feature(wire.STATS)
async def on_stats(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.StatsParams, params)
    with refusals_answered():
        stats = await ls.engine.sessions.stats(parsed.workspace_folder)
    return stats.to_wire()


# ---- review and undo ---------------------------------------------------------------------


@server.feature(wire.TURN_CHANGES)
async def on_turn_changes(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.TurnParams, params)
    with refusals_answered():
        changes, undone = await ls.engine.turn_changes(parsed.session_id, parsed.turn_id)
    return turn_changes_result(changes, undone).to_wire()


@server.feature(wire.TURN_UNDO)
async def on_turn_undo(ls: MilkServer, params: Any) -> dict[str, Any]:
    parsed = await _parsed(ls, wire.TurnUndoParams, params)
    with refusals_answered():
        restored = await ls.engine.turn_undo(parsed.session_id, parsed.turn_id, parsed.force)
    return wire.TurnUndoResult(restored=[path_to_uri(path) for path in restored]).to_wire()

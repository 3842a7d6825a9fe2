"""A pytest-lsp client that behaves like an LSP editor without milk's plugin.

It keeps buffers: a document it is asked to show (`window/showDocument`) is read from disk
and opened (`didOpen`), `workspace/applyEdit` is applied to its buffer and reported back
with `didChange` (incremental, as editors do), and a test can type into a buffer. It
answers `window/showMessageRequest` from a list, records `$/progress`, `window/showMessage`
and every `milk/update`. Capabilities are chosen per test (with or without showDocument,
applyEdit, code action literals).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.e2e.conftest import Env, first_arrival

UPDATE = "milk/update"


def _units(char: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8"))
    return 2 if ord(char) > 0xFFFF and encoding == "utf-16" else 1


def offset_of(text: str, line: int, character: int, encoding: str = "utf-16") -> int:
    """The string offset of an LSP position (in the negotiated units) in `text`."""
    lines = text.split("\n")
    offset = sum(len(item) + 1 for item in lines[:line])
    if line >= len(lines):
        return len(text)
    units = 0
    for index, char in enumerate(lines[line]):
        if units >= character:
            return offset + index
        units += _units(char, encoding)
    return offset + len(lines[line])


def position_of(text: str, offset: int, encoding: str = "utf-16") -> types.Position:
    before = text[:offset]
    last = before[before.rfind("\n") + 1 :]
    units = sum(_units(c, encoding) for c in last)
    return types.Position(line=before.count("\n"), character=units)


@dataclass
class Buffer:
    uri: str
    text: str
    version: int = 1


@dataclass
class EditRecord:
    at: float
    uri: str
    edits: list[types.TextEdit]
    whole: bool
    """The edit replaced the whole document (a resynchronisation)."""


class Editor(LanguageClient):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__(converter_factory=get_converter)
        self.updates: list[dict[str, Any]] = []
        self.update_event = asyncio.Event()
        self.buffers: dict[str, Buffer] = {}
        self.edit_log: list[EditRecord] = []
        self.open_on_show = True
        self.refuse_edits = False
        self.echo_delay = 0.0
        """Seconds between answering applyEdit and sending its didChange (0: before)."""
        self.message_requests: list[types.ShowMessageRequestParams] = []
        self.message_answers: list[str | None] = []
        self.changed = asyncio.Event()
        self.init_result: types.InitializeResult | None = None
        self.encoding = "utf-16"
        """The position encoding the server chose (set at initialize)."""
        self._pending: set[asyncio.Task[None]] = set()

    # ---- buffers --------------------------------------------------------------------------

    def open(self, path: Path) -> Buffer:
        uri = path.as_uri()
        buffer = Buffer(uri, path.read_text(encoding="utf-8"))
        self.buffers[uri] = buffer
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="markdown", version=1, text=buffer.text
                )
            )
        )
        return buffer

    def close(self, uri: str) -> None:
        self.buffers.pop(uri)
        self.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    def type_at(self, uri: str, offset: int, text: str, remove: int = 0) -> None:
        """The user types `text` at a string offset (replacing `remove` characters)."""
        buffer = self.buffers[uri]
        start = position_of(buffer.text, offset, self.encoding)
        end = position_of(buffer.text, offset + remove, self.encoding)
        buffer.text = buffer.text[:offset] + text + buffer.text[offset + remove :]
        self._report(buffer, [(types.Range(start=start, end=end), text)])

    def _report(self, buffer: Buffer, changes: list[tuple[types.Range, str]]) -> None:
        buffer.version += 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=buffer.uri, version=buffer.version
                ),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=range_, text=text)
                    for range_, text in changes
                ],
            )
        )
        self.changed.set()

    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        changes = params.edit.changes or {}
        for uri, edits in changes.items():
            buffer = self.buffers.get(uri)
            if buffer is None:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="not open")
            text = buffer.text
            whole = any(
                e.range.start.line == 0
                and e.range.start.character == 0
                and self.offset(text, e.range.end) == len(text)
                and len(text) > 0
                for e in edits
            )
            self.edit_log.append(EditRecord(time.monotonic(), uri, list(edits), whole))
            if self.refuse_edits:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="read-only")
            # Apply from the end, so earlier positions stay valid; report in that order.
            ordered = sorted(
                edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
            )
            reported = []
            for edit in ordered:
                start = self.offset(text, edit.range.start)
                end = self.offset(text, edit.range.end)
                text = text[:start] + edit.new_text + text[end:]
                reported.append((edit.range, edit.new_text))
            buffer.text = text
            if self.echo_delay:
                task = asyncio.ensure_future(self._late_report(buffer, reported))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)
            else:
                self._report(buffer, reported)
        return types.ApplyWorkspaceEditResult(applied=True)

    def offset(self, text: str, position: types.Position) -> int:
        return offset_of(text, position.line, position.character, self.encoding)

    async def _late_report(self, buffer: Buffer, changes: list[tuple[types.Range, str]]) -> None:
        await asyncio.sleep(self.echo_delay)
        self._report(buffer, changes)

    # ---- waiting ----------------------------------------------------------------------------

    async def wait_for_update(self, predicate: Any, seconds: float = 30.0) -> dict[str, Any]:
        update: dict[str, Any] = await first_arrival(
            self.updates, self.update_event, predicate, seconds
        )
        return update

    async def turn_ended(self, turn_id: str) -> dict[str, Any]:
        return await self.wait_for_update(
            lambda u: u["kind"] == "turn_ended" and u["turnId"] == turn_id
        )

    async def until(self, predicate: Any, seconds: float = 10.0) -> None:
        """Wait until `predicate()` holds (checked as the server's messages arrive)."""
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for the condition")
            await asyncio.sleep(0.02)

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    def progress_messages(self) -> list[str]:
        return [
            value.message
            for reports in self.progress_reports.values()
            for value in reports
            if isinstance(value, types.WorkDoneProgressReport) and value.message
        ]


def _command_or_code_action(raw: Any, _: type) -> types.Command | types.CodeAction:
    """lsprotocol takes any object with a `command` for a Command, though a CodeAction's
    `command` is an object (a Command) and a Command's a string."""
    converter = get_converter()
    if isinstance(raw.get("command"), str):
        return converter.structure(raw, types.Command)
    return converter.structure(raw, types.CodeAction)


def make_editor() -> Editor:
    client = Editor()
    client.protocol._converter.register_structure_hook(
        Union[types.Command, types.CodeAction],  # noqa: UP007 - the key lsprotocol uses
        _command_or_code_action,
    )
    features = dict(DEFAULT_CLIENT_FEATURES)
    features.pop(types.WINDOW_SHOW_DOCUMENT)
    register_lsp_features(client, features)

    @client.feature(UPDATE)
    def on_update(ls: Editor, params: Any) -> None:
        ls.updates.append(params)
        ls.update_event.set()

    @client.feature(types.WINDOW_SHOW_DOCUMENT)
    def on_show_document(ls: Editor, params: types.ShowDocumentParams) -> types.ShowDocumentResult:
        ls.shown_documents.append(params)
        path = Path(params.uri.removeprefix("file://"))
        if ls.open_on_show and params.uri not in ls.buffers:
            ls.open(path)
        return types.ShowDocumentResult(success=True)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(
        ls: Editor, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        return ls.apply(params)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_message_request(
        ls: Editor, params: types.ShowMessageRequestParams
    ) -> types.MessageActionItem | None:
        ls.message_requests.append(params)
        answer = ls.message_answers.pop(0) if ls.message_answers else None
        return None if answer is None else types.MessageActionItem(title=answer)

    return client


def capabilities(
    *,
    show_document: bool = True,
    apply_edit: bool = True,
    code_action_literals: bool = True,
    configuration: bool = True,
    progress: bool = True,
    encodings: list[str] | None = None,
) -> types.ClientCapabilities:
    literal = None
    if code_action_literals:
        literal = types.ClientCodeActionLiteralOptions(
            code_action_kind=types.ClientCodeActionKindOptions(
                value_set=[kind.value for kind in types.CodeActionKind]
            )
        )
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=encodings)
        if encodings
        else None,
        window=types.WindowClientCapabilities(
            work_done_progress=progress,
            show_document=types.ShowDocumentClientCapabilities(support=True)
            if show_document
            else None,
        ),
        workspace=types.WorkspaceClientCapabilities(
            configuration=configuration, apply_edit=apply_edit
        ),
        text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(code_action_literal_support=literal)
        ),
    )


@dataclass
class Editors:
    """Starts real servers for one test, each driven by an `Editor`."""

    env: Env
    started: list[Editor] = field(default_factory=list)

    async def start(
        self,
        caps: types.ClientCapabilities | None = None,
        *,
        settings: dict[str, Any] | None = None,
        workspace_config: Any = None,
    ) -> Editor:
        config = ClientServerConfig(
            server_command=[sys.executable, "-m", "milk_lsp"],
            client_factory=make_editor,
            server_env=self.env.server_env(),
        )
        editor = await config.start()
        assert isinstance(editor, Editor)
        self.started.append(editor)
        if workspace_config is not None:
            editor.set_configuration(workspace_config, section="milk")
        uri = self.env.workspace.as_uri()
        editor.init_result = result = await editor.initialize_session(
            types.InitializeParams(
                capabilities=caps or capabilities(),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name="workspace")],
                initialization_options=settings if settings is not None else self.env.settings,
            )
        )
        chosen = result.capabilities.position_encoding
        editor.encoding = str(getattr(chosen, "value", chosen or "utf-16"))
        return editor

    async def stop(self, editor: Editor) -> None:
        self.started.remove(editor)
        with contextlib.suppress(Exception):  # a server already gone is stopped
            await asyncio.wait_for(editor.shutdown_session(), 10)
        await editor.stop()

    async def close(self) -> None:
        for editor in list(self.started):
            await self.stop(editor)


def transcript_files(env: Env) -> list[Path]:
    return sorted((env.storage / "transcripts").glob("*.md"))

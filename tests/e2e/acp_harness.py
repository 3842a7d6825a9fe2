"""Drives the real `milk-lsp acp` subprocess with the ACP SDK's own client side.

`RecordingClient` is the editor half (the SDK's `Client` interface): it records every
`session/update`, answers permission questions from a script, and keeps "editor buffers"
that `fs/read_text_file` / `fs/write_text_file` read and write. `start_agent` spawns the
agent with the SDK's `spawn_agent_process` in the test's isolated environment (XDG dirs,
MILK_CONFIG_FILE, MILK_LOG_DIR from `tests/e2e/conftest.Env`), with the settings written to
the config file the agent reads, and initializes it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    WriteTextFileResponse,
)

from tests.e2e.conftest import Env, first_arrival

REPO = Path(__file__).resolve().parents[2]


@dataclass
class RecordingClient:
    updates: list[tuple[str, Any]] = field(default_factory=list)
    """(session id, update model) in arrival order."""
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    permission_answers: list[str] = field(default_factory=list)
    """optionIds in order; "hang" waits until `release` is set, then answers cancelled."""
    buffers: dict[str, str] = field(default_factory=dict)
    """The editor's text by absolute path (what fs/read_text_file answers)."""
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    refuse_writes: bool = False
    save_writes: bool = False
    """Write `fs/write_text_file` to disk too, as acpx does (a client that saves)."""
    question_open: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    # ---- the SDK's Client interface ---------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.arrived.set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append(
            {
                "sessionId": session_id,
                "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options],
                "meta": kwargs,
            }
        )
        answer = self.permission_answers.pop(0) if self.permission_answers else "deny"
        if answer == "hang":
            self.question_open.set()
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        limit: int | None = None,
        line: int | None = None,
        **kw: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        if self.refuse_writes:
            raise RequestError(-32603, "the buffer is read-only")
        self.writes.append((path, content))
        self.buffers[path] = content
        if self.save_writes:
            await asyncio.to_thread(Path(path).write_text, content)
        return WriteTextFileResponse()

    # ---- reading what arrived -------------------------------------------------------

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for s, u in self.updates if session_id in (None, s)]

    def of_kind(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if u.session_update == kind and session_id in (None, s)]

    def text(self, session_id: str | None = None, agent: str | None = None) -> str:
        chunks = self.of_kind("agent_message_chunk", session_id)
        return "".join(
            c.content.text
            for c in chunks
            if c.content.type == "text"  # a citation comes as a resource link after the text
            and (agent is None or (c.field_meta or {}).get("milk", {}).get("agent") == agent)
        )

    async def wait_for(self, predicate: Any, seconds: float = 20.0) -> Any:
        _, update = await first_arrival(
            self.updates, self.arrived, lambda pair: predicate(pair[1]), seconds
        )
        return update


def write_config(env: Env, settings: dict[str, Any] | None = None) -> None:
    path = env.root / "config" / "milk" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings if settings is not None else env.settings))


@dataclass
class Agent:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    init: InitializeResponse
    client: RecordingClient
    stderr: Path

    async def new_session(self, cwd: Path) -> str:
        response = await self.conn.new_session(cwd=str(cwd), mcp_servers=[])
        return response.session_id

    async def say(self, session_id: str, text: str, *blocks: Any) -> Any:
        prompt = [TextContentBlock(type="text", text=text), *blocks]
        return await self.conn.prompt(session_id=session_id, prompt=prompt)


@asynccontextmanager
async def start_agent(
    env: Env,
    client: RecordingClient | None = None,
    *,
    fs: bool = True,
    args: tuple[str, ...] = (),
    settings: dict[str, Any] | None = None,
) -> AsyncIterator[Agent]:
    client = client or RecordingClient()
    write_config(env, settings)
    stderr_path = env.root / f"acp-stderr-{len(list(env.root.glob('acp-stderr-*')))}.log"
    with stderr_path.open("wb") as stderr:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "milk_lsp",
            "acp",
            *args,
            env=env.server_env(),
            cwd=REPO,
            transport_kwargs={"stderr": stderr, "shutdown_timeout": 10.0},
        ) as (conn, process):
            init = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs)
                    ),
                    client_info=Implementation(name="pytest", version="0"),
                ),
                30,
            )
            yield Agent(conn, process, init, client, stderr_path)

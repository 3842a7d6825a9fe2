"""`milk/status` and `milk-lsp doctor`: is the local model reachable, is `claude` there."""

from __future__ import annotations

import asyncio
from pathlib import Path

from milk_lsp import __version__, wire
from milk_lsp.agents.claude.cli import cli_version, not_found_message, resolve_cli
from milk_lsp.engine import Engine
from milk_lsp.local_model.embedded import EmbeddedSettings, model_size, planned_model
from milk_lsp.system.orphans import resident_bytes

STATUS_ATTEMPTS = 3


async def collect_status(engine: Engine) -> wire.Status:
    """Checked again when the settings change during the check: the answer is of one set of
    settings, and the old local client (which the change closes) is not used after."""
    provider = await engine.local_provider()
    if provider == "embedded":
        return await _embedded_status(engine)
    for attempt in range(STATUS_ATTEMPTS):
        config = engine.config
        try:
            (reachable, model, local_error), claude = await asyncio.gather(
                engine.local.probe(), _claude_status(engine)
            )
        except RuntimeError:  # httpx: the client was closed by the settings change
            if engine.config is config or attempt == STATUS_ATTEMPTS - 1:
                raise
            continue
        if engine.config is config:
            break
    local_cfg = config.local
    return wire.Status(
        version=__version__,
        local=wire.LocalStatus(
            base_url=local_cfg.base_url,
            model=local_cfg.model or model,
            reachable=reachable,
            error=local_error,
            provider="openai",
        ),
        claude=claude,
        storage=str(config.storage_path()),
    )


async def _embedded_status(engine: Engine) -> wire.Status:
    """The embedded engine is not started for a status: a stopped one is reachable when its
    model could load (the engine installed, the file a GGUF or one to download); a running
    one is probed."""
    config = engine.config
    settings = EmbeddedSettings.of(config.local)
    server = engine.embedded
    claude_task = asyncio.ensure_future(_claude_status(engine))
    planned = await asyncio.to_thread(planned_model, settings)
    model_path = server.model_path if server is not None and server.model_path else planned.path
    base_url, model = "", Path(model_path).stem or planned.name or None
    state: wire.LoadState = "stopped" if server is None else server.state
    load_seconds = None if server is None else server.load_seconds
    error = planned.problem.message if planned.problem is not None else None
    if error is None and server is not None and state == "failed":
        error = server.error
    reachable = error is None
    if server is not None and state == "running" and server.base_url:
        base_url = server.base_url
        reachable, _, error = await engine.local.probe()
    return wire.Status(
        version=__version__,
        local=wire.LocalStatus(
            base_url=base_url,
            model=model,
            reachable=reachable,
            error=error,
            provider="embedded",
            model_path=model_path or None,
            model_bytes=model_size(model_path) if model_path else planned.size,
            load_state=state,
            load_seconds=load_seconds,
            memory_bytes=(
                resident_bytes(server.pid)
                if server is not None and state == "running" and server.pid
                else None
            ),
        ),
        claude=await claude_task,
        storage=str(config.storage_path()),
    )


async def _claude_status(engine: Engine) -> wire.ClaudeStatus:
    settings = engine.claude_settings()
    resolved = resolve_cli(settings)
    skip = True if settings.skip_permissions else None
    if resolved.path is None:
        return wire.ClaudeStatus(
            path=settings.path,
            found=False,
            error=not_found_message(settings),
            skip_permissions=skip,
        )
    version = await cli_version(resolved.path)
    error = None if version else f"{resolved.path} did not answer --version"
    return wire.ClaudeStatus(
        path=resolved.path,
        found=True,
        version=version,
        error=error,
        skip_permissions=skip,
    )

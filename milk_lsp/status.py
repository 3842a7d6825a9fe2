"""`milk/status` and `milk-lsp doctor`: is the local model reachable, is `claude` there."""

from __future__ import annotations

import asyncio

from milk_lsp import __version__, wire
from milk_lsp.agents.claude_cli import cli_version, not_found_message, resolve_cli
from milk_lsp.engine import Engine


async def collect_status(engine: Engine) -> wire.Status:
    local_cfg = engine.config.local
    (reachable, model, local_error), claude = await asyncio.gather(
        engine.local.probe(), _claude_status(engine)
    )
    return wire.Status(
        version=__version__,
        local=wire.LocalStatus(
            base_url=local_cfg.base_url,
            model=local_cfg.model or model,
            reachable=reachable,
            error=local_error,
        ),
        claude=claude,
        storage=str(engine.config.storage_path()),
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

"""`milk/status` and `milk-lsp doctor`: is the local model reachable, is `claude` there."""

from __future__ import annotations

import asyncio

from milk_lsp import __version__, wire
from milk_lsp.agents.claude_cli import cli_version, not_found_message, resolve_cli
from milk_lsp.engine import Engine

STATUS_ATTEMPTS = 3


async def collect_status(engine: Engine) -> wire.Status:
    """Checked again when the settings change during the check: the answer is of one set of
    settings, and the old local client (which the change closes) is not used after."""
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
        ),
        claude=claude,
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

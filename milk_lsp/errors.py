"""The one error the engine's parts raise to a door: a request that cannot be served.

Each door maps it to its protocol in one place (`lsp/protocol.py`, `acp/errors.py`).
"""

from __future__ import annotations

from typing import Any

from milk_lsp.wire import RequestErrorReason


class EngineError(Exception):
    """A request that cannot be served; `reason` is PROTOCOL.md's RequestFailed reason."""

    def __init__(
        self, reason: RequestErrorReason, message: str, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.data = data or {}
        """More for the client than the reason (e.g. the files of an `undo_conflict`)."""


def busy(session_id: str) -> EngineError:
    return EngineError(
        RequestErrorReason.SESSION_BUSY,
        f"session {session_id} is still running a turn; cancel it or wait",
    )


def unknown_turn(session_id: str, turn_id: str) -> EngineError:
    return EngineError(
        RequestErrorReason.TURN_NOT_FOUND,
        f"no recorded turn {turn_id} in session {session_id} (turns from before milk kept"
        " changes cannot be reviewed or undone)",
    )


def storage_failed(exc: BaseException, doing: str = "") -> EngineError:
    """A store or disk failure, as `storage_failed` (`doing` says what was being done)."""
    message = f"{doing}: {exc}" if doing else str(exc)
    return EngineError(RequestErrorReason.STORAGE_FAILED, message)

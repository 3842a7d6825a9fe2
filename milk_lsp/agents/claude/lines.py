"""The lines milk writes to the Claude Code CLI's stdin (stream-json): the prompt, the
answers to its `can_use_tool` control requests, and the interrupt."""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def _line(payload: Message) -> bytes:
    return (json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def user_message_line(text: str) -> bytes:
    """The prompt as a stream-json user message.

    ``client_composed`` makes the CLI deliver it as written: without it an ``@path`` in the
    text makes the CLI read that file and send its content (CLI ≥ 2.1.248).
    """
    return _line(
        {
            "type": "user",
            "session_id": "",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": None,
            "client_composed": True,
        }
    )


def allow_line(request_id: str, tool_input: Any) -> bytes:
    """Allow a ``can_use_tool`` request, echoing the original input as ``updatedInput``."""
    response: Message = {"behavior": "allow"}
    if isinstance(tool_input, dict):
        response["updatedInput"] = tool_input
    return _line(
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response},
        }
    )


def deny_line(request_id: str, message: str) -> bytes:
    """Deny a ``can_use_tool`` request; Claude gets ``message`` as the tool's error result."""
    return _line(
        {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": request_id,
                "response": {"behavior": "deny", "message": message},
            },
        }
    )


def error_response_line(request_id: str, error: str) -> bytes:
    """Answer a control request milk-lsp does not serve (hooks, SDK MCP servers)."""
    return _line(
        {
            "type": "control_response",
            "response": {"subtype": "error", "request_id": request_id, "error": error},
        }
    )


def interrupt_line(request_id: str) -> bytes:
    """Ask the CLI to stop the running turn (as Esc does in its terminal UI)."""
    return _line(
        {"type": "control_request", "request_id": request_id, "request": {"subtype": "interrupt"}}
    )

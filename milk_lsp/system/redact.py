"""Keeping secrets out of everything milk quotes: updates, turn results and the log.

A model server may echo the request's `Authorization` header in an error body, and milk
quotes error bodies so the user can act on them. Every configured secret (`local.apiKey`,
the API keys in the environment that reach `claude`) is registered here, and the text that
leaves milk goes through `redact`. The log handlers get a `RedactingFilter`.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

MASK = "[redacted]"
MIN_SECRET_CHARS = 8
"""Shorter values are not treated as secrets: masking "abc" would mangle ordinary text."""
ENV_SECRETS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
)

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()


def register(value: str | None) -> None:
    """Treat `value` as a secret from now on (None and short values are ignored)."""
    global _secrets
    if value is None or len(value) < MIN_SECRET_CHARS:
        return
    with _lock:
        _secrets = _secrets | {value}


def register_environment() -> None:
    for name in ENV_SECRETS:
        register(os.environ.get(name))


def redact(text: str) -> str:
    """`text` with every registered secret replaced by `[redacted]`."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_value(value: Any) -> Any:
    """A JSON-like value with its strings redacted (dicts and lists walked)."""
    if not _secrets:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    return value


class RedactingFilter(logging.Filter):
    """Masks secrets in a log record's final message (and its traceback text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets:
            return True
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True

"""A tool call's arguments, typed, and the failures a tool reports to the model.

Small models send numbers and booleans as strings, or leave a required argument out: each
slip becomes one sentence the model can act on, never an exception in the server.
"""

from __future__ import annotations

import contextlib
from typing import Any


class ToolFailed(Exception):
    """The call cannot be done; the message tells the model why."""


class BadArgument(ToolFailed):
    """An argument is missing or has the wrong type."""


class ToolArguments:
    """Typed access to a tool call's JSON arguments; a bad one raises `BadArgument`.

    Lenient where small models often slip: numbers and booleans may come as strings.
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def text(
        self,
        name: str,
        *,
        default: str | None = None,
        allow_empty: bool = False,
        strip: bool = True,
    ) -> str:
        value = self.raw.get(name)
        if value is None:
            if default is None:
                raise BadArgument(f"missing required argument {name!r}")
            return default
        if not isinstance(value, str):
            raise BadArgument(f"{name!r} must be a string, not {json_type(value)}")
        if not allow_empty and not (value.strip() if strip else value):
            raise BadArgument(f"{name!r} must not be empty")
        return value

    def integer(self, name: str, *, minimum: int) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadArgument(f"{name!r} must be an integer, not {json_type(value)}")
        if value < minimum:
            raise BadArgument(f"{name!r} must be at least {minimum}")
        return value

    def number(self, name: str) -> float | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise BadArgument(f"{name!r} must be a number, not {json_type(value)}")
        return float(value)

    def flag(self, name: str, *, default: bool) -> bool:
        value = self.raw.get(name)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise BadArgument(f"{name!r} must be true or false, not {json_type(value)}")
        return value


def json_type(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "an object", type(None): "null"})
    return names.get(type(value), type(value).__name__)

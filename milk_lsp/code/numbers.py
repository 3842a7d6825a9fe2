"""Numbers as code writes them (`0x100`, `1_000`, `1e3`, `100`), as values: what an answer's
stated value is compared with, in what the model saw and in the workspace's files."""

from __future__ import annotations

import re

LITERAL = re.compile(
    r"(?<![\w.])(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|"
    r"\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\w])"
)
"""A number literal of most languages (and of prose): not part of a name (`sha256`)."""


def literal_values(text: str) -> set[float]:
    """The values of the number literals in `text`."""
    values: set[float] = set()
    for found in LITERAL.finditer(text):
        plain = found.group().replace("_", "")
        try:
            if plain[:2].lower() in ("0x", "0o", "0b"):
                values.add(float(int(plain, 0)))
            else:
                values.add(float(plain))
        except ValueError:  # `0x_` or a lone `_`-run
            continue
    return values


def value_key(value: float) -> str:
    """One spelling per value (`256` for 256.0, 0x100 and 2.56e2), to look it up by."""
    return str(int(value)) if value.is_integer() else repr(value)

"""Which way a local turn runs (`local.strategy`): guided (milk drives, the model fills in
one checked shape) or agent (the model drives the tool loop).

`auto` decides from evidence about the model, never from the request: guided when the
model's name gives its size and it is small (at most `SMALL_MODEL_BILLIONS`: models of that
size drive tool loops worst), when the server's chat template drops tool definitions, and
when the model failed the tool protocol in an earlier turn of this server (calls written as
text, unknown tools, unrunnable or repeated calls); agent otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from milk_lsp.agents.base import LocalSignal

SMALL_MODEL_BILLIONS = 8.0
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.IGNORECASE)
"""`qwen2.5-coder-1.5b-instruct`, `llama3.1:8b`, `smollm2-135m`: a size in the name."""
PROTOCOL_SIGNALS = frozenset(
    {
        LocalSignal.DESCRIBED_CALL,
        LocalSignal.UNKNOWN_TOOL,
        LocalSignal.UNRUNNABLE_CALL,
        LocalSignal.REPEATED_CALL,
        LocalSignal.ROUND_LIMIT,
    }
)
"""Hand-off signals that say the model failed to drive the tool loop."""


@dataclass(frozen=True)
class Strategy:
    guided: bool
    why: str
    """In words, for the turn's notice and `milk/status`."""

    @property
    def name(self) -> str:
        return "guided" if self.guided else "agent"


def model_billions(model: str) -> float | None:
    """The parameter count a model's name gives, in billions (None: it gives none)."""
    sizes = [
        float(number) / (1000.0 if unit.lower() == "m" else 1.0)
        for number, unit in _SIZE.findall(model.rsplit("/", 1)[-1])
    ]
    return max(sizes) if sizes else None


def choose(setting: str, model: str, *, drops_tools: bool, failed_protocol: bool) -> Strategy:
    """The strategy for a turn on `model` (see the module)."""
    if setting == "guided":
        return Strategy(True, "local.strategy is guided")
    if setting == "agent":
        return Strategy(False, "local.strategy is agent")
    size = model_billions(model)
    if size is not None and size <= SMALL_MODEL_BILLIONS:
        return Strategy(True, f"{model} is a small model ({size:g}B parameters)")
    if drops_tools:
        return Strategy(True, f"the model server's template for {model} has no tool calls")
    if failed_protocol:
        return Strategy(True, f"{model} failed to drive the tool loop in an earlier turn")
    return Strategy(False, f"{model} drives the tool loop")

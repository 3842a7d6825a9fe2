"""The project's own fast check, run before and after guided edits: evidence that a file
parsing is not (a Go rename that leaves a use of the old name behind parses, and does not
build). Kept as data per kind of project: the file at the workspace's root that says which
check it has, and the check's argv (never a shell). It counts only when it passed before
the edits: a project already failing says nothing about them.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from milk_lsp.agents.local.commands import CommandNotStarted, run_argv
from milk_lsp.guided.locate import Chunk

TIMEOUT_SECONDS = 120.0
OUTPUT_CHARS = 4000
PLACES = 6
"""Places of a failed check's output shown back to the model, at most."""
_PLACE = (
    re.compile(r"(?<![\w/.-])(?:\./)?((?:[\w.@-]+/)*[\w.@-]+\.\w+):(\d+)"),  # go, cargo, gcc
    re.compile(r"(?<![\w/.-])((?:[\w.@-]+/)*[\w.@-]+\.\w+)\((\d+),\d+\)"),  # tsc
)
"""How checkers name a place in a file, as data: `path:line[:col]`, `path(line,col)`."""


@dataclass(frozen=True)
class ProjectCheck:
    marker: str
    """A file at the workspace's root that says the project has this check."""
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    then: tuple[tuple[str, ...], ...] = ()
    """More commands of the same program, run in order after `argv` passes."""

    @property
    def steps(self) -> tuple[tuple[str, ...], ...]:
        return (self.argv, *self.then)

    @property
    def command(self) -> str:
        """The commands as the user reads them (no shell runs them)."""
        return ", then ".join(" ".join(step) for step in self.steps)

    def program(self, root: Path) -> str | None:
        """The check's program, installed (a path inside the project, or on PATH)."""
        first = self.argv[0]
        if "/" in first:
            local = root / first
            return str(local) if local.is_file() else None
        return shutil.which(first)


CHECKS: tuple[ProjectCheck, ...] = (
    # `go vet` type-checks the test files too (`go build` leaves them out), and the short
    # tests then say whether what the code does still holds (a message a test compares
    # word for word); no download. A suite slower than the bound fails the baseline, and
    # then says nothing of the edits.
    ProjectCheck(
        "go.mod",
        ("go", "vet", "./..."),
        {"GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "-mod=mod"},
        then=(("go", "test", "-short", "./..."),),
    ),
    ProjectCheck("tsconfig.json", ("node_modules/.bin/tsc", "--noEmit", "-p", ".")),
    ProjectCheck("Cargo.toml", ("cargo", "check", "--offline", "--quiet")),
)


def check_for(root: Path) -> ProjectCheck | None:
    """The check of the project at `root`, when it has one and its program is installed."""
    for check in CHECKS:
        if (root / check.marker).is_file() and check.program(root) is not None:
            return check
    return None


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    output: str


async def run_check(check: ProjectCheck, root: Path) -> CheckOutcome:
    """One run of `check`'s commands in `root`, in order, each bounded in time, up to the
    first that fails (its output is the outcome's); its program resolved first."""
    program = check.program(root)
    if program is None:
        return CheckOutcome(False, f"{check.argv[0]} is not installed")
    output = ""
    for step in check.steps:
        argv = [program, *step[1:]]
        try:
            result = await run_argv(argv, root, TIMEOUT_SECONDS, OUTPUT_CHARS, env=check.env)
        except CommandNotStarted as exc:
            return CheckOutcome(False, str(exc))
        output = f"{' '.join(step)}: {result.output.rstrip()}\n[{result.status}]"
        if result.failed:
            return CheckOutcome(False, output)
    return CheckOutcome(True, output)


def places(output: str, root: Path) -> list[tuple[str, int]]:
    """The files and lines of this workspace a check's output names, in order, each once."""
    found: dict[tuple[str, int], None] = {}
    for line in output.splitlines():
        for pattern in _PLACE:
            for match in pattern.finditer(line):
                path, number = match[1], int(match[2])
                if (root / path).is_file() and number > 0:
                    found.setdefault((path, number))
    return list(found)[:PLACES]


async def named_lines(
    output: str, root: Path, text_of: Callable[[str], Awaitable[str | None]]
) -> str:
    """The lines a failed check's `output` names, each with a few around it, numbered."""
    return "\n\n".join(chunk.render() for chunk in await named_chunks(output, root, text_of))


async def named_chunks(
    output: str, root: Path, text_of: Callable[[str], Awaitable[str | None]]
) -> list[Chunk]:
    """The lines a failed check's `output` names, each with a few around it."""
    return await chunks_at(places(output, root), text_of, "named by the check")


async def chunks_at(
    at: Iterable[tuple[str, int]], text_of: Callable[[str], Awaitable[str | None]], why: str
) -> list[Chunk]:
    """Each `(path, line)` with a few lines around it (one chunk where several meet),
    labelled `why`."""
    chunks: list[Chunk] = []
    for path, number in at:
        text = await text_of(path)
        if text is None:
            continue
        lines = text.splitlines()
        first, last = max(1, number - 2), min(len(lines), number + 2)
        if first > last or any(c.path == path and c.first <= number <= c.last for c in chunks):
            continue
        chunks.append(Chunk(path, first, tuple(lines[first - 1 : last]), why))
    return chunks

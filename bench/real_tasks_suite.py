"""The machinery of `bench/real_tasks.py`: pinned real projects, their tasks and machine checks.

A project is a real package's source archive, pinned by version and sha256, fetched into the
model cache with the registry's ordinary client (a Python sdist with `pip download --no-deps
--no-binary`, an npm package's registry tarball with `npm pack`), never installed, and unpacked
afresh into the workspace before every task, so each task starts from the pristine tree. The
projects are `bench/real_tasks_slugify.py` (python-slugify: text to URL slugs, an argparse CLI),
`bench/real_tasks_humanize.py` (humanize: numbers, sizes and times in words, no CLI) and
`bench/real_tasks_crossenv.py` (cross-env, JavaScript: environment variables for a command on
every OS, two CLI commands).

Three kinds of task:

* `question`: the answer is a fact in the code; right when the reply contains it.
* `edit`: right when the file holds the change and still parses (`ast` for Python,
  `node --check` for JavaScript: `js_edited`).
* `claude`: whole-package design or multi-file work meant for Claude; right only when the turn
  was handed to Claude (`TurnResult.escalated`), since the Claude here is a stand-in.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.real_model import fetch

Check = Callable[[Path, str], tuple[bool, str]]
"""(workspace, reply text) -> (right?, what was seen)."""


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "question" | "edit" | "claude"
    prompt: str
    check: Check


@dataclass(frozen=True)
class ClaudeEdit:
    """A plan step as Claude Code's Edit tool makes it: the stand-in's scripted tool call
    when Claude does the step (alone, or after the local model failed it)."""

    path: str
    old: str
    new: str
    every: bool = False


@dataclass(frozen=True)
class AdvisorTask:
    """A multi-step request run on the advisor route (issue 32): the plan the Claude
    stand-in answers with, as Claude would write it, and a check per step of the files."""

    name: str
    prompt: str
    steps: tuple[tuple[str, Callable[[Path], str], ClaudeEdit], ...]
    """(the step as the plan says it, its check: "" when the workspace shows it done, the
    edit Claude makes for it)."""

    @property
    def plan(self) -> str:
        return "\n".join(f"{n}. {step}" for n, (step, _, _) in enumerate(self.steps, 1))

    @property
    def files(self) -> list[str]:
        """The files the steps edit, in order: what Claude reads before planning or editing."""
        return list(dict.fromkeys(edit.path for _, _, edit in self.steps))


@dataclass(frozen=True)
class Project:
    """A pinned real package and the tasks asked of it."""

    name: str  # the distribution name on the package index
    version: str
    sha256: str  # of the sdist (PyPI) or of the registry tarball (npm)
    tasks: tuple[Task, ...]
    registry: str = "pypi"  # "pypi" | "npm"
    advisor_tasks: tuple[AdvisorTask, ...] = ()

    @property
    def sdist(self) -> str:
        """The archive's file name, as `pip download` or `npm pack` writes it."""
        if self.registry == "npm":  # `@scope/name` packs as `scope-name-<version>.tgz`
            return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"
        return f"{self.name}-{self.version}.tar.gz"

    def download_command(self, folder: Path) -> list[str]:
        if self.registry == "npm":
            # a registry spec packs the registry's own tarball bytes (its shasum is the
            # registry's dist.shasum); nothing is installed and no script runs
            return [
                *("npm", "pack", f"{self.name}@{self.version}", "--ignore-scripts"),
                *("--pack-destination", str(folder), "--no-fund", "--no-audit"),
            ]
        return [
            *(sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:"),
            *("--no-cache-dir", "--disable-pip-version-check", "--dest", str(folder)),
            f"{self.name}=={self.version}",
        ]


def fetch_project(project: Project) -> Path:
    """The verified source archive, from the cache or freshly downloaded (never installed)."""
    folder = fetch.cache_root() / "projects"
    target = folder / project.sdist
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        command = project.download_command(folder)
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=300, check=False, cwd=folder
        )
        if done.returncode != 0 or not target.exists():
            raise RuntimeError(f"{' '.join(command[:3])} failed:\n{done.stderr}")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != project.sha256:
        raise RuntimeError(
            f"{target}: sha256 {digest}, pinned {project.sha256}; remove it to refetch"
        )
    return target


def lay_out(sdist: Path, workspace: Path) -> None:
    """Empty `workspace` and unpack the sdist's tree into it (its top folder stripped)."""
    for entry in workspace.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    with tarfile.open(fileobj=io.BytesIO(sdist.read_bytes()), mode="r:gz") as archive:
        members = []
        for member in archive.getmembers():
            _, _, inner = member.name.partition("/")
            if inner:
                member.name = inner
                members.append(member)
        archive.extractall(workspace, members=members, filter="data")


# -- checks -------------------------------------------------------------------------------------


def mentions(*patterns: str) -> Check:
    """Right when the reply matches every regex (case-insensitive)."""

    def check(_: Path, reply: str) -> tuple[bool, str]:
        missing = [p for p in patterns if not re.search(p, reply, re.IGNORECASE)]
        return not missing, f"answer lacks {' and '.join(missing)}" if missing else "answer found"

    return check


def module(workspace: Path, rel: str) -> tuple[ast.Module | None, str]:
    try:
        return ast.parse((workspace / rel).read_text(encoding="utf-8")), ""
    except (OSError, SyntaxError, ValueError) as exc:
        return None, f"{rel} does not parse: {exc}"


def function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    args = fn.args.args
    return {
        a.arg: d
        for a, d in zip(args[len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True)
    }


def edited(rel: str, keep: tuple[str, ...], test: Callable[[ast.Module, str], str]) -> Check:
    """Right when `rel` parses, still defines `keep`, and `test(tree, source)` finds no fault."""

    def check(workspace: Path, _: str) -> tuple[bool, str]:
        tree, problem = module(workspace, rel)
        if tree is None:
            return False, problem
        lost = [name for name in keep if function(tree, name) is None]
        if lost:
            return False, f"{rel} lost {lost}"
        fault = test(tree, (workspace / rel).read_text(encoding="utf-8"))
        return not fault, fault or f"{rel} edited and parses"

    return check


def for_claude() -> Check:
    """A task meant for Claude is never right locally (the stand-in's answer is canned)."""
    return lambda _w, _r: (False, "meant for Claude")


def js_defines(source: str, name: str) -> bool:
    """`source` still defines the function `name` (`function name(`, `name = (…) =>`,
    `name = function`), by text: enough for the plain CommonJS/ESM files of a small package."""
    name = re.escape(name)
    return bool(
        re.search(rf"\bfunction\s+{name}\s*\(", source)
        or re.search(rf"\b{name}\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|\w+\s*=>)", source)
    )


def node_check(path: Path) -> str:
    """'' when `node --check` parses the file, else its first error line."""
    try:
        done = subprocess.run(
            ["node", "--check", str(path)], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"node --check did not run: {exc}"
    if done.returncode == 0:
        return ""
    lines = [line for line in done.stderr.splitlines() if "Error" in line] or [done.stderr]
    return f"{path.name} does not parse (node --check): {lines[0].strip()}"


def js_edited(rel: str, keep: tuple[str, ...], test: Callable[[str], str]) -> Check:
    """`edited` for JavaScript: right when `rel` passes `node --check`, still defines `keep`,
    and `test(source)` finds no fault."""

    def check(workspace: Path, _: str) -> tuple[bool, str]:
        path = workspace / rel
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            return False, f"{rel} unreadable: {exc}"
        problem = node_check(path)
        if problem:
            return False, problem
        lost = [name for name in keep if not js_defines(source, name)]
        if lost:
            return False, f"{rel} lost {lost}"
        fault = test(source)
        return not fault, fault or f"{rel} edited and passes node --check"

    return check

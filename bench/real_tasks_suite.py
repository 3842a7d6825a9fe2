"""The project and the tasks of `bench/real_tasks.py`, each with its machine check.

The project is python-slugify 8.0.4 (MIT): a small real package (about 360 lines in five
modules) with an argparse CLI, named constants and functions with many default parameters.
Its sdist is pinned by version and sha256, fetched with `pip download --no-deps --no-binary`
into the model cache, never installed, and unpacked afresh into the workspace before every
task, so each task starts from the pristine tree.

Three kinds of task:

* `question`: the answer is a fact in the code; right when the reply contains it.
* `edit`: right when the file holds the change and still parses (checked with `ast`).
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

PROJECT = "python-slugify"
PROJECT_VERSION = "8.0.4"
PROJECT_SDIST = f"python-slugify-{PROJECT_VERSION}.tar.gz"
PROJECT_SHA256 = "59202371d1d05b54a9e7720c5e038f928f45daaffe41dd10822f3907b937c856"


def fetch_project() -> Path:
    """The verified sdist, from the cache or freshly downloaded (never installed)."""
    folder = fetch.cache_root() / "projects"
    target = folder / PROJECT_SDIST
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:"),
                *("--no-cache-dir", "--disable-pip-version-check", "--dest", str(folder)),
                f"{PROJECT}=={PROJECT_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not target.exists():
            raise RuntimeError(f"pip download {PROJECT}=={PROJECT_VERSION} failed:\n{done.stderr}")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != PROJECT_SHA256:
        raise RuntimeError(
            f"{target}: sha256 {digest}, pinned {PROJECT_SHA256}; remove it to refetch"
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


Check = Callable[[Path, str], tuple[bool, str]]
"""(workspace, reply text) -> (right?, what was seen)."""


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "question" | "edit" | "claude"
    prompt: str
    check: Check


# -- checks -------------------------------------------------------------------------------------


def mentions(*patterns: str) -> Check:
    """Right when the reply matches every regex (case-insensitive)."""

    def check(_: Path, reply: str) -> tuple[bool, str]:
        missing = [p for p in patterns if not re.search(p, reply, re.IGNORECASE)]
        return not missing, f"answer lacks {' and '.join(missing)}" if missing else "answer found"

    return check


def _module(workspace: Path, rel: str) -> tuple[ast.Module | None, str]:
    try:
        return ast.parse((workspace / rel).read_text(encoding="utf-8")), ""
    except (OSError, SyntaxError, ValueError) as exc:
        return None, f"{rel} does not parse: {exc}"


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    args = fn.args.args
    return {
        a.arg: d
        for a, d in zip(args[len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True)
    }


def edited(rel: str, keep: tuple[str, ...], test: Callable[[ast.Module, str], str]) -> Check:
    """Right when `rel` parses, still defines `keep`, and `test(tree, source)` finds no fault."""

    def check(workspace: Path, _: str) -> tuple[bool, str]:
        tree, problem = _module(workspace, rel)
        if tree is None:
            return False, problem
        lost = [name for name in keep if _function(tree, name) is None]
        if lost:
            return False, f"{rel} lost {lost}"
        fault = test(tree, (workspace / rel).read_text(encoding="utf-8"))
        return not fault, fault or f"{rel} edited and parses"

    return check


def _has_docstring(tree: ast.Module, _: str) -> str:
    fn = _function(tree, "slugify_params")
    return "" if fn is not None and ast.get_docstring(fn) else "slugify_params has no docstring"


def _renamed(tree: ast.Module, source: str) -> str:
    if re.search(r"\bNUMBERS_PATTERN\b", source):
        return "NUMBERS_PATTERN still there"
    assigned = any(
        isinstance(n, ast.Assign)
        and any(getattr(t, "id", "") == "NUMBER_COMMA_PATTERN" for t in n.targets)
        for n in tree.body
    )
    uses = len(re.findall(r"\bNUMBER_COMMA_PATTERN\b", source))
    return (
        ""
        if assigned and uses >= 2
        else f"NUMBER_COMMA_PATTERN assigned={assigned}, {uses} mention(s)"
    )


def _default_changed(tree: ast.Module, _: str) -> str:
    truncate, slug = _function(tree, "smart_truncate"), _function(tree, "slugify")
    if truncate is None or slug is None:
        return "smart_truncate or slugify is gone"
    new = _defaults(truncate).get("max_length")
    old = _defaults(slug).get("max_length")
    if not (isinstance(new, ast.Constant) and new.value == 100):
        return f"smart_truncate max_length default is {ast.unparse(new) if new else None}"
    return (
        ""
        if isinstance(old, ast.Constant) and old.value == 0
        else "slugify's max_length changed too"
    )


def _return_hint(tree: ast.Module, _: str) -> str:
    fn = _function(tree, "main")
    ok = fn is not None and isinstance(fn.returns, ast.Constant) and fn.returns.value is None
    return (
        ""
        if ok
        else f"main returns {ast.unparse(fn.returns) if fn and fn.returns else 'unannotated'}"
    )


def _description(tree: ast.Module, source: str) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "ArgumentParser":
            for kw in node.keywords:
                if kw.arg == "description" and isinstance(kw.value, ast.Constant):
                    if kw.value.value == "Make a slug from text" and "Slug string" not in source:
                        return ""
                    return f"description is {kw.value.value!r}"
    return "no ArgumentParser(description=...) left"


def _lowercase_flag(tree: ast.Module, source: str) -> str:
    if "--keep-case" not in source:
        return "no --keep-case option"
    if "--no-lowercase" in source:
        return "--no-lowercase still there"
    return "" if re.search(r"dest=['\"]lowercase['\"]", source) else "dest='lowercase' lost"


MAIN = ("parse_args", "slugify_params", "main")
CORE = ("smart_truncate", "slugify")

TASKS: list[Task] = [
    Task(
        "where-smart-truncate",
        "question",
        "In which file of this project is the function smart_truncate defined? Give its path.",
        mentions(r"slugify/slugify\.py|(?<![\w/])slugify\.py"),
    ),
    Task(
        "where-uppercase",
        "question",
        "Which file defines the function add_uppercase_char?",
        mentions(r"special\.py"),
    ),
    Task(
        "default-max-length",
        "question",
        "What is the default value of the max_length parameter of smart_truncate?",
        mentions(r"(?<![\w.])0(?![\w.])"),
    ),
    Task(
        "default-separator",
        "question",
        "What is the value of the constant DEFAULT_SEPARATOR in slugify/slugify.py?",
        mentions(r"""['"`]-['"`]|hyphen|dash"""),
    ),
    Task(
        "cli-word-boundary",
        "question",
        "Which command-line option of the slugify CLI truncates to complete words?",
        mentions(r"--word-boundary"),
    ),
    Task(
        "cli-case",
        "question",
        "Which command-line option of the slugify CLI keeps upper-case letters in the slug?",
        mentions(r"--no-lowercase"),
    ),
    Task(
        "docstring",
        "edit",
        "Add a one-line docstring to the function slugify_params in slugify/__main__.py.",
        edited("slugify/__main__.py", MAIN, _has_docstring),
    ),
    Task(
        "rename-constant",
        "edit",
        "In slugify/slugify.py rename the constant NUMBERS_PATTERN to NUMBER_COMMA_PATTERN "
        "(its definition and every use).",
        edited("slugify/slugify.py", CORE, _renamed),
    ),
    Task(
        "change-default",
        "edit",
        "In slugify/slugify.py change the default value of the max_length parameter of "
        "smart_truncate from 0 to 100. Leave slugify() unchanged.",
        edited("slugify/slugify.py", CORE, _default_changed),
    ),
    Task(
        "type-hint",
        "edit",
        "Add the return type annotation -> None to the function main in slugify/__main__.py.",
        edited("slugify/__main__.py", MAIN, _return_hint),
    ),
    Task(
        "cli-description",
        "edit",
        'In slugify/__main__.py change the ArgumentParser description from "Slug string" to '
        '"Make a slug from text".',
        edited("slugify/__main__.py", MAIN, _description),
    ),
    Task(
        "rename-option",
        "edit",
        "In slugify/__main__.py rename the command-line option --no-lowercase to --keep-case "
        "(same behaviour, same dest).",
        edited("slugify/__main__.py", MAIN, _lowercase_flag),
    ),
    Task(
        "options-refactor",
        "claude",
        "Refactor the whole package: replace the long parameter lists of slugify() and "
        "smart_truncate() with a frozen SlugOptions dataclass in a new module "
        "slugify/options.py, build it from the CLI arguments in slugify/__main__.py, keep the "
        "old keyword arguments working with a deprecation warning, and add tests for every "
        "option.",
        lambda _w, _r: (False, "meant for Claude"),
    ),
    Task(
        "plugin-design",
        "claude",
        "Design and implement a plugin system for per-language transliteration tables across "
        "the package (registration through entry points, precedence over special.py and the "
        "user's replacements, a CLI option to pick languages), with a short design document "
        "explaining the trade-offs.",
        lambda _w, _r: (False, "meant for Claude"),
    ),
    Task(
        "length-invariant",
        "claude",
        "Find every combination of options for which slugify() returns a slug longer than "
        "max_length or ending with the separator, fix the root causes in all modules, and "
        "prove the fix with property-based tests over all the parameters.",
        lambda _w, _r: (False, "meant for Claude"),
    ),
]

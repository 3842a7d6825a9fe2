"""A hint after a command that failed for how it was run, not for the code it ran.

A small model checks its edit with `python pkg/__main__.py` and reads "attempted relative
import with no known parent package": the code is fine, the file belongs to a package and must
be run as a module. Without the hint the model takes the ImportError for a bug of its edit
(slugify's cli-description: a right edit, then a hand-off to Claude over it). The hint is read
from the evidence only: the command's own text, its output, and the package's `__init__.py`
files in the workspace.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

__all__ = ["module_run_hint"]

_RELATIVE_IMPORT_ERROR = "attempted relative import with no known parent package"
_PYTHON = re.compile(r"(?:.*/)?python(?:3(?:\.\d+)?)?")
_MAX_DEPTH = 8
"""Folders from the workspace down to the script the hint looks at."""


def module_run_hint(command: str, output: str, is_package: Callable[[str], bool]) -> str | None:
    """ "Run it as a module: python -m pkg" when `command` ran a file of a package as a script
    and failed on a relative import. `is_package(folder)` says whether a workspace-relative
    folder holds an `__init__.py`. None when the output is another failure, or the file is
    not inside a package that starts at the workspace's top."""
    if _RELATIVE_IMPORT_ERROR not in output:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for index, word in enumerate(words[:-1]):
        if not _PYTHON.fullmatch(word):
            continue
        script = words[index + 1]
        module = _module_of(script, is_package)
        if module is None:
            return None
        rest = " ".join(shlex.quote(arg) for arg in words[index + 2 :])
        run = f"{word} -m {module}{' ' + rest if rest else ''}"
        return (
            f"[milk: {script} is part of the package {module.split('.')[0]}; its relative"
            f" imports work only when it runs as a module. Run it from the workspace's top"
            f" as: {run}]"
        )
    return None


def _module_of(script: str, is_package: Callable[[str], bool]) -> str | None:
    """`pkg/sub/mod.py` → `pkg.sub.mod`, `pkg/__main__.py` → `pkg`, when every folder on the
    way is a package."""
    path = script.removeprefix("./")
    if not path.endswith(".py") or path.startswith(("/", "..")):
        return None
    parts = path[: -len(".py")].split("/")
    folders = parts[:-1]
    if not folders or len(folders) > _MAX_DEPTH or not all(p.isidentifier() for p in parts):
        return None
    for depth in range(1, len(folders) + 1):
        if not is_package("/".join(folders[:depth])):
            return None
    return ".".join(folders if parts[-1] == "__main__" else parts)

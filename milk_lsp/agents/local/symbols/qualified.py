"""A symbol a model qualified with its module (`slugify.slugify` in slugify/slugify.py,
`index.main` in src/index.js): the file's own definitions do not carry that prefix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

PACKAGE_FILES = frozenset({"__init__", "index", "mod", "lib", "main"})
"""File stems that stand for their folder's module (Python packages, JavaScript and
TypeScript folders, Rust modules and crates, Go's usual entry point)."""


def without_module(parts: Sequence[str], where: str) -> list[tuple[str, ...]]:
    """`parts` without the leading names that spell the end of the file's module path,
    longest prefix first; empty when none do (or nothing would be left)."""
    module = PurePosixPath(where.replace("\\", "/")).with_suffix("").parts
    paths = [module]
    if module and module[-1] in PACKAGE_FILES:
        paths.append(module[:-1])
    found: list[tuple[str, ...]] = []
    for k in range(len(parts) - 1, 0, -1):
        head = tuple(parts[:k])
        if any(path[-k:] == head for path in paths if len(path) >= k):
            found.append(tuple(parts[k:]))
    return found

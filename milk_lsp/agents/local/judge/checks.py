"""Does a file still work after a local edit? Cheap checks that run no user code.

A small model's edit can leave a file that no longer parses, or a rename half done (the
definition renamed, a use not). Before the turn counts as done, each file the local model
changed is checked: Python must still parse (`ast`) and must not gain undefined names, used
or listed in `__all__` (pyflakes, compared with the file before the edit, so names that
were already undefined, from a star import say, are no news); JSON, TOML and YAML must
still load; a file of any other language the code package reads (`milk_lsp.code`:
JavaScript, TypeScript, Go, Rust, Java, C, C++, C#, Ruby, PHP, Kotlin, Swift, …) must not
gain syntax errors (tree-sitter's error nodes, counted before and after the edit, so a
grammar's gap on valid code is no news). Other files are not checked.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import tomllib
from pathlib import PurePath
from typing import TYPE_CHECKING

import yaml
from pyflakes import checker, messages

if TYPE_CHECKING:
    from milk_lsp.code import Language

CHECKED_SUFFIXES = frozenset({".py", ".pyi", ".json", ".toml", ".yaml", ".yml"})


def check_kind(path: str) -> str | None:
    """What the check of `path` is called in the turn's summary ("Python parses"), None when
    there is none for its kind of file."""
    suffix = PurePath(path).suffix.lower()
    if suffix in (".py", ".pyi"):
        return "Python parses, no new undefined names"
    if suffix in CHECKED_SUFFIXES:
        return f"{suffix.removeprefix('.').upper()} loads"
    from milk_lsp.code import language_for  # off start-up

    language = language_for(path)
    return f"{language.label} parses" if language is not None else None


def broken_by_edit(path: str, before: str | None, after: str) -> str | None:
    """Why `after` (the file's text after the edit) is broken, in words for the model, or
    None when it is fine or not checked. `before` is its text before the turn's edit."""
    suffix = PurePath(path).suffix.lower()
    if suffix in (".py", ".pyi"):
        return _python(path, before, after)
    if suffix == ".json":
        try:
            json.loads(after)
        except ValueError as exc:
            return f"it is no longer valid JSON: {exc}"
    elif suffix == ".toml":
        try:
            tomllib.loads(after)
        except tomllib.TOMLDecodeError as exc:
            return f"it is no longer valid TOML: {exc}"
    elif suffix in (".yaml", ".yml"):
        try:
            list(yaml.safe_load_all(after))
        except yaml.YAMLError as exc:
            return f"it is no longer valid YAML: {' '.join(str(exc).split())}"
    else:
        return _syntax(path, before, after)
    return None


def _syntax(path: str, before: str | None, after: str) -> str | None:
    """Whether `after` has more syntax errors than `before` had, in the language of `path`
    (None when the code package parses none), said with the first new one (its line, its
    column and the text there); else whether it left a rename half done."""
    from milk_lsp.code import language_for, syntax_problems  # off start-up

    language = language_for(path)
    if language is None:
        return None
    now = syntax_problems(after, language)
    if not now:
        return _half_renamed(before, after, language) or _unbound(before, after, language)
    was = syntax_problems(before, language) if before is not None else []
    if len(now) <= len(was):
        return None
    known = {problem.text for problem in was}
    first = next((problem for problem in now if problem.text not in known), now[0])
    near = f" near `{first.text}`" if first.text.strip() else ""
    return (
        f"it no longer parses as {language.label} (line {first.line}, column {first.column}:"
        f" a syntax error{near})"
    )


def _python(path: str, before: str | None, after: str) -> str | None:
    try:
        tree = ast.parse(after, filename=path)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        return f"it no longer parses as Python ({where}: {exc.msg})"
    new = _undefined(tree, path)
    if not new:
        return None
    if before is not None:
        try:
            old = {name for name, _ in _undefined(ast.parse(before, filename=path), path)}
        except SyntaxError:
            old = set()
        new = [(name, line) for name, line in new if name not in old]
    if not new:
        return None
    lines = after.split("\n")
    shown = ", ".join(
        f"{name} (line {line}: `{lines[line - 1].strip()}`)" if line <= len(lines) else name
        for name, line in new[:5]
    )
    said = f"it now uses names that are defined nowhere: {shown}"
    renamed = [name for name, _ in new if before is not None and _uses(before, name)]
    if renamed:
        said += (
            f". {renamed[0]} was defined before this turn's edits: if you renamed it, rename"
            f' its uses too (edit_file with old_text "{renamed[0]}", new_text the new name and'
            " replace_all true)"
        )
    return said


def _uses(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _undefined(tree: ast.Module, path: str) -> list[tuple[str, int]]:
    """pyflakes' undefined names of a module, with their lines: those used, and those
    `__all__` exports (a rename that left its old name there breaks `import *`)."""
    found = checker.Checker(tree, filename=path)
    names: list[tuple[str, int]] = []
    for message in found.messages:
        if isinstance(
            message, messages.UndefinedName | messages.UndefinedLocal | messages.UndefinedExport
        ):
            name = str(message.message_args[0])
            if name not in (seen for seen, _ in names):
                names.append((name, int(message.lineno)))
    return names


_TOKEN = re.compile(r"[^\W\d][\w$]*|\$[\w$]*|\S")
"""A name (letters, digits, `_` and `$`) or one other character: what the code is made of."""
MAX_RENAME_TOKENS = 40_000
"""Files longer than this are not compared token by token (the cost grows with the square)."""


def _half_renamed(before: str | None, after: str, language: Language) -> str | None:
    """A rename left half done, in a language whose files name everything they use
    (`Language.file_scoped_names`): a name that replaced one of the file's own definitions
    at a use, the definition left under its old name and the new name defined nowhere in the
    file (`onWindows()` under `const isWindows = require(…)`); or a definition renamed while
    uses of its old name, now defined nowhere, stay. None otherwise."""
    if before is None or not language.file_scoped_names:
        return None
    was, now = _TOKEN.findall(before), _TOKEN.findall(after)
    if max(len(was), len(now)) > MAX_RENAME_TOKENS:
        return None
    from milk_lsp.code import definitions  # off start-up

    swaps = sorted(
        {
            (was[i1], now[j1])
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, was, now).get_opcodes()
            if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1
        }
    )
    named = [(old, new) for old, new in swaps if _is_name(old) and _is_name(new)]
    if not named:
        return None
    defined = {definition.name for definition in definitions(after, language)}
    had = {definition.name for definition in definitions(before, language)}
    known, left = set(was), set(now)
    finish = 'edit_file with old_text "{0}", new_text "{1}" and replace_all true'
    for old, new in named:
        if old in defined and new not in defined and new not in known:
            return (
                f"it now uses {new}, which it defines nowhere, where it used {old}, which it"
                f" still defines: if you renamed {old}, rename its definition and every use"
                f" too ({finish.format(old, new)})"
            )
        if old in had and old not in defined and new in defined and old in left:
            return (
                f"it still uses {old}, which it no longer defines (its definition is {new}"
                f" now): if you renamed {old}, rename every use too ({finish.format(old, new)})"
            )
    return None


def _unbound(before: str | None, after: str, language: Language) -> str | None:
    """Names the file bound before the edit (`Language.bindings`: a `const`, a parameter,
    an import), binds nowhere after it and still uses: the edit removed a declaration
    its uses need. Asked for a doc comment, a 1.5B model replaced a function's first
    three lines with the comment and the signature, and `envSetters`, `command` and `env`
    were used on, declared nowhere. None otherwise."""
    if before is None or not language.bindings:
        return None
    from milk_lsp.code import bound_and_used  # off start-up

    was, _ = bound_and_used(before, language)
    now, used = bound_and_used(after, language)
    lost = sorted((was - now) & used)
    if not lost:
        return None
    names = ", ".join(lost[:5])
    return (
        f"it still uses {names}, which it no longer declares: the edit removed"
        f" {'their declarations' if len(lost) > 1 else 'its declaration'}; keep"
        f" {'them' if len(lost) > 1 else 'it'} in the new text"
    )


def _is_name(token: str) -> bool:
    """A `_TOKEN` that is a name, not a single other character."""
    return token[0].isalpha() or token[0] in "_$"

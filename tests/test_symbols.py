"""Symbol-addressed edits of Python files, located with `ast`."""

from __future__ import annotations

import ast

import pytest

from milk_lsp.agents.local.replace import EditDoesNotApply
from milk_lsp.agents.local.symbols import find_symbol, replace_symbol

SOURCE = """\
import functools

LIMIT: int = 10
NAMES = {"a": 1}


@functools.cache
@staticmethod
def cached(a, b=1, *, flag="x"):
    return a


class Parser:
    size = 3

    async def run(self, depth=2):
        def inner():
            return depth

        return inner()

    def stop(self):
        pass


def outer():
    def helper():
        return 1

    return helper()
"""


@pytest.mark.parametrize(
    ("symbol", "kind", "lines", "starts"),
    [
        ("cached", "function", (7, 10), "@functools.cache\n@staticmethod\ndef cached("),
        ("Parser", "class", (13, 23), "class Parser:"),
        ("Parser.run", "method", (16, 20), "async def run(self, depth=2):"),
        ("Parser.run.inner", "function", (17, 18), "def inner():"),
        ("helper", "function", (27, 28), "def helper():"),  # nested, found by its name alone
        ("outer.helper", "function", (27, 28), "def helper():"),
        ("LIMIT", "assignment", (3, 3), "LIMIT: int = 10"),
        ("Parser.size", "assignment", (14, 14), "size = 3"),
        ("cached.b", "default", (9, 9), "1"),
        ("cached.flag", "default", (9, 9), '"x"'),
        ("Parser.run.depth", "default", (16, 16), "2"),
        ("cached()", "function", (7, 10), "@functools.cache"),
    ],
)
def test_symbols_are_found_with_decorators_async_and_nesting(
    symbol: str, kind: str, lines: tuple[int, int], starts: str
) -> None:
    span = find_symbol(SOURCE, symbol, "m.py")
    assert span.kind == kind
    assert (span.first_line, span.last_line) == lines
    assert SOURCE[span.start : span.end].startswith(starts)


@pytest.mark.parametrize(
    ("where", "symbol", "starts"),
    [
        ("slugify/slugify.py", "slugify.slugify.Parser.run", "async def run"),
        ("pkg/m.py", "m.cached", "@functools.cache"),
        ("pkg/m.py", "pkg.m.Parser", "class Parser:"),
        ("pkg/__init__.py", "pkg.outer", "def outer():"),
    ],
)
def test_a_name_qualified_with_the_file_s_module_is_found(
    where: str, symbol: str, starts: str
) -> None:
    span = find_symbol(SOURCE, symbol, where)
    assert SOURCE[span.start : span.end].startswith(starts)


def test_a_function_named_with_its_module_is_replaced_in_place() -> None:
    text, span = replace_symbol(SOURCE, "m.outer", "def outer():\n    return 2\n", "pkg/m.py")
    assert (span.first_line, text.count("def outer")) == (26, 1)
    assert "return helper()" not in text and "    return 2" in text


def test_a_module_prefix_the_file_does_not_have_is_still_missing() -> None:
    with pytest.raises(EditDoesNotApply):
        find_symbol(SOURCE, "other.cached", "pkg/m.py")
    with pytest.raises(EditDoesNotApply):
        find_symbol(SOURCE, "m", "pkg/m.py")  # the module itself is no definition


def test_a_missing_symbol_names_those_the_file_has() -> None:
    with pytest.raises(EditDoesNotApply) as failed:
        find_symbol(SOURCE, "Parser.walk", "m.py")
    message = str(failed.value)
    assert "m.py has no 'Parser.walk'" in message
    assert "cached, Parser, Parser.run, Parser.run.inner, Parser.stop" in message
    assert "LIMIT, NAMES" in message


def test_a_function_is_rewritten_whole_and_keeps_decorators_left_out() -> None:
    new = 'def cached(a, b=1, *, flag="x"):\n    """Cache a."""\n    return a'
    text, span = replace_symbol(SOURCE, "cached", new, "m.py")
    assert (
        '@functools.cache\n@staticmethod\ndef cached(a, b=1, *, flag="x"):\n    """Cache a."""\n'
        "    return a\n\n\nclass" in text
    )
    assert (span.kind, span.first_line, span.last_line) == ("function", 9, 10)
    ast.parse(text)


def test_new_text_with_decorators_replaces_them_too() -> None:
    text, _ = replace_symbol(
        SOURCE, "cached", "@functools.cache\ndef cached(a):\n    return a", "m.py"
    )
    assert "@staticmethod" not in text
    assert "\n@functools.cache\ndef cached(a):\n    return a\n" in text


def test_a_method_written_without_the_class_indentation_is_indented() -> None:
    new = "async def run(self, depth=2):\n    return depth * 2"
    text, _ = replace_symbol(SOURCE, "Parser.run", new, "m.py")
    assert "    async def run(self, depth=2):\n        return depth * 2\n\n    def stop" in text
    ast.parse(text)


def test_a_default_and_an_assignment_are_replaced_alone() -> None:
    text, _ = replace_symbol(SOURCE, "cached.b", "100", "m.py")
    assert 'def cached(a, b=100, *, flag="x"):' in text
    text, _ = replace_symbol(text, "LIMIT", "LIMIT: int = 20", "m.py")
    assert "\nLIMIT: int = 20\n" in text
    ast.parse(text)


def test_a_new_method_goes_at_the_end_of_its_class_and_a_new_function_at_the_end() -> None:
    text, span = replace_symbol(SOURCE, "Parser.reset", "def reset(self):\n    pass", "m.py")
    assert "    def stop(self):\n        pass\n\n    def reset(self):\n        pass\n" in text
    assert span.kind == "added" and text.splitlines()[span.first_line - 1] == "    def reset(self):"
    text, span = replace_symbol(text, "extra", "def extra():\n    return 2", "m.py")
    assert text.endswith("    return helper()\n\n\ndef extra():\n    return 2\n")
    ast.parse(text)


def test_new_text_that_is_not_the_named_definition_is_refused() -> None:
    with pytest.raises(EditDoesNotApply, match="has no 'extra'"):
        replace_symbol(SOURCE, "extra", "def other():\n    pass", "m.py")


def test_a_file_that_does_not_parse_cannot_be_edited_by_symbol() -> None:
    with pytest.raises(EditDoesNotApply, match="does not parse as Python"):
        find_symbol("def broken(:\n", "broken", "b.py")

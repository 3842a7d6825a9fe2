"""Symbol-addressed edits of files in other languages than Python, located with the code
package's tree-sitter definitions (`symbols.code`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import pytest

from milk_lsp.agents.local.edit_change import EditChange
from milk_lsp.agents.local.replace import EditDoesNotApply
from milk_lsp.agents.local.symbols import find_symbol, replace_symbol, symbol_line_range
from milk_lsp.code import language_for, syntax_problems

JS = """\
// Cart helpers.

/** Total of the items. */
export function total(items) {
  function add(sum, item) {
    return sum + item.price;
  }
  return items.reduce(add, 0);
}

export class Cart {
  constructor() {
    this.items = [];
  }

  push(item) {
    this.items.push(item);
  }
}
"""

TS = """\
export interface Shape {
  area(): number;
}

/** A square. */
@sealed
export class Square implements Shape {
  constructor(private side: number) {}

  area(): number {
    return this.side * this.side;
  }
}

export function largest(shapes: Shape[]): Shape | undefined {
  return shapes.sort((a, b) => b.area() - a.area())[0];
}
"""

GO = """\
package reader

import "io"

// Reader counts the bytes it reads.
type Reader struct {
\tsrc io.Reader
\tn   int
}

// Read reads into p.
func (r *Reader) Read(p []byte) (int, error) {
\tn, err := r.src.Read(p)
\tr.n += n
\treturn n, err
}

func New(src io.Reader) *Reader {
\treturn &Reader{src: src}
}
"""

RUST = """\
/// A version.
#[derive(Debug, PartialEq)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// Parses "1.2".
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let (major, minor) = text.split_once('.')?;
        Some(Version { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

pub fn latest(versions: &[Version]) -> Option<&Version> {
    versions.iter().max_by_key(|v| (v.major, v.minor))
}
"""

JAVA = """\
package stack;

/** A stack of ints. */
public class Stack {
    private int[] items = new int[16];
    private int size;

    /** Pushes x. */
    @Deprecated
    public void push(int x) {
        items[size++] = x;
    }

    public int peek() {
        return items[size - 1];
    }

    public static Stack of(int x) {
        Stack stack = new Stack();
        stack.push(x);
        return stack;
    }
}
"""

RUBY = """\
# Greetings.
class Greeter
  def initialize(name)
    @name = name
  end

  # Says hello.
  def hello
    "Hello, #{@name}"
  end
end

def shout(text)
  text.upcase
end
"""


@dataclass(frozen=True)
class Case:
    path: str
    source: str
    function: str
    function_text: str
    method: str
    method_text: str
    added_function: str
    added_function_text: str
    added_method: str
    added_method_text: str


CASES = [
    Case(
        "cart.js",
        JS,
        "total",
        "function total(items) {\n  return items.length;\n}",
        "Cart.push",
        "push(item) {\n  this.items.unshift(item);\n}",
        "empty",
        "function empty(cart) {\n  return cart.items.length === 0;\n}",
        "Cart.clear",
        "clear() {\n  this.items = [];\n}",
    ),
    Case(
        "shapes.ts",
        TS,
        "largest",
        "export function largest(shapes: Shape[]): Shape | undefined {\n  return shapes[0];\n}",
        "Square.area",
        "area(): number {\n  return this.side ** 2;\n}",
        "smallest",
        "export function smallest(shapes: Shape[]): Shape | undefined {\n  return shapes[0];\n}",
        "Square.perimeter",
        "perimeter(): number {\n  return 4 * this.side;\n}",
    ),
    Case(
        "reader.go",
        GO,
        "New",
        "func New(src io.Reader) *Reader {\n\treturn &Reader{src: src, n: 0}\n}",
        "Reader.Read",
        "func (r *Reader) Read(p []byte) (int, error) {\n\treturn r.src.Read(p)\n}",
        "Count",
        "func Count(r *Reader) int {\n\treturn r.n\n}",
        "Reader.Reset",
        "func (r *Reader) Reset() {\n\tr.n = 0\n}",
    ),
    Case(
        "version.rs",
        RUST,
        "latest",
        "pub fn latest(versions: &[Version]) -> Option<&Version> {\n    versions.last()\n}",
        "Version.parse",
        "pub fn parse(text: &str) -> Option<Self> {\n    None\n}",
        "oldest",
        "pub fn oldest(versions: &[Version]) -> Option<&Version> {\n    versions.first()\n}",
        "Version.bump",
        "pub fn bump(&mut self) {\n    self.minor += 1;\n}",
    ),
    Case(
        "Stack.java",
        JAVA,
        "Stack",
        "public class Stack {\n    private int size;\n}",
        "Stack.peek",
        "public int peek() {\n    return size == 0 ? -1 : items[size - 1];\n}",
        "Empty",
        "interface Empty {\n}",
        "Stack.pop",
        "public int pop() {\n    return items[--size];\n}",
    ),
    Case(
        "greeter.rb",
        RUBY,
        "shout",
        "def shout(text)\n  text.upcase + '!'\nend",
        "Greeter.hello",
        'def hello\n  "Hi, #{@name}"\nend',
        "whisper",
        "def whisper(text)\n  text.downcase\nend",
        "Greeter#bye",
        "def bye\n  'Bye'\nend",
    ),
]
IDS = [case.path for case in CASES]


def _parses(path: str, text: str) -> None:
    language = language_for(path)
    assert language is not None
    assert syntax_problems(text, language) == [], text


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_function_and_a_method_are_found_by_name(case: Case) -> None:
    for symbol in (case.function, case.method):
        span = find_symbol(case.source, symbol, case.path)
        name = symbol.replace("#", ".").split(".")[-1]
        assert re.search(
            rf"\b(def|func|fn|function|class|void|int) .*\b{name}\b",
            (case.source[span.start : span.end]),
        ) or case.source[span.start : span.end].lstrip().startswith(name)
        assert symbol_line_range(case.source, symbol, case.path) == (
            span.first_line,
            span.last_line,
        )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_function_is_replaced_whole(case: Case) -> None:
    text, span = replace_symbol(case.source, case.function, case.function_text, case.path)
    assert case.function_text.split("\n")[1].strip() in text
    assert span.name == case.function and span.kind in ("function", "class")
    _parses(case.path, text)
    again = find_symbol(text, case.function, case.path)
    assert text[again.start : again.end].endswith(case.function_text.split("\n")[-1])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_method_is_replaced_and_indented_as_in_its_class(case: Case) -> None:
    text, span = replace_symbol(case.source, case.method, case.method_text, case.path)
    head, body = case.method_text.split("\n")[:2]
    line = _lines(case.source)[span.first_line - 1]
    indent = line[: len(line) - len(line.lstrip())]
    assert _lines(text)[span.first_line - 1] == indent + head
    [moved] = [line for line in _lines(text) if line.strip() == body.strip()]
    assert moved.startswith(indent) and len(moved) > len(indent) + len(body.strip())
    assert span.kind == "method"
    _parses(case.path, text)
    assert len(text.splitlines()) < len(case.source.splitlines()) + 2


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_new_function_goes_at_the_end_of_the_file(case: Case) -> None:
    text, span = replace_symbol(
        case.source, case.added_function, case.added_function_text, case.path
    )
    assert text == case.source + "\n" + case.added_function_text + "\n"
    assert span.kind == "added"
    assert _lines(text)[span.first_line - 1] == case.added_function_text.split("\n")[0]
    _parses(case.path, text)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_new_method_goes_at_the_end_of_its_class(case: Case) -> None:
    text, span = replace_symbol(case.source, case.added_method, case.added_method_text, case.path)
    first = _lines(text)[span.first_line - 1]
    assert first.strip() == case.added_method_text.split("\n")[0]
    _parses(case.path, text)
    found = find_symbol(text, case.added_method, case.path)
    assert (found.first_line, found.kind) == (span.first_line, "method")
    if case.path.endswith(".go"):  # a Go method is declared outside of its type
        assert text.endswith("\n\n" + case.added_method_text + "\n")
    else:
        assert first.startswith((" ", "\t"))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_missing_symbol_names_those_the_file_has(case: Case) -> None:
    with pytest.raises(EditDoesNotApply) as failed:
        find_symbol(case.source, "Nowhere.nothing", case.path)
    message = str(failed.value)
    assert f"{case.path} has no 'Nowhere.nothing'. Its symbols are: " in message
    assert case.function in message
    assert case.method.replace("#", ".") in message
    with pytest.raises(EditDoesNotApply, match=r"has no 'Nowhere\.nothing'"):
        replace_symbol(case.source, "Nowhere.nothing", "def x\nend", case.path)


def test_doc_comments_and_attributes_stay_unless_the_new_text_brings_its_own() -> None:
    span = find_symbol(RUST, "Version::parse", "version.rs")
    assert RUST[span.start : span.end].startswith('/// Parses "1.2".\n    #[must_use]\n    pub fn')
    assert (span.first_line, span.def_line) == (9, 11)
    plain = "pub fn parse(text: &str) -> Option<Self> {\n    None\n}"
    text, span = replace_symbol(RUST, "Version.parse", plain, "version.rs")
    assert (
        '    /// Parses "1.2".\n    #[must_use]\n    pub fn parse(text: &str) -> Option<Self> {\n'
        in text
    )
    assert "        None\n    }\n}" in text and (span.first_line, span.last_line) == (11, 14)
    documented = "/// Parses text.\n" + plain
    text, _ = replace_symbol(RUST, "Version.parse", documented, "version.rs")
    assert "    /// Parses text.\n    #[must_use]\n    pub fn parse(" in text
    assert "1.2" not in text.split("impl Version")[1].split("impl std")[0]
    attributed = "#[inline]\n" + plain
    text, _ = replace_symbol(RUST, "Version.parse", attributed, "version.rs")
    assert '    /// Parses "1.2".\n    #[inline]\n    pub fn parse(' in text
    assert "must_use" not in text
    _parses("version.rs", text)


def test_an_export_stays_when_the_new_text_leaves_it_out() -> None:
    new = "/** The sum. */\nfunction total(items) {\n  return 0;\n}"
    text, _ = replace_symbol(JS, "total", new, "cart.js")
    assert (
        "// Cart helpers.\n\n/** The sum. */\nexport function total(items) {\n  return 0;\n}\n"
        in (text)
    )
    text, _ = replace_symbol(TS, "Square", "class Square {\n  side = 1;\n}", "shapes.ts")
    assert "/** A square. */\n@sealed\nexport class Square {\n  side = 1;\n}\n" in text
    _parses("shapes.ts", text)


def test_a_decorator_and_doc_comment_stay_under_new_text_without_them() -> None:
    new = "export class Square {\n  side = 2;\n}"
    text, span = replace_symbol(TS, "Square", new, "shapes.ts")
    assert "/** A square. */\n@sealed\nexport class Square {\n  side = 2;\n}\n" in text
    assert span.first_line == 7
    new = "/** A square. */\n@frozen\nexport class Square {\n  side = 3;\n}"
    text, _ = replace_symbol(TS, "Square", new, "shapes.ts")
    assert "@sealed" not in text and "\n/** A square. */\n@frozen\nexport class Square {" in text


def test_a_nested_function_is_named_by_its_path_or_alone() -> None:
    for symbol in ("total.add", "add"):
        span = find_symbol(JS, symbol, "cart.js")
        assert (span.kind, span.first_line, span.last_line) == ("function", 5, 7)
    text, _ = replace_symbol(
        JS, "total.add", "function add(sum, item) {\n  return sum + 1;\n}", "cart.js"
    )
    assert "  function add(sum, item) {\n    return sum + 1;\n  }\n  return items" in text


def test_a_name_several_definitions_have_is_refused_with_their_lines() -> None:
    source = "class A {\n  int f(int x) { return x; }\n  int f(String s) { return 0; }\n}\n"
    with pytest.raises(EditDoesNotApply, match=r"has 2 definitions named 'A.f' \(lines 2, 3\)"):
        replace_symbol(source, "A.f", "int f(int x) { return 1; }", "A.java")
    source = "class A {\n  run() {}\n}\nclass B {\n  run() {}\n}\n"
    with pytest.raises(EditDoesNotApply, match=r"name one of A\.run, B\.run"):
        find_symbol(source, "run", "ab.js")


def test_new_text_that_is_not_the_named_definition_is_not_added() -> None:
    with pytest.raises(EditDoesNotApply, match="has no 'extra'"):
        replace_symbol(GO, "extra", "func other() {}", "reader.go")
    with pytest.raises(EditDoesNotApply, match=r"has no 'Writer\.Close'"):  # no such type
        replace_symbol(GO, "Writer.Close", "func (w *Writer) Close() {}", "reader.go")
    with pytest.raises(EditDoesNotApply, match="has no 'helper'"):  # a Java method needs a class
        replace_symbol(JAVA, "helper", "static int helper() { return 1; }", "Stack.java")
    with pytest.raises(EditDoesNotApply, match=r"has no 'Shape\.perimeter'"):  # one-line body
        replace_symbol("interface Shape { area(): number; }\n", "Shape.perimeter", "x", "s.ts")


def test_a_method_goes_in_the_inherent_impl_not_a_trait_one() -> None:
    text, _ = replace_symbol(RUST, "Version.bump", "fn bump(&mut self) {}", "version.rs")
    inherent = text.split("impl Version {")[1].split("impl std")[0]
    assert "    fn bump(&mut self) {}\n}" in inherent


def test_a_go_type_in_a_group_and_a_variable_among_others_keep_their_statement() -> None:
    source = "package p\n\ntype (\n\tA int\n\tB string\n)\n"
    text, _ = replace_symbol(source, "A", "type A int64", "p.go")
    assert text == "package p\n\ntype (\n\tA int64\n\tB string\n)\n"
    text, _ = replace_symbol("export const a = 1, b = 2;\n", "b", "const b = 3;", "m.js")
    assert text == "export const a = 1, b = 3;\n"
    text, _ = replace_symbol("const a = () => 1;\n", "a", "let a = () => 2;", "m.js")
    assert text == "let a = () => 2;\n"


def test_the_edit_tool_change_uses_symbols_in_other_languages() -> None:
    change = EditChange("", "func New() *Reader {\n\treturn nil\n}", "New", False, ())
    replaced = change.apply(GO, "pkg/reader.go")
    assert "func New() *Reader {\n\treturn nil\n}\n" in replaced.text
    assert replaced.note == "function New"
    inside = EditChange("items[size++] = x;", "items[size] = x; size++;", "Stack.push", False, ())
    assert "items[size] = x; size++;" in inside.apply(JAVA, "Stack.java").text
    with pytest.raises(EditDoesNotApply, match="symbol works for source files milk parses only"):
        EditChange("", "x", "intro", False, ()).apply("# Intro\n", "README.md")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_name_qualified_with_the_file_s_module_is_found(case: Case) -> None:
    module = PurePosixPath(case.path).stem
    for symbol in (case.function, case.method):
        plain = find_symbol(case.source, symbol, case.path)
        named = find_symbol(case.source, f"{module}.{symbol}", f"src/{case.path}")
        assert (named.start, named.end) == (plain.start, plain.end)
    with pytest.raises(EditDoesNotApply):
        find_symbol(case.source, f"elsewhere.{case.function}", case.path)


def test_renaming_the_symbol_it_names_goes_through_the_whole_file() -> None:
    source = (
        '__all__ = ["natural_list"]\n\n\ndef natural_list(items):\n'
        '    """>>> natural_list([1])"""\n    return items\n\n\nDEFAULT = natural_list([])\n'
    )
    rename = EditChange("natural_list", "join_naturally", "natural_list", True, ())
    done = rename.apply(source, "lists.py")
    assert "natural_list" not in done.text and done.text.count("join_naturally") == 4
    # a name renamed inside a symbol stays inside it
    inside = EditChange("items", "values", "natural_list", True, ())
    kept = inside.apply(source + "\nitems = 3\n", "lists.py")
    assert kept.text.endswith("\nitems = 3\n") and "return values" in kept.text

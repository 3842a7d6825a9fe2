"""milk_lsp.code: the definitions and syntax problems ast-grep finds, one real-looking file
per language."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from milk_lsp.code import LANGUAGES, Language, definitions, language_for, syntax_problems

PYTHON_SOURCE = '''\
"""Orders, priced."""
import os

TAX_RATE = 0.2
_cache: dict[str, int] = {}


class Order:
    limit = 3

    def __init__(self, items):
        self.items = items

    @property
    def total(self):
        def add(a, b):
            return a + b
        return sum(self.items)


async def fetch(url):
    return url
'''

JAVASCRIPT_SOURCE = """\
import fs from "fs";

export const DEFAULT_PORT = 8080;
let counter = 0;
var legacy = null;
const { a, b } = require("./x");

export class Server extends Base {
  constructor(port) {
    super();
    this.port = port;
  }

  async listen() {
    return start(this.port);
  }
}

export function start(port) {
  return port;
}

const handler = (req, res) => res.end();
const named = function () {};
export default function () {}
"""

TYPESCRIPT_SOURCE = """\
export interface Options {
  port: number;
}

export type Handler = (req: Request) => void;

enum Color { Red, Green }

export abstract class Repo<T> implements Store {
  private items: T[] = [];

  get(id: string): T | undefined {
    return this.items[0];
  }
}

export const parse = (text: string): Options => JSON.parse(text);

namespace Util {
  export function noop(): void {}
}

export function build(opts: Options): string {
  return String(opts.port);
}
"""

TSX_SOURCE = """\
import React from "react";

type Props = { title: string };

export function Header({ title }: Props) {
  return <h1 className="header">{title}</h1>;
}

export const Footer = () => <footer />;
"""

GO_SOURCE = """\
package store

import "fmt"

const MaxItems = 100

const (
	a, b = 1, 2
)

var ErrFull = fmt.Errorf("full")

type Stack[T any] struct {
	items []T
}

type Sizer interface {
	Size() int
}

func (s *Stack[T]) Push(v T) {
	s.items = append(s.items, v)
}

func (s Stack[T]) Size() int { return len(s.items) }

func New() *Stack[int] {
	return &Stack[int]{}
}
"""

RUST_SOURCE = """\
use std::fmt;

pub const LIMIT: usize = 10;
static GREETING: &str = "hi";

pub struct Counter<T> {
    count: T,
}

pub enum Mode { Fast, Slow }

pub trait Tick {
    fn tick(&mut self);
}

impl<T> Counter<T> {
    pub fn new(count: T) -> Self {
        Counter { count }
    }
}

impl fmt::Display for Counter<u32> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.count)
    }
}

type Alias = Counter<u8>;

mod inner {
    pub fn helper() {}
}

macro_rules! square { ($x:expr) => { $x * $x }; }

fn main() {}
"""

JAVA_SOURCE = """\
package app;

import java.util.List;

public class Inventory {
    public static final int MAX = 10;
    private final List<String> items;

    public Inventory(List<String> items) {
        this.items = items;
    }

    public int count() {
        return items.size();
    }

    interface Listener {
        void changed(String item);
    }

    enum Kind { A, B }

    record Pair(String a, String b) {}
}
"""

C_SOURCE = """\
#include <stdio.h>

#define MAX_LEN 64
#define SQUARE(x) ((x) * (x))

struct point {
    int x, y;
};

typedef struct { int w; } size_t2;

static int counter = 0;

static int *find(int *xs, int n) {
    return xs;
}

int main(int argc, char **argv) {
    struct point p;
    return 0;
}
"""

CPP_SOURCE = """\
#include <string>

namespace shop {

class Cart {
public:
    int size() const { return n_; }
    void add(int item);
private:
    int n_ = 0;
};

void Cart::add(int item) {
    n_ += item;
}

template <typename T>
T twice(T v) { return v + v; }

struct Item { int price; };

}  // namespace shop
"""

CSHARP_SOURCE = """\
using System;

namespace Shop
{
    public interface IStore { int Count(); }

    public class Store : IStore
    {
        public const int Max = 10;
        private int count;

        public Store(int count) { this.count = count; }

        public int Count() => count;
    }

    public enum Kind { A, B }

    public struct Point { public int X; }

    public record Pair(int A, int B);
}
"""

RUBY_SOURCE = """\
require "json"

MAX_SIZE = 10

module Shop
  class Cart < Base
    def initialize(items)
      @items = items
    end

    def self.empty
      new([])
    end

    def total?
      @items.sum
    end
  end
end

def helper(x)
  x
end
"""

PHP_SOURCE = """\
<?php
namespace App;

const VERSION = "1.0";

interface Store { public function count(): int; }

trait Greets { public function hello() { return "hi"; } }

class Cart implements Store
{
    const MAX = 3;
    private array $items = [];

    public function count(): int
    {
        return count($this->items);
    }
}

function helper($x) { return $x; }
"""

KOTLIN_SOURCE = """\
package app

const val MAX = 10

val greeting = "hi"

data class Item(val name: String)

interface Store {
    fun count(): Int
}

object Registry {
    fun register(item: Item) {}
}

class Cart(private val items: List<Item>) : Store {
    override fun count(): Int = items.size
}

fun main(args: Array<String>) {
    println(greeting)
}
"""

SWIFT_SOURCE = """\
import Foundation

let maxItems = 10

protocol Store {
    func count() -> Int
}

struct Item {
    let name: String
}

class Cart: Store {
    var items: [Item] = []

    init(items: [Item]) { self.items = items }

    func count() -> Int {
        return items.count
    }
}

enum Kind { case a, b }

extension Cart {
    func clear() { items = [] }
}

func helper(_ x: Int) -> Int { x }
"""

LUA_SOURCE = """\
local M = {}

local MAX = 10

function M.add(a, b)
  return a + b
end

function M:size()
  return 0
end

local function helper(x)
  return x
end

function global_fn() end

return M
"""

BASH_SOURCE = """\
#!/usr/bin/env bash
set -euo pipefail

VERSION=1.0

usage() {
  echo "usage"
}

function main {
  usage
}

main "$@"
"""

SCALA_SOURCE = """\
package shop

object Cart {
  val Max = 10
  def empty(): Cart = new Cart(Nil)
}

class Cart(items: List[Int]) {
  def total: Int = items.sum
}

trait Store {
  def count(): Int
}

case class Item(name: String)

def helper(x: Int): Int = x
"""

DEFINED = [
    pytest.param(
        "example.py",
        PYTHON_SOURCE,
        [
            ("TAX_RATE", "constant", 4, 4, None),
            ("_cache", "variable", 5, 5, None),
            ("Order", "class", 8, 18, None),
            ("__init__", "method", 11, 12, "Order"),
            ("total", "method", 15, 18, "Order"),
            ("add", "function", 16, 17, None),
            ("fetch", "function", 21, 22, None),
        ],
        id="python",
    ),
    pytest.param(
        "example.js",
        JAVASCRIPT_SOURCE,
        [
            ("DEFAULT_PORT", "constant", 3, 3, None),
            ("counter", "variable", 4, 4, None),
            ("legacy", "variable", 5, 5, None),
            ("Server", "class", 8, 17, None),
            ("constructor", "method", 9, 12, "Server"),
            ("listen", "method", 14, 16, "Server"),
            ("start", "function", 19, 21, None),
            ("handler", "function", 23, 23, None),
            ("named", "function", 24, 24, None),
        ],
        id="javascript",
    ),
    pytest.param(
        "example.ts",
        TYPESCRIPT_SOURCE,
        [
            ("Options", "interface", 1, 3, None),
            ("Handler", "type", 5, 5, None),
            ("Color", "enum", 7, 7, None),
            ("Repo", "class", 9, 15, None),
            ("get", "method", 12, 14, "Repo"),
            ("parse", "function", 17, 17, None),
            ("Util", "module", 19, 21, None),
            ("noop", "function", 20, 20, None),
            ("build", "function", 23, 25, None),
        ],
        id="typescript",
    ),
    pytest.param(
        "example.tsx",
        TSX_SOURCE,
        [
            ("Props", "type", 3, 3, None),
            ("Header", "function", 5, 7, None),
            ("Footer", "function", 9, 9, None),
        ],
        id="tsx",
    ),
    pytest.param(
        "example.go",
        GO_SOURCE,
        [
            ("MaxItems", "constant", 5, 5, None),
            ("a", "constant", 8, 8, None),
            ("b", "constant", 8, 8, None),
            ("ErrFull", "variable", 11, 11, None),
            ("Stack", "type", 13, 15, None),
            ("Sizer", "type", 17, 19, None),
            ("Push", "method", 21, 23, "Stack"),
            ("Size", "method", 25, 25, "Stack"),
            ("New", "function", 27, 29, None),
        ],
        id="go",
    ),
    pytest.param(
        "example.rs",
        RUST_SOURCE,
        [
            ("LIMIT", "constant", 3, 3, None),
            ("GREETING", "constant", 4, 4, None),
            ("Counter", "struct", 6, 8, None),
            ("Mode", "enum", 10, 10, None),
            ("Tick", "trait", 12, 14, None),
            ("tick", "method", 13, 13, "Tick"),
            ("new", "method", 17, 19, "Counter"),
            ("fmt", "method", 23, 25, "Counter"),
            ("Alias", "type", 28, 28, None),
            ("inner", "module", 30, 32, None),
            ("helper", "function", 31, 31, None),
            ("square", "macro", 34, 34, None),
            ("main", "function", 36, 36, None),
        ],
        id="rust",
    ),
    pytest.param(
        "example.java",
        JAVA_SOURCE,
        [
            ("Inventory", "class", 5, 24, None),
            ("MAX", "constant", 6, 6, "Inventory"),
            ("Inventory", "method", 9, 11, "Inventory"),
            ("count", "method", 13, 15, "Inventory"),
            ("Listener", "interface", 17, 19, "Inventory"),
            ("changed", "method", 18, 18, "Listener"),
            ("Kind", "enum", 21, 21, "Inventory"),
            ("Pair", "class", 23, 23, "Inventory"),
        ],
        id="java",
    ),
    pytest.param(
        "example.c",
        C_SOURCE,
        [
            ("MAX_LEN", "macro", 3, 3, None),
            ("SQUARE", "macro", 4, 4, None),
            ("point", "struct", 6, 8, None),
            ("size_t2", "type", 10, 10, None),
            ("find", "function", 14, 16, None),
            ("main", "function", 18, 21, None),
        ],
        id="c",
    ),
    pytest.param(
        "example.cpp",
        CPP_SOURCE,
        [
            ("shop", "module", 3, 22, None),
            ("Cart", "class", 5, 11, None),
            ("size", "method", 7, 7, "Cart"),
            ("add", "method", 13, 15, "Cart"),
            ("twice", "function", 18, 18, None),
            ("Item", "struct", 20, 20, None),
        ],
        id="cpp",
    ),
    pytest.param(
        "example.cs",
        CSHARP_SOURCE,
        [
            ("Shop", "module", 3, 22, None),
            ("IStore", "interface", 5, 5, None),
            ("Count", "method", 5, 5, "IStore"),
            ("Store", "class", 7, 15, None),
            ("Max", "constant", 9, 9, "Store"),
            ("Store", "method", 12, 12, "Store"),
            ("Count", "method", 14, 14, "Store"),
            ("Kind", "enum", 17, 17, None),
            ("Point", "struct", 19, 19, None),
            ("Pair", "class", 21, 21, None),
        ],
        id="csharp",
    ),
    pytest.param(
        "example.rb",
        RUBY_SOURCE,
        [
            ("MAX_SIZE", "constant", 3, 3, None),
            ("Shop", "module", 5, 19, None),
            ("Cart", "class", 6, 18, "Shop"),
            ("initialize", "method", 7, 9, "Cart"),
            ("empty", "method", 11, 13, "Cart"),
            ("total?", "method", 15, 17, "Cart"),
            ("helper", "function", 21, 23, None),
        ],
        id="ruby",
    ),
    pytest.param(
        "example.php",
        PHP_SOURCE,
        [
            ("VERSION", "constant", 4, 4, None),
            ("Store", "interface", 6, 6, None),
            ("count", "method", 6, 6, "Store"),
            ("Greets", "trait", 8, 8, None),
            ("hello", "method", 8, 8, "Greets"),
            ("Cart", "class", 10, 19, None),
            ("MAX", "constant", 12, 12, "Cart"),
            ("count", "method", 15, 18, "Cart"),
            ("helper", "function", 21, 21, None),
        ],
        id="php",
    ),
    pytest.param(
        "example.kt",
        KOTLIN_SOURCE,
        [
            ("MAX", "constant", 3, 3, None),
            ("greeting", "variable", 5, 5, None),
            ("Item", "class", 7, 7, None),
            ("Store", "class", 9, 11, None),
            ("count", "method", 10, 10, "Store"),
            ("Registry", "class", 13, 15, None),
            ("register", "method", 14, 14, "Registry"),
            ("Cart", "class", 17, 19, None),
            ("count", "method", 18, 18, "Cart"),
            ("main", "function", 21, 23, None),
        ],
        id="kotlin",
    ),
    pytest.param(
        "example.swift",
        SWIFT_SOURCE,
        [
            ("maxItems", "variable", 3, 3, None),
            ("Store", "interface", 5, 7, None),
            ("count", "method", 6, 6, "Store"),
            ("Item", "struct", 9, 11, None),
            ("Cart", "class", 13, 21, None),
            ("init", "method", 16, 16, "Cart"),
            ("count", "method", 18, 20, "Cart"),
            ("Kind", "enum", 23, 23, None),
            ("clear", "method", 26, 26, "Cart"),
            ("helper", "function", 29, 29, None),
        ],
        id="swift",
    ),
    pytest.param(
        "example.lua",
        LUA_SOURCE,
        [
            ("M", "variable", 1, 1, None),
            ("MAX", "constant", 3, 3, None),
            ("add", "method", 5, 7, "M"),
            ("size", "method", 9, 11, "M"),
            ("helper", "function", 13, 15, None),
            ("global_fn", "function", 17, 17, None),
        ],
        id="lua",
    ),
    pytest.param(
        "example.sh",
        BASH_SOURCE,
        [
            ("VERSION", "constant", 4, 4, None),
            ("usage", "function", 6, 8, None),
            ("main", "function", 10, 12, None),
        ],
        id="bash",
    ),
    pytest.param(
        "example.scala",
        SCALA_SOURCE,
        [
            ("Cart", "class", 3, 6, None),
            ("Max", "variable", 4, 4, "Cart"),
            ("empty", "method", 5, 5, "Cart"),
            ("Cart", "class", 8, 10, None),
            ("total", "method", 9, 9, "Cart"),
            ("Store", "trait", 12, 14, None),
            ("count", "method", 13, 13, "Store"),
            ("Item", "class", 16, 16, None),
            ("helper", "function", 18, 18, None),
        ],
        id="scala",
    ),
]


def _language(name: str) -> Language:
    return next(language for language in LANGUAGES if language.name == name)


@pytest.mark.parametrize(("path", "source", "expected"), DEFINED)
def test_definitions_of_a_real_looking_file(path: str, source: str, expected: list[tuple]) -> None:
    language = language_for(path)
    assert language is not None
    found = definitions(source, language)
    assert [(d.name, d.kind, d.first_line, d.last_line, d.container) for d in found] == expected
    assert syntax_problems(source, language) == []
    for definition in found:  # the span is the definition's source
        assert definition.name in source[definition.start : definition.end]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/app.PY", "python"),
        ("types.pyi", "python"),
        ("web/index.mjs", "javascript"),
        ("web/legacy.CJS", "javascript"),
        ("web/App.jsx", "javascript"),
        ("src/server.cts", "typescript"),
        ("src/App.tsx", "tsx"),
        ("include/list.h", "c"),
        ("src/list.hxx", "cpp"),
        ("Program.cs", "csharp"),
        ("build.gradle.kts", "kotlin"),
        ("C:\\work\\main.go", "go"),
        ("scripts/run.sh", "bash"),
        ("README.md", None),
        ("Makefile", None),
        (".py", None),
    ],
)
def test_language_for_a_path(path: str, expected: str | None) -> None:
    language = language_for(path)
    assert (language.name if language else None) == expected


def test_every_language_has_a_label_extensions_and_rules_its_grammar_accepts() -> None:
    names = [language.name for language in LANGUAGES]
    assert len(names) == len(set(names))
    assert len(names) >= 14
    for language in LANGUAGES:
        assert language.label and language.extensions and language.definitions
        kinds = [rule.node for rule in language.definitions]
        assert len(kinds) == len(set(kinds)), language.name
    covered = {language.name for language in LANGUAGES}
    assert covered >= {
        "python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
        "csharp", "ruby", "php", "kotlin", "swift",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("language", "line", "declares"),
    [
        ("python", 'parser.add_argument("--dry-run", action="store_true")', True),
        ("python", '@click.option("--count", default=1)', True),
        ("python", 'name: str = typer.Option("--name")', True),
        ("python", 'parser.add_option("-q", "--quiet")', True),
        ("python", "args = parser.parse_args()", False),
        ("javascript", 'program.option("-p, --port <n>", "port")', True),
        ("typescript", 'program.requiredOption("--token <t>")', True),
        ("javascript", "yargs.options({ verbose: { type: 'boolean' } })", True),
        ("javascript", "const options = {};", False),
        ("go", 'port := flag.Int("port", 8080, "port")', True),
        ("go", 'flag.StringVar(&name, "name", "", "name")', True),
        ("go", 'cmd.PersistentFlags().BoolVarP(&v, "verbose", "v", false, "")', True),
        ("go", "flag.Parse()", False),
        ("rust", "    #[arg(short, long)]", True),
        ("rust", '    Arg::new("config")', True),
        ("rust", "#[derive(Parser)]", False),
        ("java", '@Option(names = {"-v", "--verbose"})', True),
        ("java", '@CommandLine.Option(names = "--out")', True),
        ("java", "Optional<String> value;", False),
    ],
)
def test_cli_options_match_the_usual_libraries(language: str, line: str, declares: bool) -> None:
    pattern = _language(language).cli_options
    assert pattern is not None
    assert bool(re.search(pattern, line)) is declares


@pytest.mark.parametrize(
    ("language", "source", "line"),
    [
        ("javascript", "const ok = 1;\nconst x = (a, b => {\n  return a;\n}\n", 2),
        ("javascript", "import x from 'x';\n\nf(a\n", 3),
        ("go", "package main\n\nfunc main() {\n\tx := 1\n\tprintln(x)\n", 6),
        ("rust", "use std::io;\n\nfn read(path: &str -> String {\n    path.to_string()\n}\n", 3),
        ("python", "import os\n\n\ndef f(:\n    pass\n", 4),
        ("java", "class A {\n  int f() {\n    return ;;\n  }\n  void g( {}\n}\n", 5),
        ("c", "int main(void) {\n  int x = ;\n  return 0;\n}\n", 2),
        ("ruby", "class A\n  def f(x)\n    x.map { |y| y * }\n  end\nend\n", 3),
    ],
)
def test_a_broken_file_has_a_syntax_problem_on_its_line(
    language: str, source: str, line: int
) -> None:
    problems = syntax_problems(source, _language(language))
    assert problems, source
    assert line in [problem.line for problem in problems]
    for problem in problems:
        assert problem.column >= 1
        assert "\n" not in problem.text and len(problem.text) <= 40


def test_a_missing_token_is_found_where_it_is_missing() -> None:
    [missing] = syntax_problems("def f(:\n    pass\n", _language("python"))
    assert (missing.line, missing.column, missing.text) == (1, 7, "def f(")
    problems = syntax_problems("package main\n\nfunc main() {\n\tx := 1\n", _language("go"))
    assert [(p.line, p.text) for p in problems] == [(5, "x := 1")]  # the `}` at the end
    [error] = syntax_problems("f(a\n", _language("javascript"))
    assert (error.line, error.column, error.text) == (1, 1, "f(a")


def test_an_error_snippet_is_one_line_of_forty_characters_at_most() -> None:
    source = "x = 1\n" + "const y = (" + "a, " * 40 + "=> {\n"
    [problem, *_] = syntax_problems(source, _language("javascript"))
    assert problem.line == 2
    assert problem.text == ("const y = (" + "a, " * 40)[:40]


def test_non_ascii_text_gives_character_offsets() -> None:
    source = (
        "// Grüße, 😀 — 𝄞 ü\n"
        "const café = 'naïve 😀';\n"
        "export class Über {\n"
        "  größe() { return '🎉'; }\n"
        "}\n"
        "function après() {}\n"
    )
    found = definitions(source, _language("javascript"))
    assert [(d.name, d.kind, d.first_line, d.container) for d in found] == [
        ("café", "variable", 2, None),
        ("Über", "class", 3, None),
        ("größe", "method", 4, "Über"),
        ("après", "function", 6, None),
    ]
    for definition in found:
        span = source[definition.start : definition.end]
        assert span.startswith((definition.name, "class", "function")), span
    assert source[found[-1].start : found[-1].end] == "function après() {}"
    assert source[found[1].start : found[1].end].endswith("}\n}")
    [problem] = syntax_problems("// 😀😀\nlet é = (1;\n", _language("javascript"))
    assert problem.line == 2


def test_non_ascii_python_offsets() -> None:
    source = '"""Ünïcödé 😀."""\n\nNAME = "ß"\n\n\ndef grüß(x):\n    return x\n'
    found = definitions(source, _language("python"))
    assert [(d.name, d.kind) for d in found] == [("NAME", "constant"), ("grüß", "function")]
    assert source[found[0].start : found[0].end] == 'NAME = "ß"'
    assert source[found[1].start :].startswith("def grüß(x):")


@pytest.mark.parametrize(
    "text",
    ["", "\n", "\x00\x01\x02", "x" * 3, "'\udc80'", "}}}{{{((", "\ufeff" + "def f(): pass"],
)
def test_nothing_raises_for_any_text(text: str) -> None:
    for language in LANGUAGES:
        assert isinstance(definitions(text, language), list)
        assert isinstance(syntax_problems(text, language), list)


def test_the_package_does_not_import_ast_grep() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, milk_lsp.code, milk_lsp.workspace.index;"
            "print('ast_grep_py' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_a_name_bound_to_require_is_an_import_and_not_defined_by_the_index(
    tmp_path: pathlib.Path,
) -> None:
    """cross-env's `const commandConvert = require('./command')`: the name lives in
    `command.js`. The parse calls it an import; the index counts only `command.js` as
    defining it (a guided answer located the require line as "defines commandConvert" and
    said the function lived in index.js)."""
    from milk_lsp.workspace.index import WorkspaceIndex

    index_js = (
        "const commandConvert = require('./command')\n"
        "const MAX = require('./max')\n"
        "const fromRequire = () => require('./x')\n"
        "let count = 0\n"
    )
    kinds = [(d.name, d.kind) for d in definitions(index_js, language_for("index.js"))]
    assert kinds == [
        ("commandConvert", "import"),
        ("MAX", "import"),
        ("fromRequire", "function"),
        ("count", "variable"),
    ]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.js").write_text(index_js)
    (tmp_path / "src" / "command.js").write_text("function commandConvert(c) { return c }\n")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    assert index.definers("commandConvert") == ("src/command.js",)
    assert index.definers("count") == ("src/index.js",)

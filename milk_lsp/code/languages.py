"""The languages milk reads, as data: for each, its file extensions, the tree-sitter node kinds
that define a name and where that name is, and how its command-line options are declared.

The rules are data (like aider's tag queries) so that a language is added by adding a table,
not code: `parse.definitions` runs them all as one ast-grep search. Node kinds and field names
are those of the grammars ast-grep-py bundles; a rule naming a kind a grammar does not have
makes that language's search fail, which `tests/test_code_parse.py` would catch.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ast_grep_py import Rule

__all__ = ["LANGUAGES", "DefinitionRule", "Language", "language_for"]


@dataclass(frozen=True, slots=True)
class DefinitionRule:
    """Nodes of kind `node` define a name (or, with `kind` None, only hold definitions)."""

    node: str
    """The tree-sitter node kind."""
    kind: str | None
    """What is defined: "function", "method", "class", "interface", "struct", "enum",
    "trait", "type", "constant", "variable", "module", "macro" (and "import", refined from
    a variable: `import_calls`); None for a node that only
    contains definitions (Rust's `impl`). A "function" directly inside a container becomes a
    "method"; a "variable" named in capitals (`MAX_SIZE`) a "constant"."""
    name: tuple[str, ...] = ("name",)
    """Where the name is, step by step from the node: a field name (every child in that
    field), `+field` (follow that field for as long as there is one: C's declarator chain),
    or `:kind` (the named children of that kind, for grammars without fields)."""
    where: Rule | None = field(default=None, hash=False, compare=False)
    """An ast-grep rule the node must also match: module level only, a `static final`
    modifier, and the like."""
    container: bool = False
    """Whether definitions inside are its members (a class, an `impl`, a protocol)."""
    receiver: str | None = None
    """The field naming the type a method is declared for outside of it (Go's receiver)."""
    function_values: frozenset[str] = frozenset()
    """Value kinds that make a variable a function (`const f = () => ...`)."""
    keyword: str | None = None
    """A field whose text chooses the kind through `keyword_kinds` (Swift's `struct`)."""
    keyword_kinds: Mapping[str, str | None] = field(
        default_factory=lambda: MappingProxyType({}), hash=False, compare=False
    )
    import_calls: frozenset[str] = frozenset()
    """Functions whose call as a variable's value makes it an "import" (`const x =
    require('./x')`): the name is bound here and defined in the module it names."""


@dataclass(frozen=True, slots=True)
class Language:
    """One language ast-grep parses, and how milk reads it."""

    name: str
    """ast-grep's language id ("javascript")."""
    label: str
    """The name people use ("JavaScript")."""
    extensions: tuple[str, ...]
    """Lower-case file extensions, with the dot."""
    definitions: tuple[DefinitionRule, ...]
    """One rule per node kind."""
    cli_options: str | None = None
    """A regex (Python `re`) matching the source lines that declare command-line options
    with this language's usual libraries; None when there is no usual one."""
    file_scoped_names: bool = False
    """A file declares or imports every name of its own it uses (JavaScript and TypeScript
    modules): a name that replaced one of the file's definitions at a use, and that the file
    does not define, is a rename left half done. False where names come from other files of
    the package unimported (Go, C, Java, …)."""
    bindings: tuple[tuple[str, str | None], ...] = ()
    """Where a file of a `file_scoped_names` language binds a name: (node kind, the field
    holding the names, None for the whole node); the names are the `bound_names` kinds in
    it. A name bound before an edit, bound nowhere after it and still used is an edit that
    removed a declaration its uses need."""
    bound_names: tuple[str, ...] = ()
    """The node kinds of a bound name inside a `bindings` node."""
    docs_inside: bool = False
    """A definition's documentation also goes inside it, under its first line (Python's
    docstring); elsewhere it goes right above (a JSDoc, a Go or Rust doc comment), and a
    comment inside is not one (cross-env's JSDoc put under `function parseCommand(args) {`)."""


def _rule(
    node: str,
    kind: str | None,
    *name: str,
    where: Rule | None = None,
    container: bool = False,
    receiver: str | None = None,
    function_values: frozenset[str] = frozenset(),
    keyword: str | None = None,
    keyword_kinds: Mapping[str, str | None] | None = None,
    import_calls: frozenset[str] = frozenset(),
) -> DefinitionRule:
    return DefinitionRule(
        node,
        kind,
        name or ("name",),
        where,
        container,
        receiver,
        function_values,
        keyword,
        MappingProxyType(dict(keyword_kinds or {})),
        import_calls,
    )


_JS_FUNCTIONS = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_TOP_LEVEL: Rule = {
    "has": {"field": "name", "kind": "identifier"},
    "inside": {
        "any": [{"kind": "lexical_declaration"}, {"kind": "variable_declaration"}],
        "inside": {
            "any": [
                {"kind": "program"},
                {"kind": "export_statement", "inside": {"kind": "program"}},
            ]
        },
    },
}
_JS_NAMED_FUNCTION: Rule = {
    "all": [
        {"has": {"field": "name", "kind": "identifier"}},
        {
            "has": {
                "field": "value",
                "any": [
                    {"kind": "arrow_function"},
                    {"kind": "function_expression"},
                    {"kind": "generator_function"},
                ],
            }
        },
    ]
}
"""A function given a name at any depth (`const resumeNext = () => …` inside another)."""
_JS_RULES = (
    _rule("function_declaration", "function"),
    _rule("generator_function_declaration", "function"),
    _rule("class_declaration", "class", container=True),
    _rule("method_definition", "method"),
    _rule(
        "variable_declarator",
        "variable",
        where={"any": [_JS_TOP_LEVEL, _JS_NAMED_FUNCTION]},
        function_values=_JS_FUNCTIONS,
        import_calls=frozenset({"require"}),
    ),
)
_TS_RULES = (
    *_JS_RULES,
    _rule("abstract_class_declaration", "class", container=True),
    _rule("interface_declaration", "interface", container=True),
    _rule("type_alias_declaration", "type"),
    _rule("enum_declaration", "enum"),
    _rule("internal_module", "module"),
    _rule("function_signature", "function"),
)
_JS_OPTIONS = r"\.(?:option|requiredOption|options)\("
_JS_BINDINGS: tuple[tuple[str, str | None], ...] = (
    ("variable_declarator", "name"),
    ("formal_parameters", None),
    ("catch_clause", "parameter"),
    ("import_clause", None),
    ("for_in_statement", "left"),
    ("function_declaration", "name"),
    ("generator_function_declaration", "name"),
    ("class_declaration", "name"),
    ("arrow_function", "parameter"),
)
_JS_BOUND = ("identifier", "shorthand_property_identifier_pattern")
"""Node kinds of a bound name (`{a} = …` binds a shorthand pattern)."""
_TS_BOUND = (*_JS_BOUND, "type_identifier")
"""A TypeScript class's name is a type identifier."""
USE_NAMES = ("identifier", "shorthand_property_identifier")
"""Node kinds of a name used as a value (`{env}` uses env; `obj.env` names a property)."""

_GO_TOP_LEVEL: Rule = {"not": {"inside": {"kind": "block", "stopBy": "end"}}}
_C_BODY: Rule = {"has": {"field": "body", "kind": "field_declaration_list"}}
"""A struct with a body defines it (`struct point p;` only names it)."""
_C_RULES = (
    _rule("function_definition", "function", "+declarator"),
    _rule("struct_specifier", "struct", where=_C_BODY),
    _rule("union_specifier", "type", where=_C_BODY),
    _rule("enum_specifier", "enum", where={"has": {"field": "body", "kind": "enumerator_list"}}),
    _rule("type_definition", "type", "+declarator"),
    _rule("preproc_def", "macro"),
    _rule("preproc_function_def", "macro"),
)
_C_OPTIONS = r"\{\s*\"[\w-]+\"\s*,\s*(?:no|required|optional)_argument\b"

LANGUAGES: tuple[Language, ...] = (
    Language(
        "python",
        "Python",
        (".py", ".pyi"),
        (
            _rule("function_definition", "function"),
            _rule("class_definition", "class", container=True),
            _rule(
                "assignment",
                "variable",
                "left",
                where={
                    "has": {"field": "left", "kind": "identifier"},
                    "inside": {"kind": "expression_statement", "inside": {"kind": "module"}},
                },
            ),
        ),
        r"\.add_argument\(|\.add_option\(|\bclick\.option\(|\btyper\.Option\(",
        docs_inside=True,
    ),
    Language(
        "javascript",
        "JavaScript",
        (".js", ".jsx", ".mjs", ".cjs"),
        _JS_RULES,
        _JS_OPTIONS,
        file_scoped_names=True,
        bindings=_JS_BINDINGS,
        bound_names=_JS_BOUND,
    ),
    Language(
        "typescript",
        "TypeScript",
        (".ts", ".mts", ".cts"),
        _TS_RULES,
        _JS_OPTIONS,
        file_scoped_names=True,
        bindings=_JS_BINDINGS,
        bound_names=_TS_BOUND,
    ),
    Language(
        "tsx",
        "TSX",
        (".tsx",),
        _TS_RULES,
        _JS_OPTIONS,
        file_scoped_names=True,
        bindings=_JS_BINDINGS,
        bound_names=_TS_BOUND,
    ),
    Language(
        "go",
        "Go",
        (".go",),
        (
            _rule("function_declaration", "function"),
            _rule("method_declaration", "method", receiver="receiver"),
            _rule("type_spec", "type"),
            _rule("type_alias", "type"),
            _rule("const_spec", "constant", where=_GO_TOP_LEVEL),
            _rule("var_spec", "variable", where=_GO_TOP_LEVEL),
        ),
        r"\b(?:flag|pflag)\.(?:(?:String|Bool|Int|Int64|Uint|Uint64|Float64|Duration|Func"
        r"|BoolFunc|Text|StringSlice|StringArray|IntSlice)(?:Var)?P?|VarP?)\("
        r"|\.(?:Persistent)?Flags\(\)\.",
    ),
    Language(
        "rust",
        "Rust",
        (".rs",),
        (
            _rule("function_item", "function"),
            _rule("function_signature_item", "function"),
            _rule("struct_item", "struct"),
            _rule("enum_item", "enum"),
            _rule("union_item", "type"),
            _rule("trait_item", "trait", container=True),
            _rule("impl_item", None, "type", container=True),
            _rule("type_item", "type"),
            _rule("const_item", "constant"),
            _rule("static_item", "constant"),
            _rule("mod_item", "module"),
            _rule("macro_definition", "macro"),
        ),
        r"#\[(?:arg|clap)\(|\bArg::(?:new|with_name)\(",
    ),
    Language(
        "java",
        "Java",
        (".java",),
        (
            _rule("class_declaration", "class", container=True),
            _rule("interface_declaration", "interface", container=True),
            _rule("enum_declaration", "enum", container=True),
            _rule("record_declaration", "class", container=True),
            _rule("annotation_type_declaration", "interface"),
            _rule("method_declaration", "method"),
            _rule("constructor_declaration", "method"),
            _rule(
                "field_declaration",
                "constant",
                "declarator",
                "name",
                where={
                    "has": {
                        "kind": "modifiers",
                        "all": [{"regex": r"\bstatic\b"}, {"regex": r"\bfinal\b"}],
                    }
                },
            ),
        ),
        r"@(?:CommandLine\.)?Option\(",
    ),
    Language("c", "C", (".c", ".h"), _C_RULES, _C_OPTIONS),
    Language(
        "cpp",
        "C++",
        (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++"),
        (
            *(rule for rule in _C_RULES if rule.node != "struct_specifier"),
            _rule("class_specifier", "class", where=_C_BODY, container=True),
            _rule("struct_specifier", "struct", where=_C_BODY, container=True),
            _rule("namespace_definition", "module"),
            _rule("alias_declaration", "type"),
        ),
        _C_OPTIONS,
    ),
    Language(
        "csharp",
        "C#",
        (".cs",),
        (
            _rule("class_declaration", "class", container=True),
            _rule("struct_declaration", "struct", container=True),
            _rule("interface_declaration", "interface", container=True),
            _rule("record_declaration", "class", container=True),
            _rule("enum_declaration", "enum"),
            _rule("delegate_declaration", "type"),
            _rule("method_declaration", "method"),
            _rule("constructor_declaration", "method"),
            _rule(
                "field_declaration",
                "constant",
                ":variable_declaration",
                ":variable_declarator",
                "name",
                where={"has": {"kind": "modifier", "regex": "^const$"}},
            ),
            _rule("namespace_declaration", "module"),
        ),
        r"\bnew\s+Option<|\[Option\(",
    ),
    Language(
        "ruby",
        "Ruby",
        (".rb",),
        (
            _rule("method", "function"),
            _rule("singleton_method", "method"),
            _rule("class", "class", container=True),
            _rule("module", "module", container=True),
            _rule(
                "assignment",
                "constant",
                "left",
                where={"has": {"field": "left", "kind": "constant"}},
            ),
        ),
        r"\.on\(\s*['\"]-",
    ),
    Language(
        "php",
        "PHP",
        (".php",),
        (
            _rule("function_definition", "function"),
            _rule("class_declaration", "class", container=True),
            _rule("interface_declaration", "interface", container=True),
            _rule("trait_declaration", "trait", container=True),
            _rule("enum_declaration", "enum", container=True),
            _rule("method_declaration", "method"),
            _rule("const_element", "constant", ":name"),
        ),
        r"->addOption\(",
    ),
    Language(
        "kotlin",
        "Kotlin",
        (".kt", ".kts"),
        (
            _rule("class_declaration", "class", ":type_identifier", container=True),
            _rule("object_declaration", "class", ":type_identifier", container=True),
            _rule("function_declaration", "function", ":simple_identifier"),
            _rule("type_alias", "type", ":type_identifier"),
            _rule(
                "property_declaration",
                "variable",
                ":variable_declaration",
                ":simple_identifier",
                where={"inside": {"kind": "source_file"}},
            ),
        ),
        r"\bby\s+option\(|@(?:CommandLine\.)?Option\(",
    ),
    Language(
        "swift",
        "Swift",
        (".swift",),
        (
            _rule(
                "class_declaration",
                "class",
                container=True,
                keyword="declaration_kind",
                keyword_kinds={
                    "class": "class",
                    "struct": "struct",
                    "enum": "enum",
                    "actor": "class",
                    "extension": None,
                },
            ),
            _rule("protocol_declaration", "interface", container=True),
            # the return type is in their "name" field too
            _rule("function_declaration", "function", ":simple_identifier"),
            _rule("protocol_function_declaration", "method", ":simple_identifier"),
            _rule("init_declaration", "method"),
            _rule("typealias_declaration", "type"),
            _rule("property_declaration", "variable", where={"inside": {"kind": "source_file"}}),
        ),
        r"@(?:Option|Flag)\b",
    ),
    Language(
        "lua",
        "Lua",
        (".lua",),
        (
            _rule("function_declaration", "function"),
            _rule(
                "variable_declaration",
                "variable",
                ":assignment_statement",
                ":variable_list",
                "name",
                where={"inside": {"kind": "chunk"}},
            ),
        ),
        r":(?:option|flag)\(",
    ),
    Language(
        "bash",
        "Bash",
        (".sh", ".bash"),
        (
            _rule("function_definition", "function"),
            _rule("variable_assignment", "variable", where={"inside": {"kind": "program"}}),
        ),
        r"^\s*(?:-\w\|)?--[\w-]+(?:\|-\w)?\)",
    ),
    Language(
        "scala",
        "Scala",
        (".scala", ".sc"),
        (
            _rule("class_definition", "class", container=True),
            _rule("object_definition", "class", container=True),
            _rule("trait_definition", "trait", container=True),
            _rule("function_definition", "function"),
            _rule("function_declaration", "function"),
            _rule("type_definition", "type"),
            _rule(
                "val_definition",
                "variable",
                "pattern",
                where={
                    "inside": {"any": [{"kind": "compilation_unit"}, {"kind": "template_body"}]}
                },
            ),
        ),
        r"\bopt\[",
    ),
)
"""Every language milk parses."""

_BY_EXTENSION = MappingProxyType(
    {extension: language for language in LANGUAGES for extension in language.extensions}
)


def language_for(path: str) -> Language | None:
    """The language of the file at `path`, by its extension (in any case); None when milk
    does not parse it."""
    extension = posixpath.splitext(path.replace("\\", "/"))[1].lower()
    return _BY_EXTENSION.get(extension) if extension else None

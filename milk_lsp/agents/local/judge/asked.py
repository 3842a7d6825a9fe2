"""Which names of this workspace a message asks about, by structure, in any human language.

The message's words are its runs of ASCII letters, digits, `_`, `$` not inside a longer Latin
word (`greet関数` gives `greet`, `Rückgabewert` none); each that looks like an identifier is
matched against the names the workspace's files define (exactly, then ignoring case, then
allowing one typo in a longer name: `naturalsise`) and, when written as code, against its
file names without their extension (`utils`); its paths name files. No frame of any
language decides it ("where is … defined", "wo ist …"): a question in any language finds
the same names as the English one.

A short plain word (`add`, `main`, `set`) is too often a word of the sentence to stand for a
definition alone: it counts when the message writes it as code (a span, quotes, a call), as
does any word with code's shape (`_`, an inner capital, a digit, a dot), or when another,
longer word of the message is in a file that defines it ("the precision parameter of main":
the file defining `main` has `precision`; "the main difference between Python 2 and 3" has
no such word).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

    from milk_lsp.workspace.index import WorkspaceIndex

PLAIN_MIN = 5
"""A plain lowercase word this long or longer may stand for a definition on its own."""
TYPO_MIN = 6
"""A word this long or longer may name a definition with one typo."""

QUOTE_PAIRS: tuple[tuple[str, str], ...] = (
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("\u201c", "\u201d"),  # English “…”
    ("\u2018", "\u2019"),  # English single
    ("\u201e", "\u201c"),  # German „…“
    ("\u00ab", "\u00bb"),  # French, Russian «…»
    ("\u00bb", "\u00ab"),  # Danish »…«
    ("\u300c", "\u300d"),  # Japanese 「…」
    ("\u300e", "\u300f"),  # Japanese 『…』
)
"""How scripts quote a text (punctuation, not words): a message's quoted text is code or a
text to change."""
_SINGLE_PAIR = re.compile(r"(?<![\w'])'([^'\n]{1,200}?)'(?![\w'])")
"""A text in straight single quotes; an apostrophe has a letter before it or after it."""
_STRAIGHT = str.maketrans({char: '"' for pair in QUOTE_PAIRS[3:] for char in pair} | {"`": '"'})


def straight_quotes(text: str) -> str:
    """`text` with every quote of another style (“…”, «…», 「…」, `…`, and a pair of
    straight single quotes around a text, `'inherit'`, not an apostrophe: `where's`) made a
    straight `"`."""
    return _SINGLE_PAIR.sub(r'"\1"', text.translate(_STRAIGHT))


def quoted_pattern(body: str = r"[^\n]{1,200}?") -> str:
    """A regex alternation of `body` in every quote style, each as its own group pair."""
    return "|".join(f"{re.escape(open_)}{body}{re.escape(close)}" for open_, close in QUOTE_PAIRS)


def one_edit(a: str, b: str) -> bool:
    """Whether `a` and `b` differ by exactly one edit, a swap of neighbours counting as one."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
PATH = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{1,6}(?![\w/])")
"""A file's path or name with an extension (`lib/env-options.js`, `tsconfig.json`)."""
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")


@cache
def _patterns() -> tuple[regex.Pattern[str], re.Pattern[str]]:
    """A message's words (runs of ASCII letters, digits, `_`, `$` no Latin letter touches:
    `Rückgabewert` gives no `R`) and its quoted texts; made on the first question."""
    import regex

    words = regex.compile(r"(?<![\p{Latin}\d_$])[A-Za-z\d_$]+(?:\.[\w$]+)*(?![\p{Latin}\d_$])")
    return words, re.compile(quoted_pattern())


@dataclass(frozen=True, slots=True)
class Asked:
    """What a message names of the workspace: definitions (as the files spell them) and
    files (paths relative to the root), each once, in the message's order."""

    names: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    """The files of `files` it writes as paths (`src/command.js`), not by a word's stem."""

    def __bool__(self) -> bool:
        return bool(self.names or self.files)


def code_shaped(word: str) -> bool:
    """A word only code writes: `_`, `$`, a digit, a dot between parts, an inner capital."""
    return (
        any(char in word for char in "_$.")
        or any(char.isdigit() for char in word)
        or _INNER_CAPITAL.search(word) is not None
    )


def asked(message: str, index: WorkspaceIndex) -> Asked:
    """The definitions and files of the workspace that `message` names (see the module)."""
    defined = index.definition_names()
    stems = index.file_stems()
    if not defined and not stems:
        return Asked()
    lookup = _lookup(defined)
    words, quoted = _patterns()
    as_code = {word for span in quoted.findall(message) for word in _IDENTIFIER.findall(span)}
    names: dict[str, None] = {}
    written = tuple(dict.fromkeys(filter(None, map(index.file_for, PATH.findall(message)))))
    files = dict.fromkeys(written)  # `lib/env-options.js`: its words name no file
    short: list[str] = []
    tokens: list[str] = []
    for match in words.finditer(message):
        for token in _IDENTIFIER.findall(match.group()):
            tokens.append(token)
            written_as_code = (
                token in as_code
                or code_shaped(token)
                or message.startswith("(", match.start() + match.group().find(token) + len(token))
            )
            for name in _names_for(token.rstrip("."), lookup, written_as_code):
                names.setdefault(name, None)
            if not written_as_code and token in lookup.exact and len(token) < PLAIN_MIN:
                short.append(token)
            if "." in token and (named := index.file_for(token)) is not None:
                files.setdefault(named, None)  # `number.py`, `__main__.py`: a file's name
            stem = token.lower()
            if written_as_code and stem in stems:
                for path in stems[stem]:
                    files.setdefault(path, None)
    for word in short:  # "the precision parameter of main": `precision` is in cli.py too
        others = [token for token in tokens if len(token) >= PLAIN_MIN and token != word]
        definers = index.definers(word)
        if any(path in files for path in definers) or any(  # "xtob in util.go"
            index.in_file(path, other) for path in definers for other in others
        ):
            names.setdefault(word, None)
    return Asked(tuple(names), tuple(files), written)


def _names_for(token: str, lookup: _Lookup, as_code: bool) -> Iterable[str]:
    """The definitions `token` stands for: itself, its last dotted part, or (long enough)
    the same ignoring case or with one typo."""
    parts = [part for part in token.split(".") if part]
    if not parts:
        return ()
    word = parts[-1]
    strong = as_code or len(word) >= PLAIN_MIN or not word.islower()
    if word in lookup.exact and (strong or len(parts) > 1):
        return (word,)
    if len(word) < PLAIN_MIN and not as_code:
        return ()
    folded = lookup.folded.get(word.lower())
    if folded:
        return sorted(folded)
    if len(word) >= TYPO_MIN:
        return lookup.near(word)
    return ()


class _Lookup:
    """The workspace's definitions, for exact, case-blind and one-typo matches."""

    def __init__(self, defined: frozenset[str]) -> None:
        self.exact = defined
        self.folded: dict[str, set[str]] = defaultdict(set)
        self._prefixes: frozenset[str] | None = None
        self._by_length: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for name in defined:
            lower = name.lower()
            self.folded[lower].add(name)
            if len(name) >= TYPO_MIN - 1:
                self._by_length[len(lower)].append((lower, name))

    def begins(self, piece: str) -> bool:
        """Whether a definition is `piece` (any case) or, `piece` being long enough, begins
        with it or is where it begins (`greet` in `GreetingService`)."""
        if piece in self.folded:
            return True
        prefixes = self._prefixes
        if prefixes is None:
            prefixes = self._prefixes = frozenset(
                lower[:length]
                for lower in self.folded
                for length in range(PLAIN_MIN, len(lower) + 1)
            )
        return piece in prefixes or any(
            piece.startswith(lower) for lower in self.folded if len(lower) >= PLAIN_MIN
        )

    def near(self, word: str) -> tuple[str, ...]:
        """Definitions one edit (an insertion, deletion, substitution or swap of neighbours)
        away from `word`, not counting a changed ending (`parser` is no typo of `parse`)."""
        lower = word.lower()
        found = [
            name
            for length in (len(lower) - 1, len(lower), len(lower) + 1)
            for other, name in self._by_length.get(length, ())
            if one_edit(lower, other) and not _only_the_ending(lower, other)
        ]
        return tuple(sorted(found))


@lru_cache(maxsize=4)
def _lookup(defined: frozenset[str]) -> _Lookup:
    """One lookup per state of the index (a refresh that changed no definition keeps it)."""
    return _Lookup(defined)


def _only_the_ending(a: str, b: str) -> bool:
    """`b` is `a` with a letter or two more or less at its end (a plural, a tense)."""
    short, long = sorted((a, b), key=len)
    return short != long and long.startswith(short)


MODULE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".tsx", ".rb")
"""Files that are a module named by their stem (`calc.add`); a Go or Rust file is not
(Go's `sql.NullString` is the standard library's beside a `sql.go`)."""
SUBWORD_MIN = 4
"""A part of a compound name this long or longer may tie it to a definition."""


def near(name: str, index: WorkspaceIndex | None) -> bool:
    """Whether the code name `name`, which resolves nowhere here, is near what this workspace
    defines, so that it reads as a claim about it: its head is a definition or a module
    here (`Calculator.total_of`, `hello.greet_everyone`), it is one typo from a definition
    (`Calculater`), or, a snake_case name, a part of it is, or begins, a definition or is a
    file's stem (`greet_user`, `calc_server` beside calc.py). A name near
    nothing here (`AbortController`, `context.DeadlineExceeded`, `or_insert_with`) is
    outside knowledge. Without an index every name is taken as a claim."""
    if index is None:
        return True
    defined = index.definition_names()
    lookup = _lookup(defined)
    parts = [part for part in name.removesuffix("()").split(".") if part]
    if not parts:
        return False
    if len(parts) > 1:
        head = parts[0]
        modules = index.file_stems().get(head.lower(), ())
        if (
            (head in defined and head[:1].isupper() and len(parts) == 2)
            or index.has_path(head + "/")
            or any(path.endswith(MODULE_SUFFIXES) for path in modules)
        ):
            return True
    last = parts[-1]
    if len(last) >= TYPO_MIN - 1 and (lookup.folded.get(last.lower()) or lookup.near(last)):
        return True
    if not last.islower():
        return False  # a type's parts (`NullString`, `PluralRules`) are the language's words
    pieces = [piece for piece in last.split("_") if len(piece) >= SUBWORD_MIN]
    stems = index.file_stems()
    return len(pieces) > 1 and any(lookup.begins(piece) or piece in stems for piece in pieces)

"""The terms a text is ranked by: its words and identifiers, split where code joins words
(`parseNestedArray` and `parse_nested_array` both give `pars`, `nest`, `array`), lower-cased
and stemmed (Snowball's English stemmer: identifiers are English in most code, and a stem
of another language's word simply matches nothing). No word is dropped by a list: a term
every file has weighs nothing in the ranking (`locate`'s inverse document frequency), and
a term most lines of the located files hold weighs little among their lines (`ranked_lines`).
"""

from __future__ import annotations

import math
from collections import Counter
from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    import regex
    from snowballstemmer import stemmer as Stemmer

    from milk_lsp.code import Definition

MIN_TERM = 2
"""A shorter piece (`a`, `x`) ranks nothing."""
PROSE_WEIGHT = 0.5
"""A request's term that no definition's name holds (`which`, `into`, `license`) weighs
this much: a question's own words are rare in code files, so they outranked the code's
(cross-env's "which env vars … on Windows?" showed README and LICENSE before `variable.js`)."""


@cache
def _patterns() -> tuple[regex.Pattern[str], regex.Pattern[str]]:
    """Words (letters, digits and `_` of any script) and the pieces of an identifier."""
    import regex

    words = regex.compile(r"[\p{L}\p{Nd}_]+")
    pieces = regex.compile(r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{Nd}+|\p{L}+")
    return words, pieces


@cache
def _stemmer() -> Stemmer:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz_0123456789")


@lru_cache(maxsize=200_000)
def word_terms(word: str) -> tuple[str, ...]:
    """The terms of one word or identifier: its pieces, stemmed (`max_depth`: `max`,
    `depth`; `parseNestedArray`: `pars`, `nest`, `array`)."""
    if _PLAIN.issuperset(word):  # snake_case and plain words, by far the most tokens
        parts = [part for part in word.split("_") if part]
    else:
        _, pieces = _patterns()
        parts = [piece.lower() for piece in pieces.findall(word)]
    return tuple(dict.fromkeys(_stem(part) for part in parts if len(part) >= MIN_TERM))


@lru_cache(maxsize=100_000)
def _stem(piece: str) -> str:
    return piece if piece.isdigit() else str(_stemmer().stemWord(piece))


def terms(text: str) -> list[str]:
    """The terms of a text, in order, repeated as often as they occur."""
    words, _ = _patterns()
    return [term for word in words.findall(text) for term in word_terms(word)]


def path_terms(path: str) -> tuple[str, ...]:
    """The terms of a file's path (`src/nested_parser.py`: `src`, `nest`, `parser`, …)."""
    return tuple(dict.fromkeys(terms(path.replace("/", " ").replace(".", " "))))


def ranked_lines(
    lines_of: dict[str, list[str]],
    definitions_of: Callable[[str], Sequence[Definition]],
    weights: dict[str, float],
    code: frozenset[str],
    named_files: Iterable[str],
) -> list[tuple[float, str, int]]:
    """(score, path, line number) of each line of the located files (`lines_of`) holding a
    term of the request (`weights`: a term held by no file weighs nothing). A term weighs
    by how few of these lines hold it (`weights` rank files, but within a handful of files
    every file holds `if` and `no`, while `'false'` is on a few lines), times
    `PROSE_WEIGHT` unless a definition's name holds it (`code`). A line inside a definition
    (`definitions_of` a file) whose name holds a term of the request holds that term too:
    ini's `valueRaw === 'false'`, deep in `decode` past its chunk, answers "when decode
    reads enabled=false…". The terms of the files the request names (`named_files`) are
    left out: they chose the file and say nothing of its lines (`__main__.py` is no
    question about `main`)."""
    wanted = {term for term, value in weights.items() if value}
    wanted -= {term for path in named_files for term in path_terms(path)}
    held: dict[tuple[str, int], set[str]] = {}
    counts: Counter[str] = Counter()
    total = 0
    for path, lines in lines_of.items():
        total += len(lines)
        for number, line in enumerate(lines, 1):
            found = wanted.intersection(terms(line))
            if found:
                held[path, number] = found
                counts.update(found)
    weight = {
        term: math.log((total - count + 0.5) / (count + 0.5) + 1.0)
        * (1.0 if term in code else PROSE_WEIGHT)
        for term, count in counts.items()
    }
    within: dict[tuple[str, int], set[str]] = {}
    for path in {path for path, _ in held}:
        for definition in definitions_of(path):
            named = wanted.intersection(word_terms(definition.name))
            for number in range(definition.first_line, definition.last_line + 1) if named else ():
                within.setdefault((path, number), set()).update(named)
    return [
        (sum(weight.get(term, 0.0) for term in found | within.get(place, set())), *place)
        for place, found in held.items()
    ]

"""The terms a text is ranked by: its words and identifiers, split where code joins words
(`parseNestedArray` and `parse_nested_array` both give `pars`, `nest`, `array`), lower-cased
and stemmed (Snowball's English stemmer: identifiers are English in most code, and a stem
of another language's word simply matches nothing). No word is dropped by a list: a term
every file has weighs nothing in the ranking (`locate`'s inverse document frequency).
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex
    from snowballstemmer import stemmer as Stemmer

MIN_TERM = 2
"""A shorter piece (`a`, `x`) ranks nothing."""


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

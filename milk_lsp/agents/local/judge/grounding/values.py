"""The values an answer states about the code (a default, a limit, a size), and whether
anything the model saw backs them.

A small model that read a listing and then says "`parse` accepts strings of up to 256
characters" states a number the code never gave it. A value counts as stated when it is a
number of two digits or more in the prose of a clause that names code (a code span, a
name of code's shape or a path), not in code it shows, not a version, a place in a file
("line 42", `index.js:42`) or the number of a standard ("RFC 4122", "ISO 8601"). It is
backed when what the model saw (its tool results, the message with its attachments, the
conversation) has it: as written in any of the code's notations (`0x100`, `1_000`, `1e3`),
one off (a bound written `< 101` or `<= 100`), in another unit of time or size (48 hours
as 172800 seconds), or as a product it saw written out (`60 * 1000`), or is a value any reader knows
(the milliseconds of a day); or when the
files the answer is about (those defining the names it gives, those it names) write it: a
true value the model knew from before is not second-guessed, a made-up one is in neither.
Pure: the files are asked through a callable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from milk_lsp.agents.local.judge.grounding.asked import code_shaped
from milk_lsp.agents.local.judge.grounding.claims import (
    SENTENCE_END,
    blank,
    code_spans,
    split_fences,
)
from milk_lsp.agents.local.judge.grounding.hints import NO_SPACES, pattern_of
from milk_lsp.code.numbers import literal_values

_NOT_AFTER = r"(?<![\w.,$#/:\-\u2013@])"
_STATED = re.compile(
    rf"{_NOT_AFTER}(?P<grouped>\d{{1,3}}(?:[,\u00a0\u202f ]\d{{3}})+)(?![\w]|[.,]\d)|"
    rf"{_NOT_AFTER}(?P<comma>\d+,\d{{1,2}})(?![\w]|[.,]\d)|"
    rf"{_NOT_AFTER}\d+(?:\.\d+)?(?![\w]|[.,:]\d)"
)
"""A number in prose: `256`, `10,000`, `31 557 600 000`, `0.5`, `365,25` (not `v2`,
`sha256`, `1.2.3`, `a.js:12`)."""
_VERSION = re.compile(r"\bv?\d+(?:\.\d+){2,}\b|\b[vV]\d+(?:\.\d+)*\b")
_STANDARD = re.compile(r"\b[A-Z]{2,6}[ -]?$")
"""Right before a number, the letters of a standard or a code ("RFC 4122", "ISO 8601",
"PEP 8", "HTTP 404", "UTF-8")."""
_DIGITS = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")
"""Any run of digits, in the answer's own code (`'1500ms'` shows 1500)."""
_CLAUSE_END = re.compile(
    r"[;:,](?=\s)|[()]|\s[\u2014\u2013-]\s|[\u3001\uff0c\uff1b\uff1a\uff08\uff09]"
)
"""Where a clause ends inside a sentence: a value belongs to the code its own clause names
("… returns `uuid.String()`, the text form of 36 characters" states 36 of no code here)."""
_NAMES_CODE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_WORDS = re.compile(r"[A-Za-z_$][\w$]*")
_UNITS = (60.0, 24.0, 7.0, 1000.0, 1024.0, 3600.0, 86400.0)
"""Factors between units a value may be restated in: of time, of bytes."""
_CONSTANTS = frozenset(
    {60.0, 3600.0, 86400.0, 604800.0, 31536000.0, 31557600.0, 1000.0, 60000.0, 3600000.0}
    | {86400000.0, 604800000.0, 31536000000.0, 31557600000.0, 1024.0, 1048576.0, 1073741824.0}
)
"""Values any reader knows: seconds and milliseconds of a minute, an hour, a day, a week
and a year; a kibibyte, a mebibyte, a gibibyte."""
_PRODUCT = re.compile(r"(?<![\w.])(\d[\d_]*(?:\.\d+)?)\s*\*\s*(\d[\d_]*(?:\.\d+)?)(?![\w.])")
"""A product the code writes out (`60 * 1000`, `24 * 60 * 60`: its first two factors)."""


LINE_PLACES: Mapping[str, tuple[str, ...]] = {
    "en": ("line", "lines", "l."),
    "de": ("zeile", "zeilen"),
    "fr": ("ligne", "lignes"),
    "es": ("línea", "líneas", "linea", "lineas"),
    "pt": ("linha", "linhas"),
    "it": ("riga", "righe", "linea"),
    "nl": ("regel", "regels"),
    "pl": ("linia", "linii", "wiersz"),
    "ru": ("строка", "строке", "строки", "строк"),
    "uk": ("рядок", "рядку", "рядки"),
    "zh": ("第", "行"),
    "ja": ("行", "行目"),
    "ko": ("줄", "행"),
}
"""The words that make the number beside them a place in a file ("line 42", "Zeile 42",
"第42行", "42行目"), not a value stated about the code."""


_AFTER_NUMBER = tuple(stem for language in NO_SPACES for stem in LINE_PLACES[language])


def line_place_around(before: str, after: str) -> bool:
    """Whether a number between `before` and `after` is a line of a file: a word of
    `LINE_PLACES` right before it, or (Chinese, Japanese, Korean) right after it."""
    tail = before.rstrip(" \t:#~")[-8:]
    found = list(pattern_of(LINE_PLACES).finditer(tail))
    if found and found[-1].end() == len(tail):
        return True
    head = after.lstrip()[:2]
    return any(head.startswith(stem) for stem in _AFTER_NUMBER)


def stated_values(
    answer: str, of_workspace: Callable[[str], bool] | None = None
) -> tuple[str, ...]:
    """The numbers `answer` states about the code, as it writes them, once each: in a
    clause naming code (with `of_workspace`, a name or path of this workspace: "`u64::MAX`
    has 20 digits" is about Rust, not this crate); not those its own code shows
    (`parse_tzinfo("+05:30")` gives 5 hours 30 minutes: an example's values are its own)."""
    prose, blocks = split_fences(answer)
    spans = code_spans(prose)
    code = "\n".join([*blocks, *(content for _, _, content in spans)])
    shown = literal_values(code) | {float(digits) for digits in _DIGITS.findall(code)}
    outside = blank(prose, [(start, end) for start, end, _ in spans])
    outside = _VERSION.sub(lambda match: " " * len(match.group()), outside)
    ends = [found.end() for found in SENTENCE_END.finditer(prose)]
    ends += [found.end() for found in _CLAUSE_END.finditer(outside)] + [len(prose)]
    stated: dict[str, None] = {}
    start = 0
    for end in sorted(set(ends)):
        clause = outside[start:end]
        named = [content for span_start, _, content in spans if start <= span_start < end]
        named.extend(
            found.group() for found in _NAMES_CODE.finditer(clause) if _code_name(found.group())
        )
        if _about_code(named, of_workspace):
            for found in _STATED.finditer(clause):
                before, after = clause[: found.start()], clause[found.end() :]
                value = _value(found)
                if value < 10 or value in shown or _STANDARD.search(before[-8:]):
                    continue
                if line_place_around(before, after):
                    continue
                stated.setdefault(found.group(), None)
        start = end
    return tuple(stated)


def _about_code(named: list[str], of_workspace: Callable[[str], bool] | None) -> bool:
    """Whether the code a sentence names (span contents, code-shaped words) is code at all,
    or with `of_workspace`, a name or path of this workspace."""
    if of_workspace is None:
        return bool(named)
    return any(
        of_workspace(item) or any(of_workspace(word) for word in _WORDS.findall(item))
        for item in named
    )


def _code_name(word: str) -> bool:
    """A word of code's shape, not an abbreviation's (`e.g`, `i.e`)."""
    return code_shaped(word) and any(len(part) > 1 for part in word.split("."))


def unbacked_values(
    values: Iterable[str], seen: Iterable[str], written: Callable[[float], bool] | None = None
) -> tuple[str, ...]:
    """The `values` nothing in `seen` (the texts the model saw) backs (see the module), nor
    `written`: whether the files the answer is about write a number (a true value the model
    knew from before is not second-guessed)."""
    wanted = list(values)
    if not wanted:
        return ()
    seen = list(seen)
    numbers = _numbers_in(seen)
    products = _products_in(seen)
    missing: list[str] = []
    for value in wanted:
        forms = _forms(_value(_STATED.search(value)))
        if forms & numbers or forms & products or forms & _CONSTANTS:
            continue
        if written is not None and any(written(form) for form in forms if form >= 10):
            continue
        missing.append(value)
    return tuple(missing)


def _forms(value: float) -> set[float]:
    """`value`, one off, and in the other units it may be written in (of 10 or more: 48
    hours are 2 days, and a 2 is in everything)."""
    forms = {value - 1, value, value + 1}
    for unit in _UNITS:
        forms.update(form for form in (value * unit, value / unit) if form >= 10)
    return forms


def _products_in(texts: Iterable[str]) -> set[float]:
    products: set[float] = set()
    for text in texts:
        for found in _PRODUCT.finditer(text):
            a, b = (float(group.replace("_", "")) for group in found.groups())
            products.add(a * b)
    return products


def _numbers_in(texts: Iterable[str]) -> set[float]:
    numbers: set[float] = set()
    for text in texts:
        numbers.update(literal_values(text))
        numbers.update(_value(found) for found in _STATED.finditer(text))
    return numbers


def _value(found: re.Match[str] | None) -> float:
    """A number of prose (`10,000`, `31 557 600 000`, `365,25`, `0.5`) as a value."""
    if found is None:
        return 0.0
    text = found.group()
    if found.group("grouped"):
        return float(re.sub(r"\D", "", text))
    return float(text.replace(",", "."))

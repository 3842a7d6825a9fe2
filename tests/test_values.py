"""The values an answer states about the code, and what backs them (issue 29, item 3)."""

from __future__ import annotations

import pytest

from milk_lsp.agents.local.judge.grounding.values import stated_values, unbacked_values
from milk_lsp.code.numbers import literal_values, value_key

WORKSPACE = {"parse", "tz_isoformat", "index.js", "Value", "digits"}


def of_workspace(word: str) -> bool:
    return word.removesuffix("()") in WORKSPACE


@pytest.mark.parametrize(
    ("answer", "stated"),
    [
        ("`parse` accepts strings of up to 256 characters.", ("256",)),
        ("`parse` akzeptiert Zeichenketten bis 256 Zeichen.", ("256",)),
        ("`parse` は 256 文字までの文字列を受け付けます。", ("256",)),
        ("`parse` принимает строки длиной до 256 символов.", ("256",)),
        ("`tz_isoformat` raises `OverflowError` for differences over 48 hours.", ("48",)),
        ("In `index.js` a year is 31 557 600 000 ms.", ("31 557 600 000",)),
        ("`parse` handles 10,000 strings a second.", ("10,000",)),
    ],
)
def test_a_value_stated_about_workspace_code_is_found(answer: str, stated: tuple[str, ...]) -> None:
    assert stated_values(answer, of_workspace) == stated


@pytest.mark.parametrize(
    "answer",
    [
        "See line 42 of `index.js`.",
        "Siehe Zeile 120 in `index.js`.",
        "`parse` は `index.js` の 59 行目にあります。",
        "`parse` is in `index.js:120`.",
        "`digits` needs Rust 1.67 or later, like Python 3.11.2.",
        "`Value` returns the RFC 4122 text, ISO 8601 dates and UTF-8 bytes.",
        "`u64::MAX` has 20 digits, so the recursion is at most 20 deep.",
        "`Value` returns `uuid.String()`, the text form of 36 characters.",
        "`parse` called as `parse('1500ms')` gives 1500.",
        "A year has 365 days and 12 months.",
        "`parse` takes 2 or 3 arguments.",
    ],
)
def test_what_is_no_value_of_the_code_is_not_taken(answer: str) -> None:
    assert stated_values(answer, of_workspace) == ()


def test_a_value_is_backed_by_what_the_model_saw_in_any_notation_and_unit() -> None:
    seen = ["if (str.length > 100) return;", "const MAX = 0x100;", "var d = 24 * 60;"]
    assert unbacked_values(["100", "101", "256", "1440", "86 400 000"], seen) == ()
    assert unbacked_values(["1,000", "99"], ["LIMIT = 1_000", "if n >= 100:"]) == ()
    assert unbacked_values(["2", "48"], ["hours = 172800 // 3600"]) == ()
    assert unbacked_values(["256", "48", "32"], ["if (str.length > 100) return;"]) == (
        "256",
        "48",
        "32",
    )


def test_a_value_the_files_write_is_backed_when_the_model_did_not_see_it() -> None:
    written = {99.0}
    assert unbacked_values(["99"], [], lambda value: value in written) == ()
    assert unbacked_values(["48"], [], lambda value: value in written) == ("48",)


def test_literals_of_every_notation_are_one_value() -> None:
    assert literal_values("0x100 0o400 0b100000000 2.56e2 256 2_56") == {256.0}
    assert value_key(256.0) == "256" and value_key(0.5) == "0.5"

"""edit_file's matching: exact, then forgiving what small models get wrong, only when unique."""

from __future__ import annotations

import re

import pytest

from milk_lsp.agents.local.replace import EditDoesNotApply, Scope, replace_all, replace_once

SOURCE = """\
DEFAULT = '-'


def truncate(
    text: str,
    max_length: int = 0,
    separator: str = " ",
) -> str:
    return text[:max_length]


def slug(
    text: str,
    max_length: int = 0,
) -> str:
    parser = make(description='Slug string')
    return truncate(text, max_length)
"""


def test_an_exact_match_says_its_lines() -> None:
    done = replace_once(SOURCE, "DEFAULT = '-'", "DEFAULT = '_'", "a.py")
    assert done.text.startswith("DEFAULT = '_'\n")
    assert (done.first_line, done.last_line, done.note) == (1, 1, "")


def test_quotes_are_forgiven_and_the_new_text_is_kept_as_written() -> None:
    done = replace_once(
        SOURCE, 'make(description="Slug string")', 'make(description="Make a slug")', "a.py"
    )
    assert '    parser = make(description="Make a slug")\n' in done.text
    assert done.note == "taking ' and \" as the same"
    assert done.first_line == 16


def test_indentation_spaces_and_a_trailing_comma_are_forgiven_line_by_line() -> None:
    scopes = [Scope("truncate", 4, 9)]
    done = replace_once(SOURCE, "max_length:int=0", "max_length: int = 100", "a.py", scopes)
    lines = done.text.splitlines()
    assert lines[5] == "    max_length: int = 100,"  # indented as the file, its comma kept
    assert lines[13] == "    max_length: int = 0,"  # slug's is left alone
    assert (done.first_line, done.last_line) == (6, 6)
    assert "ignoring differences of indentation" in done.note
    assert "the one inside truncate (lines 4-9)" in done.note
    assert "also occurs on line(s) 14, left unchanged" in done.note


def test_several_lines_keep_each_lines_own_indentation() -> None:
    old = "def slug(\ntext: str,\nmax_length: int = 0,\n) -> str:"
    new = "def slug(\ntext: str,\nmax_length: int = 5,\n) -> str:"
    done = replace_once(SOURCE, old, new, "a.py")
    assert "def slug(\n    text: str,\n    max_length: int = 5,\n) -> str:\n" in done.text
    assert (done.first_line, done.last_line) == (12, 15)


def test_blank_lines_between_matched_lines_are_forgiven() -> None:
    old = "    return text[:max_length]\ndef slug("
    done = replace_once(SOURCE, old, "    return text\n\n\ndef slug(", "a.py")
    assert "    return text\n\n\ndef slug(\n" in done.text


@pytest.mark.parametrize(
    ("old_text", "message"),
    [
        ("max_length: int = 0", "occurs 2 times in a.py (on lines 6, 14)"),
        ("max_length:int=0", "occurs 2 times in a.py (on lines 6, 14)"),  # forgiven, still two
        ("max_length: float = 0", "occurs 0 times in a.py"),  # a word differs: not forgiven
        ("return text[:max_len]", "occurs 0 times in a.py"),
    ],
)
def test_ambiguous_or_absent_matches_still_fail(old_text: str, message: str) -> None:
    with pytest.raises(EditDoesNotApply, match=message.replace("(", r"\(").replace(")", r"\)")):
        replace_once(SOURCE, old_text, "x", "a.py")


def test_an_absent_match_shows_the_closest_block_with_line_numbers() -> None:
    with pytest.raises(EditDoesNotApply) as failed:
        replace_once(SOURCE, "def truncate(\n    text: bytes,", "x", "a.py")
    assert "The closest text in the file is (lines" in str(failed.value)
    assert " 4 | def truncate(" in str(failed.value)


def test_a_scope_the_model_gave_must_hold_the_match() -> None:
    with pytest.raises(EditDoesNotApply, match=re.escape("occurs 0 times inside slug in a.py")):
        replace_once(
            SOURCE, "DEFAULT = '-'", "x", "a.py", [Scope("slug", 12, 17)], scope_given=True
        )
    done = replace_once(
        SOURCE,
        "max_length: int = 0",
        "max_length: int = 9",
        "a.py",
        [Scope("slug", 12, 17)],
        scope_given=True,
    )
    assert done.text.splitlines()[13] == "    max_length: int = 9,"
    assert done.first_line == 14


def test_a_scope_holding_two_matches_does_not_decide() -> None:
    with pytest.raises(EditDoesNotApply, match="occurs 2 times"):
        replace_once(SOURCE, "max_length: int = 0", "x", "a.py", [Scope("all", 1, 17)])


def test_replace_all_renames_every_occurrence_and_says_where() -> None:
    done = replace_all(SOURCE, "max_length", "limit", "a.py")
    assert "max_length" not in done.text and done.text.count("limit") == 4
    assert done.note == "all 4 occurrences, on lines 6, 9, 14, 17"
    with pytest.raises(EditDoesNotApply, match="occurs 0 times"):
        replace_all(SOURCE, "absent_name", "x", "a.py")


def test_a_crlf_file_keeps_its_line_endings() -> None:
    crlf = "a = 1\r\nb = 2\r\n"
    done = replace_once(crlf, "a = 1\nb = 2", "a = 3\nb = 4", "c.py")
    assert done.text == "a = 3\r\nb = 4\r\n"


RENAME_SOURCE = """\
QUOTE = re.compile(r'[\\']+')
NUMBERS = re.compile(r'(?<=\\d),(?=\\d)')
BIG_NUMBERS = re.compile(r'(?<=\\d),(?=\\d)')
text = NUMBERS.sub('', text)
"""


def test_only_the_changed_part_goes_in_when_the_text_around_it_was_miscopied() -> None:
    old = "NUMBERS = re.compile(r'(?<=\\d),(?\\\\d)')"  # the regex miscopied after `(?`
    done = replace_once(RENAME_SOURCE, old, old.replace("NUMBERS", "COMMAS"), "a.py")
    assert done.text == RENAME_SOURCE.replace("\nNUMBERS =", "\nCOMMAS =")
    assert (done.first_line, done.last_line) == (2, 2)
    assert done.note.startswith("only the part that differs, `NUMBERS` → `COMMAS`")


@pytest.mark.parametrize(
    ("old_text", "new_text"),
    [
        # two changes: not one part that differs
        ("NUMBERS = re.compile(r'(?<=\\d),(\\\\d)')", "COMMAS = re.compile(r'(?<=\\d),(\\\\x)')"),
        # the text around the change matches too little of old_text
        ("NUMBERS = compile_it(flags=[1, 2, 3, 4])", "COMMAS = compile_it(flags=[1, 2, 3, 4])"),
        # the change is in the file at two places that match equally well
        ("= re.compile(r'(?<=\\d),(?=\\d)') # x", "= re.compile(r'(?<=\\d),(?=\\w)') # x"),
    ],
)
def test_a_miscopied_edit_is_refused_unless_one_place_clearly_matches(
    old_text: str, new_text: str
) -> None:
    with pytest.raises(EditDoesNotApply, match="occurs 0 times"):
        replace_once(RENAME_SOURCE, old_text, new_text, "a.py")


def test_replace_all_of_a_name_changes_whole_words_only() -> None:
    done = replace_all(RENAME_SOURCE, "NUMBERS", "COMMAS", "a.py")
    assert "BIG_NUMBERS" in done.text and done.text.count("COMMAS") == 2


def test_replace_all_with_one_name_changed_renames_that_name_everywhere() -> None:
    """The 1.5B model's second step of a rename: its first edit's line again (miscopied, and
    now renamed already) with replace_all: the name it changes is renamed wherever it is."""
    renamed_once = RENAME_SOURCE.replace("\nNUMBERS =", "\nCOMMAS =")
    old = "NUMBERS = re.compile(r'(?<=\\d),(?\\\\d)')"
    done = replace_all(renamed_once, old, old.replace("NUMBERS", "COMMAS"), "a.py")
    assert done.text == renamed_once.replace("NUMBERS.sub", "COMMAS.sub")
    assert "BIG_NUMBERS" in done.text
    assert done.note == "the name NUMBERS everywhere, as replace_all asks"
    with pytest.raises(EditDoesNotApply, match="occurs 0 times"):  # two changes: no rename
        replace_all(renamed_once, "NUMBERS = x(1)", "COMMAS = x(2)", "a.py")

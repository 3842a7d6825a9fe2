"""Tests for the nonce-tag interceptor (milk-original §9 #39, #41, #42, adapted to PROTOCOL.md)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milk_lsp.prompts.tags import MAX_TAG_BODY_CHARS, TagInterceptor, strip_tags

NONCE = "n1"
NEED_OPEN, NEED_CLOSE = "<milk:need:n1>", "</milk:need:n1>"
PERCEPT_OPEN, PERCEPT_CLOSE = "<milk:percept:n1>", "</milk:percept:n1>"


def need(body: str) -> str:
    return f"{NEED_OPEN}{body}{NEED_CLOSE}"


def percept(body: str) -> str:
    return f"{PERCEPT_OPEN}{body}{PERCEPT_CLOSE}"


def run(chunks: list[str], nonce: str = NONCE, **kwargs: int) -> tuple[str, TagInterceptor]:
    interceptor = TagInterceptor(nonce, **kwargs)
    shown = "".join(interceptor.feed(chunk) for chunk in chunks)
    return shown + interceptor.flush(), interceptor


def split_at(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# --- #39 interception --------------------------------------------------------------------


def test_need_tag_is_removed_exactly_and_recorded():
    shown, tags = run([f"before {need('implement auth')} after"])
    assert shown == "before  after"
    assert tags.needs == ["implement auth"]
    assert tags.percepts == []


def test_other_nonce_is_left_in_the_text_and_not_acted_on():
    text = "before <milk:need:zz9>implement auth</milk:need:zz9> after"
    shown, tags = run([text])
    assert shown == text
    assert tags.needs == []


def test_tag_split_across_three_writes():
    shown, tags = run(["hello <milk:ne", "ed:n1>split goal</milk:n", "eed:n1> end"])
    assert shown == "hello  end"
    assert tags.needs == ["split goal"]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"see `{need('x')}` here", id="inline-span"),
        pytest.param(f"see ``a {need('x')} ` b`` here", id="double-backtick-span"),
        pytest.param(f"```\n{need('x')}\n```\n", id="fence"),
        pytest.param(f"```python\ncode\n\n{percept('x')}\n```", id="fence-with-info"),
        pytest.param(
            f"  ~\n    ````\n{need('x')}\n```\nstill in\n    ````", id="indented-long-fence"
        ),
        pytest.param(f"a ```{need('x')}``` b", id="three-backticks-inline"),
    ],
)
def test_tags_in_code_are_shown_not_acted_on(text):
    shown, tags = run([text])
    assert shown == text
    assert tags.needs == tags.percepts == []


def test_partial_open_prefix_at_end_is_emitted_on_flush():
    interceptor = TagInterceptor(NONCE)
    assert interceptor.feed("hello <milk:need:") == "hello "
    assert interceptor.flush() == "<milk:need:"
    assert interceptor.needs == []


def test_unclosed_tag_at_end_is_shown_not_recorded():
    # Deviation from the original (which dropped it): see the module docstring.
    text = f"hello {NEED_OPEN}half a goal"
    interceptor = TagInterceptor(NONCE)
    assert interceptor.feed(text) == "hello "
    assert interceptor.flush() == NEED_OPEN + "half a goal"
    assert interceptor.needs == []


def test_legacy_percept_passes_through():
    text = "a <milk:percept>fact</milk:percept> b"
    shown, tags = run([text])
    assert shown == text
    assert tags.percepts == []


def test_two_percepts_in_one_write_in_order():
    shown, tags = run([f"{percept('first')} mid {percept(' second ')}!"])
    assert shown == " mid !"
    assert tags.percepts == ["first", "second"]


def test_several_needs_in_order_last_is_last():
    _, tags = run([need("one") + need("two") + percept("p") + need("three")])
    assert tags.needs == ["one", "two", "three"]
    assert tags.percepts == ["p"]


def test_empty_body_is_removed_but_not_recorded():
    shown, tags = run([f"a{need('   ')}b{percept('')}c"])
    assert shown == "abc"
    assert tags.needs == tags.percepts == []


def test_body_is_trimmed_and_keeps_inner_text():
    shown, tags = run([f"x{need(chr(10) + '  fix the <b>parser</b>  ' + chr(10))}y"])
    assert shown == "xy"
    assert tags.needs == ["fix the <b>parser</b>"]


def test_tag_inside_another_tags_body_is_part_of_that_body():
    _, tags = run([need(f"goal {percept('fact')} more")])
    assert tags.needs == [f"goal {percept('fact')} more"]
    assert tags.percepts == []


# --- #41 strip helpers, adapted -----------------------------------------------------------


def test_strip_keeps_other_nonce_tags():
    text = "a <milk:percept:old99>stale</milk:percept:old99> b"
    assert strip_tags(text, NONCE) == text


def test_strip_mismatched_close_is_not_a_tag():
    # The original fell back to any close tag; here no exact close means no tag.
    text = f"a {NEED_OPEN}goal</milk:need:zz9> b"
    assert strip_tags(text, NONCE) == text


def test_strip_multiple_tags():
    text = f"{need('a')}x{percept('b')}y{need('c')}z"
    assert strip_tags(text, NONCE) == "xyz"


def test_strip_keeps_code_spans():
    text = f"run `{need('x')}` then\n```\n{percept('y')}\n```\nok {need('z')}"
    assert strip_tags(text, NONCE) == text[: -len(need("z"))]


def test_backtick_runs_close_only_on_equal_length():
    # The original's stripper closed `hello``world` at byte 8; the stream (and we) match
    # runs by length, so the span ends at the last backtick and the tag after it counts.
    assert strip_tags(f"`hello``world` {need('x')}", NONCE) == "`hello``world` "
    inside = f"`hello``world {need('x')}`"
    assert strip_tags(inside, NONCE) == inside


# --- #42 need from Claude output ----------------------------------------------------------


def test_need_from_claude_output_is_recorded_and_not_shown():
    nonce = "k3x9q2"
    text = f"Sure.\n<milk:need:{nonce}>implement JWT auth</milk:need:{nonce}>\nLet me look."
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    interceptor = TagInterceptor(nonce)
    shown = "".join(interceptor.feed(c) for c in chunks) + interceptor.flush()
    assert "milk:need" not in shown
    assert "milk:need" not in strip_tags(text, nonce)
    assert shown == "Sure.\n\nLet me look."
    assert interceptor.needs == ["implement JWT auth"]


# --- P15: a stray backtick must not switch interception off -------------------------------


def test_stray_backtick_is_reset_at_newline():
    shown, tags = run(["it's a ` stray\n", f"next line {need('goal')} end"])
    assert shown == "it's a ` stray\nnext line  end"
    assert tags.needs == ["goal"]


def test_stray_backtick_covers_the_rest_of_its_line():
    text = f"a ` b {need('goal')}"
    shown, tags = run([text])
    assert shown == text
    assert tags.needs == []


def test_fence_is_not_reset_at_newline_and_ends_at_its_close():
    text = f"```\n`\n{need('no')}\n```\nafter {need('yes')}"
    shown, tags = run([text])
    assert shown == f"```\n`\n{need('no')}\n```\nafter "
    assert tags.needs == ["yes"]


def test_fence_close_must_be_at_least_as_long_and_start_a_line():
    text = f"````\nx ```` \n```\n{need('no')}\n````\n{need('yes')}"
    shown, tags = run([text])
    assert tags.needs == ["yes"]
    assert shown == text[: -len(need("yes"))]


def test_triple_backticks_closed_on_the_same_line_are_inline_code_not_a_fence():
    text = f"```x {need('no')}``` then {need('yes')}\n{need('next')}"
    shown, tags = run([text])
    assert shown == f"```x {need('no')}``` then \n"
    assert tags.needs == ["yes", "next"]


def test_removed_tag_does_not_count_as_line_text_for_a_fence():
    text = f"{need('g')}```\n{need('in fence')}\n```"
    shown, tags = run([text])
    assert shown == f"```\n{need('in fence')}\n```"
    assert tags.needs == ["g"]


# --- memory guard ---------------------------------------------------------------------------


def test_body_at_the_limit_is_a_tag_one_more_is_text():
    at_limit = "x" * 10
    shown, tags = run([f"a{need(at_limit)}b"], max_body_chars=10)
    assert (shown, tags.needs) == ("ab", [at_limit])
    too_long = "x" * 11
    text = f"a{need(too_long)}b"
    shown, tags = run([text], max_body_chars=10)
    assert (shown, tags.needs) == (text, [])


def test_default_limit_flushes_a_long_body_as_text_while_streaming():
    interceptor = TagInterceptor(NONCE)
    assert interceptor.feed("a" + NEED_OPEN) == "a"
    shown = interceptor.feed("y" * (MAX_TAG_BODY_CHARS + len(NEED_CLOSE)))
    assert shown == NEED_OPEN + "y" * (MAX_TAG_BODY_CHARS + len(NEED_CLOSE))
    assert interceptor.feed(NEED_CLOSE) == NEED_CLOSE
    assert interceptor.flush() == ""
    assert interceptor.needs == []


def test_tags_inside_an_abandoned_body_are_still_found():
    text = f"{NEED_OPEN}stray {percept('fact')} and then a long tail {'z' * 30}"
    shown, tags = run([text], max_body_chars=20)
    assert shown == f"{NEED_OPEN}stray  and then a long tail {'z' * 30}"
    assert tags.percepts == ["fact"]
    shown, tags = run([text[:-31]])  # unclosed at end of stream: same rescanning
    assert shown == f"{NEED_OPEN}stray  and then a long tail"
    assert tags.percepts == ["fact"]


def test_many_stray_open_tags_stay_linear_enough():
    text = (NEED_OPEN + "w" * 50) * 2000
    shown, tags = run([text], max_body_chars=100)
    assert shown == text
    assert tags.needs == []


# --- streaming delay ----------------------------------------------------------------------


def test_text_without_angle_bracket_is_returned_immediately():
    interceptor = TagInterceptor(NONCE)
    for chunk in ["Hello", ", wörld ", "`code`", "\n```\n", "🙂 done"]:
        assert interceptor.feed(chunk) == chunk
    assert interceptor.flush() == ""


def test_only_a_possible_tag_start_is_held_back():
    interceptor = TagInterceptor(NONCE)
    assert interceptor.feed("a <b> c <") == "a <b> c "
    assert interceptor.feed("milk:percept:n") == ""
    assert interceptor.feed("2>") == "<milk:percept:n2>"
    assert interceptor.feed("x <milk:need:n1") == "x "
    assert interceptor.feed(">") == ""
    assert interceptor.feed("goal</milk:need:n1>") == ""
    assert interceptor.feed(" after") == " after"
    assert interceptor.needs == ["goal"]


def test_angle_bracket_in_code_is_not_held():
    interceptor = TagInterceptor(NONCE)
    assert interceptor.feed("`a <milk:ne") == "`a <milk:ne"


# --- nonce handling ----------------------------------------------------------------------


def test_empty_nonce_acts_on_nothing():
    text = "a <milk:need:>x</milk:need:> b <milk:need:n1>y</milk:need:n1>"
    shown, tags = run([text], nonce="")
    assert shown == text
    assert tags.needs == []


@pytest.mark.parametrize("nonce", ["a>b", "a<b", "a b", "a`b", "a\nb"])
def test_nonce_with_tag_syntax_is_refused(nonce):
    with pytest.raises(ValueError, match="nonce"):
        TagInterceptor(nonce)


def test_unicode_text_and_bodies():
    text = f"Grüße 🙂 {need('Überprüfe die Ä-Logik 🚀')}日本語 {percept('ç')}∎"
    shown, tags = run([text])
    assert shown == "Grüße 🙂 日本語 ∎"
    assert tags.needs == ["Überprüfe die Ä-Logik 🚀"]
    assert tags.percepts == ["ç"]


def test_flush_resets_for_a_new_stream():
    interceptor = TagInterceptor(NONCE)
    assert interceptor.feed("`open") == "`open"
    interceptor.flush()
    assert interceptor.feed(need("g")) == ""
    assert interceptor.needs == ["g"]


# --- splits at every offset and random multi-way splits ----------------------------------

CORPUS = [
    f"before {need('implement auth')} after",
    f"hello {need('split goal')} end",
    f"{percept('a')}{percept('b')}{need('c')}",
    "a <milk:need:zz9>other nonce</milk:need:zz9> b <milk:percept>legacy</milk:percept>",
    f"x <<milk:need:n1>dup</milk:need:n1>> y <milk:need:n1<{NEED_CLOSE}",
    f"see `{need('x')}` and\n```py\n{percept('y')}\n```\n{need('z')} ``a`b`` {need('w')}",
    f"stray ` tick\n{need('after reset')}\n `hello``world` {percept('p')}",
    f"unclosed at end {NEED_OPEN}some body <b>",
    f"mismatched {NEED_OPEN}goal</milk:need:zz9> tail",
    f"Grüße 🙂 {need('Ä 🚀')} 日本語 <milk:pe",
    f"{NEED_OPEN}{PERCEPT_OPEN}inner{PERCEPT_CLOSE}{NEED_CLOSE}",
    f"\n  ```\n{need('no')}\n  ```\n{need('yes')}\r\n`",
    f"```x {need('no')}``` {need('yes')}\n````\n{percept('no')}\n````",
    "",
    "<",
    "plain text only",
]


@pytest.mark.parametrize("text", CORPUS)
def test_every_two_way_split_matches_whole_text(text):
    expected = strip_tags(text, NONCE)
    _, whole = run([text])
    for cut in range(len(text) + 1):
        shown, tags = run([text[:cut], text[cut:]])
        assert shown == expected, cut
        assert (tags.needs, tags.percepts) == (whole.needs, whole.percepts), cut


@pytest.mark.parametrize("text", CORPUS)
def test_one_character_at_a_time_matches_whole_text(text):
    shown, tags = run(list(text))
    _, whole = run([text])
    assert shown == strip_tags(text, NONCE)
    assert (tags.needs, tags.percepts) == (whole.needs, whole.percepts)


def test_every_two_way_split_with_an_overflowing_body():
    text = f"a{need('x' * 8)}b{NEED_OPEN}{'y' * 12}{NEED_CLOSE}{percept('p')}c"
    expected, whole = run([text], max_body_chars=10)
    assert expected == f"ab{NEED_OPEN}{'y' * 12}{NEED_CLOSE}c"
    for cut in range(len(text) + 1):
        shown, tags = run([text[:cut], text[cut:]], max_body_chars=10)
        assert shown == expected, cut
        assert (tags.needs, tags.percepts) == (whole.needs, whole.percepts), cut


FRAGMENTS = st.sampled_from(
    [
        NEED_OPEN,
        NEED_CLOSE,
        PERCEPT_OPEN,
        PERCEPT_CLOSE,
        "<milk:need:zz9>",
        "</milk:need:zz9>",
        "<milk:percept>",
        "<milk:need:",
        "<milk:",
        "<",
        ">",
        "`",
        "``",
        "```",
        "\n",
        " ",
        "\t",
        "goal",
        "é",
        "🙂",
        "n1",
    ]
)
TEXTS = st.lists(FRAGMENTS, max_size=40).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(st.sampled_from(CORPUS), TEXTS),
    data=st.data(),
    max_body=st.sampled_from([4, 12, MAX_TAG_BODY_CHARS]),
)
def test_random_multi_way_splits_match_whole_text(text, data, max_body):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    expected, whole = run([text], max_body_chars=max_body)
    shown, tags = run(split_at(text, cuts), max_body_chars=max_body)
    assert shown == expected
    assert (tags.needs, tags.percepts) == (whole.needs, whole.percepts)


def reference_strip(text: str, max_body: int) -> tuple[str, list[str], list[str]]:
    """An independent definition for text without backticks: leftmost tag, shortest body."""
    pattern = re.compile(
        rf"<milk:(need|percept):{NONCE}>(.{{0,{max_body}}}?)</milk:\1:{NONCE}>", re.DOTALL
    )
    found: dict[str, list[str]] = {"need": [], "percept": []}
    for match in pattern.finditer(text):
        if match.group(2).strip():
            found[match.group(1)].append(match.group(2).strip())
    return pattern.sub("", text), found["need"], found["percept"]


@settings(max_examples=150, deadline=None)
@given(
    text=TEXTS.filter(lambda t: "`" not in t),
    data=st.data(),
    max_body=st.sampled_from([4, 12, MAX_TAG_BODY_CHARS]),
)
def test_streaming_matches_a_regex_reference_without_code(text, data, max_body):
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    shown, tags = run(split_at(text, cuts), max_body_chars=max_body)
    assert (shown, tags.needs, tags.percepts) == reference_strip(text, max_body)

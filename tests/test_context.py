"""Context hand-off (ADR 0004 with its updates): milk-original §9 cases 16-32 in four modes."""

from __future__ import annotations

import dataclasses
import re

import pytest

from milk_lsp.prompts import context
from milk_lsp.prompts.context import (
    ContextInputs,
    ContextMode,
    ContextPlan,
    block_hash,
    build_dynamic,
    build_static,
    choose_mode,
    combine_context_file,
    plan_escalation,
    wrap_turn_context,
)
from milk_lsp.sessions.model import generate_nonce

NONCE = "n0nce1"
BRIEF = "stuck on nil pointer in auth.go"
NEED = "make the login flow work"
LOCAL_SUMMARY = "User: run tests\nAssistant (local): 3 failures in parser_test.go\n"
CLAUDE_SUMMARY = "User: hard bug\nAssistant (claude): fixed the race in pool.go\n"
PERCEPTS = ("the user prefers tabs", "CI runs on Python 3.11")

IDENTITY = "[Milk agent context]"
NEED_INSTRUCTION = "[Milk current-need tracking]"
MEMORY_INSTRUCTION = "[Milk shared memory]"
FACTS = "[Remembered facts]"
BRIEF_HEADER = "[Escalation brief from the local agent]"
NEED_HEADER = "[Current user goal]"
STALE_HEADER = "[Last known user goal — may already be fulfilled; verify before acting]"
PRIOR_HEADER = "[Prior escalation session summary]"
LOCAL_HEADER = "[Recent local agent activity]"

EVERYTHING = ContextInputs(
    nonce=NONCE,
    percepts=PERCEPTS,
    current_need=NEED,
    need_records_ago=1,
    escalation_brief=BRIEF,
    last_local_summary=LOCAL_SUMMARY,
    last_claude_summary=CLAUDE_SUMMARY,
)

# One inputs value per situation; every one carries a brief, a need and both summaries.
FIRST = EVERYTHING
RESUME_FOLLOW_UP = dataclasses.replace(EVERYTHING, claude_session_id="sid-1")
RESUME_WAITING = dataclasses.replace(RESUME_FOLLOW_UP, waiting_on_claude=True)
RESUME_WAITING_AFTER_LOCAL = dataclasses.replace(RESUME_WAITING, local_turns_since_claude=2)
RESUME_NEED_CHANGED = dataclasses.replace(RESUME_FOLLOW_UP, need_changed_since_claude=True)
RETURNING = dataclasses.replace(RESUME_FOLLOW_UP, local_turns_since_claude=2)
FRESH_STALE_NEED = dataclasses.replace(RETURNING, need_changed_since_claude=True)
FRESH_TURN_GAP = dataclasses.replace(RETURNING, local_turns_since_claude=8)
FRESH_REJECTED = dataclasses.replace(RESUME_FOLLOW_UP, resume_rejected=True)
REINJECT = {"claude_turns_since_injection": 20}


def with_(inputs: ContextInputs, **changes: object) -> ContextInputs:
    return dataclasses.replace(inputs, **changes)  # type: ignore[arg-type]


def block_of(plan: ContextPlan) -> str:
    """The `<milk-context>` block content of a plan ("" when none)."""
    prefix = plan.user_message_prefix
    if not prefix:
        return ""
    head = f"<milk-context>\n{context.TURN_CONTEXT_NOTICE}\n"
    tail = "\n</milk-context>\n\n"
    assert prefix.startswith(head)
    assert prefix.endswith(tail)
    return prefix[len(head) : -len(tail)]


# --- modes (#25) -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "mode"),
    [
        pytest.param(ContextInputs(nonce=NONCE), ContextMode.FIRST, id="empty-session"),
        pytest.param(with_(FIRST, resume_rejected=True), ContextMode.FIRST, id="no-id-rejected"),
        pytest.param(with_(FIRST, local_turns_since_claude=3), ContextMode.FIRST, id="no-id"),
        pytest.param(FRESH_REJECTED, ContextMode.FRESH, id="id-rejected"),
        pytest.param(
            with_(RESUME_WAITING, resume_rejected=True), ContextMode.FRESH, id="rejected-beats-wait"
        ),
        pytest.param(RESUME_WAITING, ContextMode.RESUME, id="waiting"),
        pytest.param(
            with_(RESUME_WAITING, local_turns_since_claude=12, need_changed_since_claude=True),
            ContextMode.RESUME,
            id="waiting-never-downgraded",
        ),
        pytest.param(RESUME_FOLLOW_UP, ContextMode.RESUME, id="no-local-turn-since"),
        pytest.param(RESUME_NEED_CHANGED, ContextMode.RESUME, id="no-local-turn-need-changed"),
        pytest.param(RETURNING, ContextMode.RETURNING, id="two-local-turns-same-need"),
        pytest.param(
            with_(RETURNING, local_turns_since_claude=7), ContextMode.RETURNING, id="seven-turns"
        ),
        pytest.param(FRESH_TURN_GAP, ContextMode.FRESH, id="eight-local-turns"),
        pytest.param(FRESH_STALE_NEED, ContextMode.FRESH, id="need-changed"),
    ],
)
def test_choose_mode(inputs: ContextInputs, mode: ContextMode) -> None:
    assert choose_mode(inputs) is mode
    assert plan_escalation(inputs, by_agent=False).mode is mode


# --- static block (#16, #20, #23, #26) -------------------------------------------------------


def test_first_escalation_of_an_empty_session() -> None:
    """#16: the file holds the identity and the nonce-bearing instructions, nothing else."""
    plan = plan_escalation(ContextInputs(nonce=NONCE), by_agent=False)
    assert plan.mode is ContextMode.FIRST
    assert plan.context_file == build_static(NONCE, ())
    for text in (IDENTITY, f"milk:need:{NONCE}", f"milk:percept:{NONCE}", "run_in_background"):
        assert text in plan.context_file
    assert FACTS not in plan.context_file
    assert (plan.user_message_prefix, plan.block_hash) == ("", "")


@pytest.mark.parametrize(
    ("percepts", "facts"),
    [
        pytest.param((), None, id="none"),
        pytest.param(("", "  \n"), None, id="blank-only"),
        pytest.param(PERCEPTS, "- the user prefers tabs\n- CI runs on Python 3.11", id="two"),
        pytest.param(("a\nmulti-line  fact", " "), "- a multi-line fact", id="one-line-each"),
    ],
)
def test_remembered_facts(percepts: tuple[str, ...], facts: str | None) -> None:
    """#20: `[Remembered facts]` with `- ` lines closes the static block when there are any."""
    static = build_static(NONCE, percepts)
    if facts is None:
        assert FACTS not in static
    else:
        assert static.endswith(f"\n\n{FACTS}\n{facts}\n")


def test_static_block_layout() -> None:
    static = build_static(NONCE, PERCEPTS)
    headers = [line for line in static.splitlines() if line.startswith("[")]
    assert headers == [IDENTITY, NEED_INSTRUCTION, MEMORY_INSTRUCTION, FACTS]
    assert static.startswith(f"{IDENTITY}\n")
    assert f"<milk:need:{NONCE}>goal</milk:need:{NONCE}>" in static
    assert f"<milk:percept:{NONCE}>fact</milk:percept:{NONCE}>" in static
    assert "memory files" in static


@pytest.mark.parametrize(
    "inputs",
    [FIRST, RESUME_FOLLOW_UP, RESUME_WAITING, RETURNING, FRESH_STALE_NEED, FRESH_REJECTED],
    ids=["first", "resume", "waiting", "returning", "fresh", "rejected"],
)
@pytest.mark.parametrize("by_agent", [True, False], ids=["agent", "user"])
def test_file_always_starts_with_the_full_static_block(
    inputs: ContextInputs, by_agent: bool
) -> None:
    """#23 (ADR 0004 update, Q7): every mode's file carries identity and instructions in full."""
    plan = plan_escalation(inputs, by_agent=by_agent)
    assert plan.context_file.startswith(build_static(NONCE, PERCEPTS))


def test_static_block_is_byte_identical() -> None:
    """#26: same nonce and percepts, same bytes; a new nonce or percept changes it."""
    first = build_static(NONCE, list(PERCEPTS))
    assert build_static(NONCE, PERCEPTS) == first
    assert plan_escalation(RETURNING, by_agent=True).context_file == first
    assert build_static("other1", PERCEPTS) != first
    assert build_static(NONCE, (*PERCEPTS, "new fact")) != first


def test_nonce() -> None:
    """#26, P16: 6 characters of [a-z0-9], from `secrets`."""
    nonces = {generate_nonce() for _ in range(50)}
    assert all(re.fullmatch(r"[a-z0-9]{6}", n) for n in nonces)
    assert len(nonces) > 45


def test_an_unset_nonce_is_refused() -> None:
    with pytest.raises(ValueError, match="nonce"):
        build_static("", ())
    with pytest.raises(ValueError, match="nonce"):
        plan_escalation(ContextInputs(nonce=""), by_agent=False)


# --- dynamic block (#17-#22) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("need", "records_ago", "header"),
    [
        pytest.param(NEED, None, NEED_HEADER, id="position-unknown"),
        pytest.param(NEED, 0, NEED_HEADER, id="set-this-turn"),
        pytest.param(NEED, 2, NEED_HEADER, id="two-ago"),
        pytest.param(NEED, 3, NEED_HEADER, id="three-ago"),
        pytest.param(NEED, 4, STALE_HEADER, id="four-ago-stale"),
        pytest.param(NEED, 5, STALE_HEADER, id="five-ago-stale"),
        pytest.param("", 1, None, id="no-need"),
        pytest.param("  ", 1, None, id="blank-need"),
    ],
)
def test_need_header(need: str, records_ago: int | None, header: str | None) -> None:
    """#17: the goal block, stale from 4 records on, with the need text kept."""
    inputs = ContextInputs(nonce=NONCE, current_need=need, need_records_ago=records_ago)
    dynamic = build_dynamic(inputs, ContextMode.FIRST, include_brief=False)
    if header is None:
        assert dynamic == ""
    else:
        assert dynamic == f"{header}\n{need}\n"


@pytest.mark.parametrize(
    ("inputs", "in_file"),
    [
        pytest.param(FIRST, True, id="first"),
        pytest.param(FRESH_STALE_NEED, True, id="fresh"),
        pytest.param(with_(RETURNING, local_turns_since_claude=1), False, id="returning-q5"),
        pytest.param(RESUME_FOLLOW_UP, False, id="resume-q9"),
        pytest.param(RESUME_WAITING, False, id="resume-waiting"),
    ],
)
def test_brief_goes_out_whenever_the_agent_escalated(inputs: ContextInputs, in_file: bool) -> None:
    """#18 with Q5/Q9 fixed: the local agent's reason reaches Claude in every mode."""
    by_agent = plan_escalation(inputs, by_agent=True)
    by_user = plan_escalation(inputs, by_agent=False)
    where = by_agent.context_file if in_file else block_of(by_agent)
    assert f"{BRIEF_HEADER}\n{BRIEF}" in where
    assert by_agent.delivered_brief
    assert BRIEF not in by_user.context_file + by_user.user_message_prefix
    assert not by_user.delivered_brief


def test_blank_brief_is_not_delivered() -> None:
    plan = plan_escalation(with_(FIRST, escalation_brief=" \n"), by_agent=True)
    assert BRIEF_HEADER not in plan.context_file
    assert not plan.delivered_brief


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        pytest.param(LOCAL_SUMMARY, f"{LOCAL_HEADER}\n{LOCAL_SUMMARY}", id="summary"),
        pytest.param("", "", id="empty"),
        pytest.param("\n", "", id="blank"),
    ],
)
def test_local_summary_block(summary: str, expected: str) -> None:
    """#19."""
    inputs = ContextInputs(nonce=NONCE, last_local_summary=summary)
    assert build_dynamic(inputs, ContextMode.FIRST, include_brief=True) == expected


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        pytest.param(RESUME_FOLLOW_UP, "", id="nothing-new"),
        pytest.param(RESUME_WAITING, "", id="waiting-nothing-new"),
        pytest.param(
            RESUME_WAITING_AFTER_LOCAL, f"{LOCAL_HEADER}\n{LOCAL_SUMMARY}", id="local-ran"
        ),
        pytest.param(RESUME_NEED_CHANGED, f"{NEED_HEADER}\n{NEED}\n", id="need-changed"),
        pytest.param(with_(RESUME_WAITING_AFTER_LOCAL, last_local_summary=""), "", id="no-summary"),
    ],
)
def test_resume_sends_only_what_changed(inputs: ContextInputs, expected: str) -> None:
    """#21: on resume only the changed need or summary; never the identity."""
    assert choose_mode(inputs) is ContextMode.RESUME
    dynamic = build_dynamic(inputs, ContextMode.RESUME, include_brief=False)
    assert dynamic == expected
    plan = plan_escalation(inputs, by_agent=False)
    assert block_of(plan) == expected.rstrip("\n")
    assert IDENTITY not in plan.user_message_prefix


@pytest.mark.parametrize(
    ("inputs", "included"),
    [
        pytest.param(FRESH_STALE_NEED, True, id="fresh"),
        pytest.param(FRESH_REJECTED, True, id="fresh-rejected"),
        pytest.param(FIRST, False, id="first"),
        pytest.param(RETURNING, False, id="returning"),
        pytest.param(RESUME_WAITING_AFTER_LOCAL, False, id="resume"),
        pytest.param(with_(FRESH_STALE_NEED, last_claude_summary=""), False, id="fresh-empty"),
    ],
)
def test_prior_claude_summary_only_on_fresh(inputs: ContextInputs, included: bool) -> None:
    """#22: a continued conversation already holds Claude's history."""
    plan = plan_escalation(inputs, by_agent=False)
    sent = plan.context_file + plan.user_message_prefix
    assert (PRIOR_HEADER in sent) is included
    assert (CLAUDE_SUMMARY in sent) is included


def test_dynamic_block_layout() -> None:
    """Sections in order, separated by blank lines: brief, need, prior summary, local activity."""
    inputs = with_(FRESH_STALE_NEED, need_records_ago=6)
    assert build_dynamic(inputs, ContextMode.FRESH, include_brief=True) == (
        f"{BRIEF_HEADER}\n{BRIEF}\n\n"
        f"{STALE_HEADER}\n{NEED}\n\n"
        f"{PRIOR_HEADER}\n{context._PRIOR_SUMMARY_NOTE}\n{CLAUDE_SUMMARY}\n"
        f"{LOCAL_HEADER}\n{LOCAL_SUMMARY}"
    )


@pytest.mark.parametrize("mode", list(ContextMode))
@pytest.mark.parametrize("by_agent", [True, False], ids=["agent", "user"])
def test_split_invariants(mode: ContextMode, by_agent: bool) -> None:
    """#24: dynamic never has identity or instructions; static never has brief, need or summary."""
    inputs = with_(RESUME_WAITING_AFTER_LOCAL, need_changed_since_claude=True)
    dynamic = build_dynamic(inputs, mode, include_brief=by_agent)
    for text in (IDENTITY, NEED_INSTRUCTION, MEMORY_INSTRUCTION, FACTS, NONCE):
        assert text not in dynamic
    static = build_static(NONCE, PERCEPTS)
    for text in (BRIEF, NEED, LOCAL_SUMMARY.strip(), CLAUDE_SUMMARY.strip()):
        assert text not in static


# --- re-injection (#27) and the hash guard ---------------------------------------------------


@pytest.mark.parametrize(
    ("turns", "chars", "reinjected"),
    [
        pytest.param(19, 39999, False, id="below-both"),
        pytest.param(20, 0, True, id="twenty-turns"),
        pytest.param(0, 40000, True, id="forty-thousand-bytes"),
    ],
)
@pytest.mark.parametrize(
    "inputs", [RESUME_FOLLOW_UP, RETURNING], ids=["resume-nothing-else", "returning"]
)
def test_instruction_reinjection(
    inputs: ContextInputs, turns: int, chars: int, reinjected: bool
) -> None:
    """#27: past 20 Claude turns or 40000 bytes the instructions ride in the block."""
    inputs = with_(inputs, claude_turns_since_injection=turns, claude_bytes_since_injection=chars)
    plan = plan_escalation(inputs, by_agent=False)
    block = block_of(plan)
    assert plan.reinjected_instructions is reinjected
    assert (f"milk:need:{NONCE}" in block) is reinjected
    assert (f"{FACTS}\n- {PERCEPTS[0]}" in block) is reinjected
    assert IDENTITY not in block
    assert plan.context_file == build_static(NONCE, PERCEPTS)


def test_reinjected_block_layout() -> None:
    plan = plan_escalation(with_(RETURNING, **REINJECT), by_agent=True)
    dynamic = build_dynamic(RETURNING, ContextMode.RETURNING, include_brief=True)
    static = build_static(NONCE, PERCEPTS)
    instructions = static[static.index(NEED_INSTRUCTION) :].rstrip("\n")
    assert block_of(plan) == f"{dynamic.rstrip()}\n\n{instructions}"
    assert plan.block_hash == block_hash(block_of(plan))


@pytest.mark.parametrize(
    "inputs",
    [RETURNING, RESUME_WAITING_AFTER_LOCAL, with_(RESUME_FOLLOW_UP, **REINJECT)],
    ids=["returning", "resume", "reinject-only"],
)
def test_hash_guard_skips_a_repeated_block(inputs: ContextInputs) -> None:
    """The block is left out when identical to the previous resumed turn's."""
    sent = plan_escalation(inputs, by_agent=True)
    assert sent.block_hash == block_hash(block_of(sent))
    again = plan_escalation(with_(inputs, last_resumed_context_hash=sent.block_hash), by_agent=True)
    assert again == ContextPlan(
        mode=sent.mode,
        context_file=sent.context_file,
        user_message_prefix="",
        block_hash="",
        reinjected_instructions=False,
        delivered_brief=False,
    )
    other = plan_escalation(with_(inputs, last_resumed_context_hash="0" * 64), by_agent=True)
    assert other == sent


def test_block_hash() -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", block_hash("x"))
    assert block_hash("x") == block_hash("x") != block_hash("y")


# --- hand-off (#28-#32) ----------------------------------------------------------------------


def test_resumed_turn_puts_context_in_the_prompt() -> None:
    """#28: a new summary rides before the user's text; nothing new leaves the text alone."""
    inputs = ContextInputs(
        nonce=NONCE,
        claude_session_id="sid-1",
        waiting_on_claude=True,
        local_turns_since_claude=1,
        last_local_summary="primary ran the tests: 3 failures in parser_test.go",
    )
    plan = plan_escalation(inputs, by_agent=False)
    prompt = plan.user_message_prefix + "fix them"
    assert plan.mode is ContextMode.RESUME
    assert prompt.startswith("<milk-context>\n")
    assert prompt.endswith("</milk-context>\n\nfix them")
    assert "3 failures in parser_test.go" in prompt
    assert IDENTITY not in prompt
    assert IDENTITY in plan.context_file
    assert NONCE in plan.context_file
    assert "3 failures" not in plan.context_file

    later = with_(inputs, waiting_on_claude=False, local_turns_since_claude=0)
    next_plan = plan_escalation(later, by_agent=False)
    assert next_plan.user_message_prefix + "thanks" == "thanks"
    assert next_plan.context_file == plan.context_file


def test_returning_turn_reinjects() -> None:
    """#29: brief, summary and nonce instructions in the block; the user's text follows."""
    inputs = ContextInputs(
        nonce=NONCE,
        claude_session_id="sid-1",
        local_turns_since_claude=2,
        escalation_brief="refactor the router scorer",
        last_local_summary="primary renamed Score to Weight",
        claude_turns_since_injection=25,
    )
    plan = plan_escalation(inputs, by_agent=True)
    prompt = wrap_turn_context(block_of(plan), "continue")
    assert prompt == plan.user_message_prefix + "continue"
    for text in ("refactor the router scorer", "primary renamed Score to Weight", NONCE):
        assert text in prompt
    assert prompt.endswith("\n\ncontinue")
    assert (plan.mode, plan.reinjected_instructions, plan.delivered_brief) == (
        ContextMode.RETURNING,
        True,
        True,
    )


@pytest.mark.parametrize("inputs", [FIRST, FRESH_STALE_NEED], ids=["first", "fresh"])
def test_new_conversation_is_never_suppressed(inputs: ContextInputs) -> None:
    """#30, P8: identical context twice, whatever the stored hash, is sent twice in the file."""
    once = plan_escalation(inputs, by_agent=True)
    dynamic = build_dynamic(inputs, once.mode, include_brief=True)
    for stored in (block_hash(dynamic), block_hash(dynamic.rstrip("\n")), once.block_hash):
        twice = plan_escalation(with_(inputs, last_resumed_context_hash=stored), by_agent=True)
        assert twice == once
    assert BRIEF in once.context_file
    assert once.user_message_prefix + "go" == "go"
    assert (once.block_hash, once.reinjected_instructions) == ("", True)


@pytest.mark.parametrize("blank", ["", "  \n", "\t"], ids=["empty", "spaces-newline", "tab"])
def test_wrap_turn_context_blank(blank: str) -> None:
    """#31: a blank block leaves the prompt as it is."""
    assert wrap_turn_context(blank, "hi") == "hi"


def test_wrap_turn_context_framing() -> None:
    """#31: the exact framing, and what the notice line tells Claude."""
    assert wrap_turn_context("ctx line", "hi") == (
        f"<milk-context>\n{context.TURN_CONTEXT_NOTICE}\nctx line\n</milk-context>\n\nhi"
    )
    notice = context.TURN_CONTEXT_NOTICE
    assert notice.startswith("[")
    assert notice.endswith("]")
    assert "\n" not in notice
    for words in ("milk", "not typed by the user", "follows the closing tag"):
        assert words in notice


@pytest.mark.parametrize(
    ("static", "dynamic", "expected"),
    [
        pytest.param("S\n", "D\n", "S\n\nD\n", id="static-first-newline-between"),
        pytest.param("S\n", "", "S\n", id="no-dynamic"),
    ],
)
def test_combine_context_file(static: str, dynamic: str, expected: str) -> None:
    """#32: one file, static first, `\\n` between the parts."""
    assert combine_context_file(static, dynamic) == expected


# --- every situation's file and prefix -------------------------------------------------------

STATIC = build_static(NONCE, PERCEPTS)


def first_file(inputs: ContextInputs, mode: ContextMode, by_agent: bool) -> str:
    return combine_context_file(STATIC, build_dynamic(inputs, mode, include_brief=by_agent))


@pytest.mark.parametrize(
    ("inputs", "by_agent", "mode", "file_has", "block"),
    [
        pytest.param(
            FIRST,
            False,
            ContextMode.FIRST,
            [NEED_HEADER, LOCAL_HEADER],
            None,
            id="first-by-user",
        ),
        pytest.param(
            FIRST,
            True,
            ContextMode.FIRST,
            [BRIEF_HEADER, NEED_HEADER, LOCAL_HEADER],
            None,
            id="first-by-agent",
        ),
        pytest.param(
            FRESH_TURN_GAP,
            True,
            ContextMode.FRESH,
            [BRIEF_HEADER, NEED_HEADER, PRIOR_HEADER, LOCAL_HEADER],
            None,
            id="fresh-turn-gap",
        ),
        pytest.param(
            FRESH_REJECTED,
            False,
            ContextMode.FRESH,
            [NEED_HEADER, PRIOR_HEADER, LOCAL_HEADER],
            None,
            id="fresh-rejected-id",
        ),
        pytest.param(
            RETURNING,
            False,
            ContextMode.RETURNING,
            [],
            [NEED_HEADER, LOCAL_HEADER],
            id="returning-by-user",
        ),
        pytest.param(
            RETURNING,
            True,
            ContextMode.RETURNING,
            [],
            [BRIEF_HEADER, NEED_HEADER, LOCAL_HEADER],
            id="returning-by-agent",
        ),
        pytest.param(
            with_(RETURNING, **REINJECT),
            False,
            ContextMode.RETURNING,
            [],
            [NEED_HEADER, LOCAL_HEADER, NEED_INSTRUCTION, MEMORY_INSTRUCTION, FACTS],
            id="returning-reinject",
        ),
        pytest.param(RESUME_FOLLOW_UP, False, ContextMode.RESUME, [], [], id="resume-nothing-new"),
        pytest.param(
            RESUME_FOLLOW_UP, True, ContextMode.RESUME, [], [BRIEF_HEADER], id="resume-by-agent"
        ),
        pytest.param(
            RESUME_WAITING_AFTER_LOCAL,
            False,
            ContextMode.RESUME,
            [],
            [LOCAL_HEADER],
            id="resume-after-local",
        ),
        pytest.param(
            RESUME_NEED_CHANGED, False, ContextMode.RESUME, [], [NEED_HEADER], id="resume-new-need"
        ),
        pytest.param(
            with_(RESUME_FOLLOW_UP, **REINJECT),
            False,
            ContextMode.RESUME,
            [],
            [NEED_INSTRUCTION, MEMORY_INSTRUCTION, FACTS],
            id="resume-reinject-only",
        ),
    ],
)
def test_situations(
    inputs: ContextInputs,
    by_agent: bool,
    mode: ContextMode,
    file_has: list[str],
    block: list[str] | None,
) -> None:
    """Each situation's file and `<milk-context>` block: the headers present, in order."""
    plan = plan_escalation(inputs, by_agent=by_agent)
    assert plan.mode is mode
    if block is None:  # a new conversation: everything in the file, no block
        assert plan.context_file == first_file(inputs, mode, by_agent)
        dynamic_headers = [h for h in plan.context_file[len(STATIC) :].splitlines() if h in ALL]
        assert dynamic_headers == file_has
        assert plan.user_message_prefix == ""
        return
    assert plan.context_file == STATIC
    content = block_of(plan)
    assert [line for line in content.splitlines() if line in ALL] == block
    assert (plan.block_hash == "") is (not block)
    assert IDENTITY not in content


ALL = {
    BRIEF_HEADER,
    NEED_HEADER,
    STALE_HEADER,
    PRIOR_HEADER,
    LOCAL_HEADER,
    NEED_INSTRUCTION,
    MEMORY_INSTRUCTION,
    FACTS,
    IDENTITY,
}

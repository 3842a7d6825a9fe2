"""Hand-off signals: what milk itself can see of a local turn going wrong.

Small models fail in ways they do not notice: they describe a tool call instead of making
it, loop on the same call, invent tools, guess the text of an edit and give up after it
fails, or answer nothing. The hand-off must not depend on the failing model's judgement, so
the tool loop reports every call and every final reply to a `TurnWatch`, which answers with
the `LocalGaveUp` that ends the local part (or asks for one corrective nudge first).

`cut_short` (route `auto`) stops the loop at the first mid-turn signal (a third identical
call, a tool that was not offered) so Claude can take over early; on route `local` the user
chose the local model, so those calls only get their error results and the loop goes on,
and only the signals a turn *ends* on count. Pure: no I/O, no events.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from milk_lsp.agents.base import Cited, LocalGaveUp, LocalSignal, ToolCallEvent, ToolResultEvent
from milk_lsp.agents.local.judge.finish import Finish
from milk_lsp.agents.local.reply.written import CALL_SHAPE as _CALL_SHAPE
from milk_lsp.text import cut, one_line

__all__ = [
    "CUT_CALL",
    "MAKE_THE_CHANGE",
    "NUDGE",
    "AnswerJudge",
    "Grounded",
    "Look",
    "MadeAlready",
    "Nudge",
    "TurnWatch",
    "WrittenEscalation",
]

REPEAT_LIMIT = 3
"""The same call (name and arguments) made this many times in one turn is a loop."""
EDIT_TOOL = "edit_file"
_TRIED_LIMIT = 12
"""Calls listed in the brief; a loop's hundredth call adds nothing."""
_SHORT_CHARS = 160

NUDGE = (
    "milk: your last reply described a tool call instead of making one, so nothing ran. "
    "If you need a tool, call it now as a real tool call (not as text). If you already "
    "know the answer, give it without mentioning tool names. If the task is beyond you, "
    "call escalate_to_claude."
)
"""The one corrective message a turn gets when the model describes a call."""
_NUDGE_SHOWN = "milk asked the model to make the tool call it described"

CUT_CALL = (
    "milk: your reply was cut off at the token limit in the middle of your {name} call, so "
    "nothing ran. Call {name} again with less text: for edit_file, old_text and new_text "
    "need only the one or few lines that change, not the whole function or its docstring."
)
_CUT_CALL_SHOWN = (
    "the local model's {name} call was cut off at its token limit; milk asked it for a shorter one"
)

MAKE_THE_CHANGE = (
    "milk: the user asked for a change and no file has been changed. Make the change now: "
    "read_file the file, then edit_file with old_text copied exactly from it. If you "
    "cannot, call escalate_to_claude."
)
"""The one corrective message a turn that was asked for a change and made none gets."""
_MAKE_THE_CHANGE_SHOWN = "milk asked the model to make the change: no file had changed"
REWRITTEN = (
    "milk: your reply shows changed code for lines of a file you were shown, and no file has"
    " been changed. If the user asked for this change, make it now with edit_file (old_text"
    " copied exactly from the file). If they only asked a question, call finish with intent"
    ' "question" and your answer.'
)
"""The one corrective message to a change written out in a code block instead of made."""
_REWRITTEN_SHOWN = (
    "milk asked the model to make the change its reply wrote out, or to say it was a question"
)
_EMPTY_RESULT = re.compile(r"No matches for |\(.+ is empty\)$")
"""A tool result that found nothing (`search_text` without matches, an empty folder)."""
CHANGE_TOOLS = frozenset({EDIT_TOOL, "run_command"})
"""Calls that can change the workspace."""
_WORD = re.compile(r"\w")
_MILK_TAGS = re.compile(
    r"<milk:(need|percept):[^>]*>.*?(?:</milk:\1:[^>]*>|\Z)|</?milk:(?:need|percept):[^>]*>",
    re.DOTALL,
)
"""milk's own tags, which the user never sees (the interceptor strips them)."""
_ECHOED_MARKUP = re.compile(r"</?tool_response>|<\|im_start\|>|<\|im_end\|>")
"""Chat-template markup a confused model writes into its answer."""


def _short(text: str, limit: int = _SHORT_CHARS) -> str:
    return cut(one_line(text), limit)


def _call_line(name: str, arguments: dict[str, Any] | None) -> str:
    shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True) if arguments else ""
    return _short(f"{name} {shown}".strip())


def _degenerate(text: str) -> bool:
    """A reply that is one fragment repeated (a small model stuck in a loop)."""
    tokens = text.split()
    if len(tokens) < 8:
        return False
    most = Counter(tokens).most_common(1)[0][1]
    return most * 2 > len(tokens) and len(set(tokens)) <= 4


@dataclass(frozen=True)
class Nudge:
    """Send `text` to the model and let it try once more (one of each kind per turn); the
    user is told `shown`, in one quiet line."""

    text: str
    shown: str


@dataclass(frozen=True)
class Grounded:
    """A final answer checked against the workspace as a guided one is (`guided.verify`)."""

    claims: int
    """How many paths, names and values of this workspace the answer states."""
    problems: tuple[str, ...] = ()
    """Each failed check, in words the model can act on and the user reads."""
    markup: str | None = None
    """Chat-template markup given as the answer, described."""
    unseen: str | None = None
    """The question is about definitions of this workspace and nothing the model looked at
    shows any of them: whatever it says of them is a guess."""
    citations: tuple[Cited, ...] = ()
    """The answer's citations, each found in its file."""
    proposed: tuple[str, ...] = ()
    """Paths the answer proposes creating, declared so in `finish`."""
    sources: str = ""
    """The text shown after the answer: its sources (`guided.citations.sources_block`)."""
    uncited: str = ""
    """Why the answer is not in the cited shape local answers end in ("": it is)."""
    rewrites: bool = False
    """A code block of the answer rewrites lines the turn was shown
    (`edit_intent.rewritten_code`): a change written out instead of made, unless `finish`
    says the request was a question."""


@dataclass(frozen=True)
class MadeAlready:
    """The model repeats an edit milk already told it is made inside the definition the
    request names: the change is in place and the loop is the model's, so the turn ends as
    done (the checks after edits still run)."""

    detail: str


@dataclass(frozen=True)
class WrittenEscalation:
    """The model wrote `escalate_to_claude` as text instead of calling it: its judgement
    that the task is beyond it, taken as the call."""

    reason: str


@dataclass(frozen=True)
class Look:
    """milk's own look at the workspace, for a model that answered without looking."""

    message: str
    """For the model: what milk found, or a request to look with a tool call."""
    notice: str
    """For the user, in one quiet line."""
    found: bool
    events: tuple[ToolCallEvent | ToolResultEvent, ...] = ()
    """The tool calls milk made and their results, shown to the user like the model's own."""


class AnswerJudge(Protocol):
    """How milk judges a turn's final answer against the workspace (`TurnGrounding` fits)."""

    def judge(
        self, answer: str, tool_outputs: Sequence[str], *, looked: bool, finish: Finish | None
    ) -> Grounded:
        """What `answer` (with `finish`'s citations) claims about the workspace, checked
        against the turn's successful tool outputs, the attachments and the workspace;
        `looked`: the model called tools this turn (even ones that failed)."""
        ...

    async def look(self) -> Look:
        """milk's own look at the workspace for what the question names."""
        ...


def refuses_tool_choice(http_status: int | None, message: str) -> bool:
    """An HTTP 4xx answer that names `tool_choice` or tools: the server refuses to make the
    model call a tool (a context overflow or a bad model name is not that)."""
    return http_status is not None and 400 <= http_status < 500 and "tool" in message.lower()


@dataclass
class TurnWatch:
    """The hand-off signals of one local turn."""

    offered: frozenset[str]
    cut_short: bool
    _calls: Counter[str] = field(default_factory=Counter)
    _tried: list[str] = field(default_factory=list)
    _failed_edits: dict[str, str] = field(default_factory=dict)
    _made_already: set[str] = field(default_factory=set)
    """Edit calls whose answer was that the edit is made already."""
    escalation_tool: str = ""
    """The escalation tool's name when it is offered ("" when not)."""
    change_requested: bool = False
    """The request spells out a change (`edit_intent.spelled_out_change`), or the model
    said it asks for one (`finish(intent="change")`): a turn that changes nothing did not
    do what was asked."""
    _changed: bool = False
    _change_denied: bool = False
    _denied_paths: list[str] = field(default_factory=list)
    """The files of the edits the user denied, in order."""
    _change_nudged: bool = False
    _nudged: bool = False
    _cut_call_nudged: bool = False
    _answer_nudged: bool = False
    _found_something = False
    """A call that read or found something (not an error, not an empty result) ran."""
    _tool_names: re.Pattern[str] | None = None

    @property
    def tried(self) -> tuple[str, ...]:
        return tuple(self._tried[:_TRIED_LIMIT]) + (
            (f"… and {len(self._tried) - _TRIED_LIMIT} more calls",)
            if len(self._tried) > _TRIED_LIMIT
            else ()
        )

    def gave_up(self, signal: LocalSignal, detail: str) -> LocalGaveUp:
        return LocalGaveUp(signal, detail, self.tried)

    def before_call(
        self, name: str, arguments: dict[str, Any] | None
    ) -> LocalGaveUp | MadeAlready | None:
        """A call is about to run: the signal that stops the loop first, if any."""
        key = _call_key(name, arguments)
        self._calls[key] += 1
        if key in self._made_already and self._changed and not self._failed_edits:
            path = str((arguments or {}).get("path", "")) or "the file"
            return MadeAlready(
                f"the local model made its edit of {path} and then repeated it; milk ended the"
                " turn, with the change in place"
            )
        if not self.cut_short:
            return None
        if name not in self.offered:
            return self.gave_up(
                LocalSignal.UNKNOWN_TOOL,
                f"the local model called a tool that does not exist: {_short(name, 80)}",
            )
        if self._calls[key] >= REPEAT_LIMIT:
            return self.gave_up(
                LocalSignal.REPEATED_CALL,
                f"the local model made the same call {self._calls[key]} times: "
                f"{_call_line(name, arguments)}",
            )
        return None

    def repeat_notice(self, name: str, arguments: dict[str, Any] | None) -> str | None:
        """On route `local` the `REPEAT_LIMIT`th same call runs, and the user is told."""
        if self.cut_short or self._calls[_call_key(name, arguments)] != REPEAT_LIMIT:
            return None
        return (
            f"The local model made the same call {REPEAT_LIMIT} times:"
            f" {_call_line(name, arguments)}. It may be stuck; cancel the turn or"
            " send it to Claude."
        )

    def after_call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        is_error: bool,
        denied: bool,
        output: str,
        made_already: bool = False,
    ) -> None:
        """What a call did: failed edits are remembered until the same file is edited.
        `made_already`: edit_file answered that this edit was made already inside the
        definition the request names; repeating it then ends the turn as done. An edit made
        elsewhere and repeated stays a loop (`repeated_call`): a junk edit must not end a
        turn as done."""
        if denied:
            outcome = "denied by the user"
        elif is_error:
            outcome = "error: " + _short(output.removeprefix("error: "), 100)
        else:
            outcome = "ok"
        self._tried.append(f"{_call_line(name, arguments)} → {outcome}")
        if not (denied or is_error) and not _EMPTY_RESULT.match(output.strip()):
            self._found_something = True
        if name in CHANGE_TOOLS:
            self._change_denied |= denied
            self._changed |= not (denied or is_error)
            if denied:
                target = (arguments or {}).get("path") or (arguments or {}).get("command")
                self._denied_paths.append(str(target or name))
        if name != EDIT_TOOL or arguments is None or denied:
            return
        path = str(arguments.get("path", ""))
        if is_error:
            self._failed_edits[path] = _short(output.removeprefix("error: "), 200)
        else:
            self._failed_edits.pop(path, None)
            if made_already:
                self._made_already.add(_call_key(name, arguments))

    def check_failed(self, output: str) -> LocalGaveUp:
        """`local.checkCommand` failed after the edits, with no model turn left to fix it."""
        return self.gave_up(
            LocalSignal.CHECK_FAILED, f"the check after the local edits failed: {output}"
        )

    def round_limit(self, rounds: int) -> LocalGaveUp:
        return self.gave_up(
            LocalSignal.ROUND_LIMIT,
            f"the local model was still calling tools after {rounds} rounds of tool calls "
            f"(local.maxToolRounds = {rounds})",
        )

    def final_reply(
        self,
        text: str,
        *,
        reasoned: bool,
        grounded: Grounded | None = None,
        cut: bool = False,
        finish: Finish | None = None,
    ) -> LocalGaveUp | Nudge | WrittenEscalation | None:
        """A reply without tool calls ends the loop: is it a failure, worth one nudge, an
        escalation written as text, or the answer? `cut`: the server stopped the reply at its
        token limit (`finish_reason` "length"). `finish`: how the model ended the turn, when
        it called `finish`. Nothing here reads the reply's or the request's wording: what
        the model declared in `finish`, the files and what the answer check found decide."""
        visible = _MILK_TAGS.sub("", text).strip()
        if self.escalation_tool and self.escalation_tool in visible:
            return WrittenEscalation(_short(visible.replace(self.escalation_tool, " "), 600))
        if not _WORD.search(visible) or _degenerate(visible):  # nothing, or "### ### ###"
            return self.gave_up(
                LocalSignal.EMPTY_REPLY,
                "the local model gave only reasoning and no answer"
                if reasoned
                else "the local model returned an empty reply",
            )
        echoed = self._echoed_look(visible)
        if echoed == "found nothing":
            return self.gave_up(
                LocalSignal.NO_ANSWER,
                "the local model gave as its answer a copy of a search that found nothing",
            )
        unrunnable = None if echoed else self._unrunnable_call(visible)
        if unrunnable is not None:
            cut_call = self._cut_call(visible) if cut else None
            if cut_call is not None and not self._cut_call_nudged:
                self._cut_call_nudged = True  # once: a second cut call is the model's limit
                return Nudge(CUT_CALL.format(name=cut_call), _CUT_CALL_SHOWN.format(name=cut_call))
            return self.gave_up(LocalSignal.UNRUNNABLE_CALL, unrunnable)
        markup = grounded.markup if grounded is not None else None
        if markup is not None or _ECHOED_MARKUP.search(visible):
            return self.gave_up(
                LocalSignal.UNRUNNABLE_CALL,
                f"the local model answered with chat-template markup ({markup})"
                if markup
                else "the local model wrote tool-call markup (a tool result of its own) as its "
                "answer",
            )
        described = None if echoed else self._described_tool(visible)
        if described is not None:
            if not self._nudged:
                self._nudged = True
                return Nudge(NUDGE, _NUDGE_SHOWN)
            return self.gave_up(
                LocalSignal.DESCRIBED_CALL,
                f"the local model described a {described} call instead of making it",
            )
        if self._failed_edits:
            path, why = next(iter(self._failed_edits.items()))
            if self._may_nudge_for_change():  # nothing changed yet: one more try at the edit
                self._change_nudged = True
                return Nudge(
                    f"milk: your edit of {path or 'the file'} was not made ({why}). No file has"
                    " been changed. Make the change now with edit_file, or call"
                    " escalate_to_claude if you cannot.",
                    f"milk asked the model to redo its edit of {path or 'the file'}, which"
                    " was not made",
                )
            return self.gave_up(
                LocalSignal.FAILED_EDIT,
                f"the edit of {path or 'a file'} failed and was not redone: {why}",
            )
        if finish is not None and finish.intent == "change":
            self.change_requested = True
        unmade = self._claimed_but_unmade(finish is not None and finish.outcome == "changed")
        if unmade is not None:
            return unmade
        if self._change_denied and not self._changed:
            return None  # the user said no, and the answer does not claim the change: true
        if self.change_requested and not (self._changed or self._change_denied):
            if self._may_nudge_for_change():
                self._change_nudged = True
                return Nudge(MAKE_THE_CHANGE, _MAKE_THE_CHANGE_SHOWN)
            return self.gave_up(
                LocalSignal.EDIT_NOT_MADE,
                "the user asked for a change and the local model changed no file",
            )
        if self._changed or grounded is None:
            return None  # the edits are the evidence (checked after them), not the words
        if grounded.rewrites and (finish is None or finish.intent != "question"):
            if not self._change_nudged:
                self._change_nudged = True
                return Nudge(REWRITTEN, _REWRITTEN_SHOWN)
            return self.gave_up(
                LocalSignal.EDIT_NOT_MADE,
                "the local model wrote out changed code for a file it was shown and changed no"
                " file, and did not say the request was a question",
            )
        if grounded.unseen:
            return self.gave_up(LocalSignal.UNGROUNDED_ANSWER, grounded.unseen)
        problems = grounded.problems + ((grounded.uncited,) if grounded.uncited else ())
        if problems:
            if not self._answer_nudged:
                self._answer_nudged = True  # once: the model may fix what the check found
                return Nudge(_answer_repair(problems), _ANSWER_REPAIR_SHOWN)
            return self.gave_up(LocalSignal.UNGROUNDED_ANSWER, "; ".join(problems[:_PROBLEMS_SAID]))
        if grounded.claims and self._tried and not self._found_something:
            return self.gave_up(
                LocalSignal.UNGROUNDED_ANSWER,
                "the answer is about the workspace, but every look the local model took failed "
                "or found nothing",
            )
        return None

    def _denied(self) -> str:
        """The denied calls in words ("edit of src/a.js", "edits of a.js, b.js")."""
        paths = list(dict.fromkeys(self._denied_paths))
        return ("edit of " if len(paths) == 1 else "edits of ") + ", ".join(paths[:3])

    def _claimed_but_unmade(self, claimed: bool) -> LocalGaveUp | Nudge | None:
        """The model ended with `finish(changed)` and no file changed: the workspace
        contradicts it. After a denied edit that is said in those words; otherwise the model
        gets one request to make the change."""
        if self._changed or not claimed:
            return None
        if self._change_denied:
            return self.gave_up(
                LocalSignal.EDIT_NOT_MADE,
                f"the user denied the local model's {self._denied()}, so no file changed, but "
                "it ended its turn saying the change is made",
            )
        if self._may_nudge_for_change(claimed):
            self._change_nudged = True
            return Nudge(MAKE_THE_CHANGE, _MAKE_THE_CHANGE_SHOWN)
        return self.gave_up(
            LocalSignal.EDIT_NOT_MADE,
            "the local model says it made the change, but no file changed",
        )

    def _may_nudge_for_change(self, claimed: bool = False) -> bool:
        """One corrective message a turn asked for a change (or whose model said it made
        one) may get while no file changed."""
        return (
            (self.change_requested or claimed or bool(self._failed_edits))  # it tried one
            and not (self._changed or self._change_denied)
            and not self._change_nudged
            and EDIT_TOOL in self.offered
        )

    def _echoed_look(self, text: str) -> str | None:
        """A reply that copies a look's results as milk writes them for the model
        (`search_text {'pattern': 'x'}:` and the result below): "found nothing" when every
        copied result is empty, "found" otherwise (then judged as any answer, by its
        claims), None when it is no such copy. Qwen2.5-Coder-1.5B answers "where is X
        defined?" so, with the definition's line in it."""
        blocks = _LOOK_HEADER.split(text)
        if len(blocks) < 3 or blocks[0].strip():
            return None
        names, results = blocks[1::2], blocks[2::2]
        if any(name not in self.offered for name in names):
            return None
        empty = all(not result.strip() or _EMPTY_RESULT.match(result.strip()) for result in results)
        return "found nothing" if empty else "found"

    def _unrunnable_call(self, text: str) -> str | None:
        """A call written as text that milk cannot run: an unknown tool, or arguments that
        do not parse (a runnable one was already run by the loop)."""
        names = [match.group(1) for match in _CALL_SHAPE.finditer(text)]
        if not names:
            lead = _NAMED_CALL.match(text)
            if lead is not None and lead.group(1) in self.offered:  # `search_text {'pattern'…`
                return (
                    f"the local model wrote {_a(lead.group(1))} call as text that could not be run"
                )
            return None
        unknown = [name for name in names if name not in self.offered]
        if unknown:
            return f"the local model wrote a call to a tool that does not exist: {unknown[0]}"
        if len(names) > 1:
            return (
                f"the local model wrote {len(names)} calls as text ({', '.join(names)}); milk "
                "runs one call written as text, not a plan of several"
            )
        return f"the local model wrote {_a(names[0])} call as text that could not be run"

    def _cut_call(self, text: str) -> str | None:
        """The offered tool whose call, written as text, is the reply's last: cut off there."""
        names = [match.group(1) for match in _CALL_SHAPE.finditer(text)]
        return names[-1] if names and names[-1] in self.offered else None

    def _described_tool(self, text: str) -> str | None:
        """The offered tool a final reply names instead of calling it: written as a call
        (`read_file(…)`), or named at all before any call ran this turn (a reply that
        mentions a tool it used, after using it, tells how it looked). By the names of
        milk's own tools, never by the words around them."""
        if not self.offered:
            return None
        if self._tool_names is None:
            names = "|".join(re.escape(name) for name in sorted(self.offered))
            self._tool_names = re.compile(rf"\b({names})\s*\(|\b({names})\b")
        for match in self._tool_names.finditer(text):
            if match.group(1) or not self._tried:
                return match.group(1) or match.group(2)
        return None


_PROBLEMS_SAID = 3
_ANSWER_REPAIR_SHOWN = "milk sent the answer back to the model once: its check failed"


def _answer_repair(problems: Sequence[str]) -> str:
    """The one repair request of an answer whose check failed: each reason, mechanically."""
    reasons = "\n".join(f"- {problem}" for problem in problems[:_PROBLEMS_SAID])
    return (
        "milk: your answer was checked against the workspace, and:\n"
        f"{reasons}\n"
        "Look with a tool call if you need to, then answer again with finish: cite the lines "
        "your answer rests on (path, line, the exact quoted text), and put in `proposed` any "
        "path you suggest creating. If you cannot, call finish with outcome cannot."
    )


_LOOK_HEADER = re.compile(r"^[ \t]*([A-Za-z_]\w*) \{[^\n]*\}:[ \t]*$", re.MULTILINE)
"""The header of one look's result as milk writes it for the model (`answer.look`)."""
_NAMED_CALL = re.compile(r"\s*`{0,3}\s*([A-Za-z_]\w*)\s*[({]")
"""A reply that opens with a tool's name and its arguments (`search_text {'pattern': …}`,
`read_file(path=…)`), a call written as text in the loose style."""


def _a(name: str) -> str:
    """`name` with its article: "an edit_file", "a search_text"."""
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _call_key(name: str, arguments: dict[str, Any] | None) -> str:
    """One call's identity (its name and arguments), for counting repeats."""
    return json.dumps([name, arguments], sort_keys=True, default=str)

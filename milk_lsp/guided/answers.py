"""An agent turn's final answer, checked as a guided answer is (`verify.check_answer`: one
verification for both strategies), and milk's own look for a model that answered without
looking.

The agent loop's model ends with `finish(intent, outcome, answer, citations, proposed)` or
with plain text. Either way the answer is a `GuidedReply` of kind `answer`: each quote is
looked up in its file, each path must exist or be declared proposed, each workspace name
and value must be in what the model was shown (its successful tool results, milk's look,
the attachments). Every local answer that ends as done shows its sources, each checked:
`finish`'s citations, else what milk finds of the answer's own code in the files
(`quoted_from`); code about this workspace that rests on nothing the request did not say
gets the one repair, then hands off. Nothing reads the answer's or the request's wording.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Sequence

from milk_lsp.agents.base import Cited, ToolCallEvent, ToolResultEvent, ToolStatus
from milk_lsp.agents.local.judge.asked import asked, code_shaped
from milk_lsp.agents.local.judge.edit_intent import rewritten_code
from milk_lsp.agents.local.judge.finish import Finish
from milk_lsp.agents.local.judge.markup import markup_answer
from milk_lsp.agents.local.judge.read_first import FileTexts, ReadFirst, read_first
from milk_lsp.agents.local.judge.watch import Grounded, Look
from milk_lsp.agents.local.tool_specs import LIST_DIRECTORY, READ_FILE, SEARCH_TEXT, LocalTools
from milk_lsp.guided.citations import sources_block
from milk_lsp.guided.locate import Located
from milk_lsp.guided.shape import QUOTE_MAX, GuidedReply, citations_of
from milk_lsp.guided.verify import WRITTEN, check_answer, find_quote, paths_in
from milk_lsp.workspace.index import WorkspaceIndex

logger = logging.getLogger(__name__)

LOOK_PATHS = 2
"""Files of the question milk reads itself when the model did not look."""
LOOK_NAMES = 3
"""Names of the question milk searches for itself."""
LOOK_CHARS = 6000
"""What milk's own look hands the model from its searches and reads, at most (the
definitions it reads are bounded by read-first's own limits)."""
DEFINITIONS_CHARS = 8000
"""The definitions milk's look reads for a question, at most (about 2,000 tokens)."""
DEFINITIONS_LEAD = "The definitions the question names, as the files have them now:"

ASK_TO_LOOK = "milk: look at the workspace with a tool call before you answer."
"""To a model that answered without looking, when milk's own look found nothing."""
LOOKED_NOTICE = (
    "milk looked in the workspace for what the question names and gave the model what it "
    "found (the model's server does not make it call a tool first)"
)
ASKED_TO_LOOK_NOTICE = (
    "milk asked the model to look in the workspace before answering (it answered without "
    "looking, and milk found nothing the question names)"
)
_IDENTIFIERS = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_OPTION = re.compile(r"--[A-Za-z][\w-]*")
_PATHS = re.compile(r"(?<![\w/.@-])(?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,6}(?![\w/])|[\w.-]+/[\w./-]+")


class AgentAnswers:
    """The evidence of one agent turn and the workspace's index, judging its final answers
    (`watch.AnswerJudge`)."""

    def __init__(
        self,
        question: str,
        message: str,
        index: WorkspaceIndex,
        *,
        tools: LocalTools | None = None,
        texts: FileTexts | None = None,
        conversation: Sequence[str] = (),
    ) -> None:
        """`question`: what the user typed; `message`: what the model got (the question with
        the attachments' text); `tools`, `texts`: what milk's own look calls and reads
        definitions with; `conversation`: the rest of what the model was given (the system
        prompt, the earlier turns), which backs the values an answer states."""
        self._question = question
        self._message = message
        self._conversation = tuple(conversation)
        self._looked: list[str] = []
        """What milk's own look found, as the model was given it."""
        self._index = index
        self._asked = asked(question, index)
        self.about_workspace = (
            bool(self._asked)
            or message.strip() != question.strip()
            or any(index.has_option(option) for option in _OPTION.findall(question))
        )
        """The question names definitions, files or options of this workspace, or came
        with attachments: what the answer states about the workspace is checked."""
        self._tools = tools
        self._texts = texts

    def judge(
        self, answer: str, tool_outputs: Sequence[str], *, looked: bool, finish: Finish | None
    ) -> Grounded:
        markup = markup_answer(answer)
        if markup is not None:
            return Grounded(0, markup=markup)
        citations = [] if finish is None else citations_of(finish.citations)
        proposed = [] if finish is None else list(finish.proposed)
        if not (self.about_workspace or looked or citations or self._names_code()):
            # a general question, answered from general knowledge; but a path in one of
            # this workspace's folders is a claim about it (`src/padding.rs` beside `src/`)
            here = [
                path
                for path in sorted(paths_in(answer, self._index))
                if "/" in path
                and self._index.has_path(path.split("/", 1)[0])
                and not self._index.has_path(path)
                and path not in proposed
            ]
            return Grounded(
                len(here),
                tuple(f"{path} is not in the workspace: name a file that is" for path in here),
            )
        # built unvalidated: the length limits bound a guided model's constrained reply, and an
        # agent's final answer may be longer (a 1.5B model wrote 3,000 characters and more)
        reply = GuidedReply.model_construct(
            kind="answer", answer=answer, citations=citations, proposed=proposed, edits=[]
        )
        seen = "\n".join([self._message, *self._conversation, *self._looked, *tool_outputs])
        verdict = check_answer(reply, Located(seen=seen), self._index, self._question, cite=False)
        wrote, paths = written(answer, self._index, self._question), paths_in(answer, self._index)
        if not citations:  # milk cites what the answer quotes from the files the turn showed
            verdict.citations = quoted_from(wrote, paths, seen, self._index)
        claims = len(verdict.citations) + _claims_in(answer)
        named = [p for p in paths if self._index.has_path(p) and p not in self._question]
        # code written about this workspace rests on something the request did not say:
        # a line that holds it, or a file the request did not name (prose alone, which
        # only words tell from a non-answer, is left to the checks above)
        uncited = (
            bool(wrote)
            and (self.about_workspace or verdict.claims > 0)
            and not verdict.citations
            and not named
        )
        return Grounded(
            claims,
            tuple(verdict.problems),
            rewrites=rewritten_code(answer, "\n".join([*self._looked, *tool_outputs])),
            unseen=self._unseen(tool_outputs),
            citations=tuple(verdict.citations),
            proposed=tuple(verdict.proposed),
            sources=sources_block(verdict.citations, verdict.proposed),
            uncited=UNCITED_CODE if uncited else "",
        )

    def _names_code(self) -> bool:
        """The question writes a name with code's shape (`resumeNxt`, `parse_args`): what
        the answer places it in is a claim about this folder even when it names nothing
        here."""
        return any(code_shaped(word) for word in _IDENTIFIERS.findall(self._question))

    def _unseen(self, tool_outputs: Sequence[str]) -> str | None:
        """The question names definitions of this workspace, and nothing the model saw
        shows any of them (its successful tool results, milk's look, the attachments): what
        it says of them is a guess."""
        defined = {
            name: definers
            for name in self._asked.names
            if (definers := self._index.definers(name.rsplit(".", 1)[-1]))
        }
        if not defined:
            return None
        attached = self._message.replace(self._question, " ")
        seen = "\n".join([attached, *self._looked, *tool_outputs])
        for name, definers in defined.items():
            if _shows_name(seen, name) or any(_shows_line_of(seen, path) for path in definers):
                return None
        first = next(iter(defined))
        return (
            f"the question is about {first}, but nothing the local model looked at shows it: "
            "the answer is a guess"
        )

    async def look(self) -> Look:
        """Read the files the question names and search for its names, as the model could
        have (the top folder when it names nothing); the results are evidence, and the
        model gets them as a message."""
        tools = self._tools
        if tools is None:
            return Look(ASK_TO_LOOK, ASKED_TO_LOOK_NOTICE, found=False)
        paths = list(self._asked.files) or [
            path for path in _PATHS.findall(self._question) if self._index.has_path(path)
        ]
        looks: list[tuple[str, dict[str, object]]]
        looks = [(READ_FILE, {"path": path}) for path in paths[:LOOK_PATHS]]
        events: list[ToolCallEvent | ToolResultEvent] = []
        definitions = await self._read_definitions()
        if definitions is not None:
            events += definitions.events
            self._looked.append(definitions.text)
            looks = [look for look in looks if look[1].get("path") not in definitions.paths]
        looks += [(SEARCH_TEXT, {"pattern": name}) for name in self._asked.names[:LOOK_NAMES]]
        if not looks and definitions is None:  # "what does this project do?": its top
            looks = [(LIST_DIRECTORY, {"path": "."})]
        found: list[str] = []
        prefix = f"milk-look-{uuid.uuid4().hex[:8]}"
        for number, (tool, arguments) in enumerate(looks):
            call_id = f"{prefix}-{number}"
            try:
                outcome = await tools.call(call_id, tool, dict(arguments))
            except Exception:  # milk's own look is a help; it must never fail the turn
                logger.warning("milk's look (%s %s) failed", tool, arguments, exc_info=True)
                continue
            status = ToolStatus.FAILED if outcome.is_error else ToolStatus.COMPLETED
            events.append(ToolCallEvent(call_id, tool, dict(arguments), status))
            events.append(ToolResultEvent(call_id, outcome.output, outcome.is_error))
            if outcome.is_error or not outcome.output.strip():
                continue
            self._looked.append(outcome.output)
            found.append(f"{tool} {arguments}:\n{outcome.output}")
        if not found and definitions is None:
            return Look(ASK_TO_LOOK, ASKED_TO_LOOK_NOTICE, found=False, events=tuple(events))
        text = "\n\n".join(found)
        if len(text) > LOOK_CHARS:
            text = text[:LOOK_CHARS] + "\n[… cut]"
        if definitions is not None:
            text = "\n\n".join(part for part in (definitions.text, text) if part)
        return Look(
            "milk looked in the workspace for what the question names (you answered without "
            "looking). Answer from this, or call a tool to look further:\n\n" + text,
            LOOKED_NOTICE,
            found=True,
            events=tuple(events),
        )

    async def _read_definitions(self) -> ReadFirst | None:
        """The lines of the definitions the question names (a search shows only the line
        naming one; its signature and body answer more)."""
        if self._texts is None or not self._asked.names:
            return None
        try:
            return await read_first(
                self._question,
                self._index,
                self._texts,
                lead=DEFINITIONS_LEAD,
                max_chars=DEFINITIONS_CHARS,
                id_prefix="milk-look-definition",
            )
        except Exception:  # milk's own look is a help; it must never fail the turn
            logger.warning("milk's look at the definitions failed", exc_info=True)
            return None


_CODE = re.compile(r"`[^`\n]+`")
_NAME_SPAN = re.compile(r"([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\(\))?")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
UNCITED_CODE = (
    "nothing the answer writes as code is in a file here, and it cites no line: give it"
    " with finish, citing each line it rests on (path, line, the exact quoted text)"
)
"""Why an agent's answer is not in the cited shape (`watch.Grounded.uncited`)."""
QUOTED_FILES = 12
"""Files milk looks a plain answer's code up in, at most (the ones it and the turn name)."""
QUOTED_CITATIONS = 6


def written(answer: str, index: WorkspaceIndex, request: str) -> list[list[str]]:
    """What the answer writes as code or quoted text that the request does not (it proves
    nothing of the answer), each with the forms it is looked up in: a fenced block whole,
    then each of its lines (a rewrite keeps some of them); a name written as code (`add()`,
    `Calculator.add_value()`) as written, then its last part."""
    groups = [
        [piece]
        for block in _FENCE.findall(answer)
        if block.strip()
        for piece in [block, *(line for line in block.splitlines() if len(line.strip()) >= 12)]
    ]
    for span in ("".join(found).strip() for found in WRITTEN.findall(_FENCE.sub(" ", answer))):
        name = _NAME_SPAN.fullmatch(span)
        groups.append([span, name.group(1).rsplit(".", 1)[-1]] if name else [span])
    return [
        kept
        for group in groups
        if (
            kept := [q for q in group if not index.has_path(q.strip()) and q.strip() not in request]
        )
    ]


def quoted_from(
    groups: list[list[str]], paths: set[str], seen: str, index: WorkspaceIndex
) -> list[Cited]:
    """What the answer writes (`written`), found verbatim in a file that defines a name it
    writes, or that the answer (its `paths`) or the turn named, as citations milk checked:
    an agent's plain answer in the cited shape without a `finish` call."""
    if not groups:
        return []
    # the files defining what it names first: a name's line there is its definition
    named = [
        path
        for group in groups
        for name in _IDENTIFIERS.findall(group[-1])
        if len(name) > 2
        for path in index.definers(name, limit=2)
    ]
    named += [*sorted(paths), *reversed(_PATHS.findall(seen))]  # the latest first
    files = [path for path in dict.fromkeys(filter(None, map(index.file_for, named)))]
    texts: dict[str, str] = {}  # a file larger than the index reads (minified) is left out
    for path in files[:QUOTED_FILES]:
        try:
            if (index.root / path).stat().st_size <= index.max_file_bytes:
                texts[path] = (index.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    cited: list[Cited] = []
    for group in groups:
        found = next(
            (
                (path, where, quote)
                for quote in group
                for path, text in texts.items()
                if (where := find_quote(text, quote, 0)) is not None
            ),
            None,
        )
        if found is None:
            continue
        path, (first, last), quote = found
        if not any(c.path == path and c.line <= first and last <= c.end_line for c in cited):
            cited.append(Cited(path, first, last, quote.strip()[:QUOTE_MAX]))
        if len(cited) >= QUOTED_CITATIONS:
            break
    return cited


def _claims_in(answer: str) -> int:
    """How many things the answer writes as code or as a path (what a look could back)."""
    return len(_CODE.findall(answer)) + len(_PATHS.findall(_CODE.sub(" ", answer)))


def _token_in(text: str, token: str) -> bool:
    """Whether `token` occurs in `text` not as part of a longer name or option."""
    if not token or token not in text:
        return False
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def _shows_name(text: str, name: str) -> bool:
    """Whether `text` shows `name`: whole, its last part (`calc.add` after reading calc.py),
    or as a module path (`pkg.mod` in `pkg/mod.py`)."""
    if _token_in(text, name):
        return True
    parts = name.split(".")
    return len(parts) > 1 and (_token_in(text, parts[-1]) or "/".join(parts) in text)


def _shows_line_of(text: str, path: str) -> bool:
    """Whether `text` shows a line of the file `path`, as a search hit does
    (`src/humanize/time.py:12: ...`)."""
    return re.search(rf"(?<![\w/.-]){re.escape(path)}:\d+", text) is not None

"""`TurnGrounding`: one turn's judge of the local model's final answer, by evidence.

A small model's answer is trusted only as far as the workspace backs it: the files, paths,
names and options it asserts about this workspace must be in the turn's successful tool
results, in what the user attached, or in the workspace itself (`WorkspaceIndex`). The
model's wording is never the judge. A general question (nothing of this workspace in it)
asserts nothing about the workspace, so it is never second-guessed, but for the options and,
when it asks where code is, the files an answer names.

It also gives milk's own look at the workspace, for a model server that does not make the
model call a tool first (`tool_choice` ignored or refused): the question's paths read and
its names searched with the same confined tools the model has.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from milk_lsp.agents.base import ToolCallEvent, ToolResultEvent, ToolStatus
from milk_lsp.agents.local.judge.finish import FINISH_TOOL_NAME
from milk_lsp.agents.local.judge.grounding import (
    Claims,
    markup_answer,
    question_claims,
    question_names,
    shows_line_of,
    shows_name,
    ungrounded,
    workspace_claims,
)
from milk_lsp.agents.local.judge.grounding.asked import code_shaped
from milk_lsp.agents.local.judge.grounding.hints import asks_about_cli_options, asks_where_defined
from milk_lsp.agents.local.judge.grounding.values import stated_values, unbacked_values
from milk_lsp.agents.local.judge.read_first import FileTexts, ReadFirst, read_first
from milk_lsp.agents.local.judge.watch import Grounded, Look
from milk_lsp.agents.local.tool_specs import (
    EDIT_FILE,
    ESCALATE_TOOL_NAME,
    LIST_DIRECTORY,
    READ_FILE,
    RUN_COMMAND,
    SEARCH_TEXT,
    LocalTools,
)
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
MILK_TOOLS = frozenset(
    {
        READ_FILE,
        LIST_DIRECTORY,
        SEARCH_TEXT,
        EDIT_FILE,
        RUN_COMMAND,
        ESCALATE_TOOL_NAME,
        FINISH_TOOL_NAME,
    }
)
"""The tools milk offers the model: an answer telling how it looked ("I called
`search_text`") names them, which is no claim about the workspace (the crossenv bench)."""


def _without_milks_tools(claims: Claims) -> Claims:
    names = tuple(name for name in claims.names if name.removesuffix("()") not in MILK_TOOLS)
    return claims if names == claims.names else replace(claims, names=names)


def cli_option_pattern() -> str:
    """Where command-line options are declared, in every language the code package knows
    (argparse, click, commander, yargs, Go's flag and cobra, clap, picocli, …)."""
    from milk_lsp.code import LANGUAGES  # off start-up

    return "|".join(
        dict.fromkeys(language.cli_options for language in LANGUAGES if language.cli_options)
    )


def _same_file(claimed: str, definer: str) -> bool:
    """Whether a path of the answer names `definer` (whole, or its trailing part)."""
    claimed = claimed.split(":", 1)[0].removeprefix("./").strip("/")
    return bool(claimed) and (definer == claimed or definer.endswith("/" + claimed))


class TurnGrounding:
    """The evidence of one turn and the workspace's index, judging its final answers."""

    def __init__(
        self,
        question: str,
        message: str,
        index: WorkspaceIndex | None,
        *,
        about_workspace: bool,
        tools: LocalTools | None = None,
        texts: FileTexts | None = None,
        conversation: Sequence[str] = (),
    ) -> None:
        """`question`: what the user typed; `message`: what the model got (the question with
        the attachments' text); `about_workspace`: the question names something of this
        workspace or asks about it, so what the answer asserts about it is checked;
        `tools`, `texts`: what milk's own look calls and reads definitions with;
        `conversation`: the rest of what the model was given (the system prompt, the
        earlier turns), which backs the values an answer states."""
        self._question = question
        self._conversation = tuple(conversation)
        self._evidence = [message]
        self._index = index
        self.about_workspace = about_workspace
        self._tools = tools
        self._texts = texts
        self._definers_of: dict[str, tuple[str, ...]] = {}

    def judge(self, answer: str, tool_outputs: Sequence[str], *, looked: bool) -> Grounded:
        markup = markup_answer(answer)
        if markup is not None:
            return Grounded(0, (), markup)
        claims = _without_milks_tools(workspace_claims(answer))
        if not (self.about_workspace or looked):
            # A general question: only options stand for this workspace (a bare `--flag`
            # answered to "which option keeps upper case?" names this project's CLI), and
            # paths when it asks where code is ("where is resumeNxt defined?", a name of no
            # file here): a file the answer places it in must exist.
            paths = claims.paths if self._asks_for_a_place() else ()
            if not (claims.options or paths):
                return Grounded(0)
            claims = Claims(paths=paths, options=claims.options)
            values: tuple[str, ...] = ()
        else:
            seen = [*self._conversation, *self._evidence, *tool_outputs]
            stated = stated_values(answer, self._of_workspace())
            values = unbacked_values(stated, seen, self._writer(claims))
        count = len(claims.paths) + len(claims.names) + len(claims.options)
        unseen = self._unseen(tool_outputs)
        unaddressed = self._unaddressed(answer)
        misplaced = self._misplaced(claims) or unseen
        if not count:
            return Grounded(0, misplaced=misplaced, unaddressed=unaddressed, values=values)
        missing = ungrounded(claims, [*self._evidence, *tool_outputs], self._index)
        return Grounded(count, missing, misplaced=misplaced, unaddressed=unaddressed, values=values)

    def _unaddressed(self, answer: str) -> bool:
        """The question names definitions of this workspace, and `answer` names none of
        them (in any case) nor the name of a file that defines one."""
        index = self._index
        if index is None or not self.about_workspace:
            return False
        folded = answer.casefold()
        asked = [name for name in question_names(self._question, index) if self._definers(name)]
        if not asked:
            return False
        for name in asked:
            bare = name.split(".")[-1].removesuffix("()")
            files = (path.rsplit("/", 1)[-1] for path in self._definers(name))
            if bare.casefold() in folded or any(file.casefold() in folded for file in files):
                return False
        return True

    def _asks_for_a_place(self) -> bool:
        """The question asks where something is, or names code by a name of code's shape
        (`resumeNxt`, `parse_args`): an answer's path is then a claim about this folder."""
        question = self._question
        return asks_where_defined(question) or any(
            code_shaped(word) for word in _IDENTIFIERS.findall(question)
        )

    def _unseen(self, tool_outputs: Sequence[str]) -> str | None:
        """For a question about names this workspace defines: the answer came without the
        model seeing any of them (not in its successful tool results, milk's own look or what
        the user attached), so whatever it asserts about them is a guess."""
        index = self._index
        if index is None or not self.about_workspace:
            return None
        defined = {
            name: definers
            for name in question_names(self._question, index)
            if (definers := self._definers(name))
        }
        if not defined:
            return None
        attached = self._evidence[0].replace(self._question, " ")
        seen = "\n".join([attached, *self._evidence[1:], *tool_outputs])
        for name, definers in defined.items():
            # the name itself, or a line of a file that defines it (a search for its parameter)
            if shows_name(seen, name) or any(shows_line_of(seen, path) for path in definers):
                return None
        first = next(iter(defined))
        return (
            f"the question is about {first}, but nothing the local model looked at shows it: "
            "the answer is a guess"
        )

    def _of_workspace(self) -> Callable[[str], bool] | None:
        """Whether a name or path an answer gives is of this workspace (a definition, a
        file): the values its sentence states are then about this workspace's code."""
        index = self._index
        if index is None:
            return None
        return lambda word: (
            index.has_definition(word.removesuffix("()").rsplit(".", 1)[-1])
            or (("/" in word or "." in word) and index.has_path(word))
        )

    def _writer(self, claims: Claims) -> Callable[[float], bool] | None:
        """Whether a file the answer is about writes a number: one defining a name of the
        question or the answer, or a file the answer names."""
        index = self._index
        if index is None:
            return None
        names = [*question_names(self._question, index), *claims.names]
        files = {path for name in names for path in self._definers(name)}
        files.update(path for claim in claims.paths if (path := index.file_for(claim)))
        return lambda value: any(index.writes_number(path, value) for path in files)

    def _definers(self, name: str) -> tuple[str, ...]:
        """The files defining `name` (its last dotted part), looked up once per turn: every
        final answer of the turn asks about the same question."""
        bare = name.split(".")[-1].removesuffix("()")
        if bare not in self._definers_of and self._index is not None:
            self._definers_of[bare] = self._index.definers(bare)
        return self._definers_of.get(bare, ())

    def _misplaced(self, claims: Claims) -> str | None:
        """For "where is X defined?": the answer names files, none of which defines X, while
        the workspace's index knows the ones that do (an existing file named for the wrong
        thing passes the existence check)."""
        index = self._index
        places = (*claims.paths, *claims.conventional)
        if index is None or not places or not asks_where_defined(self._question):
            return None
        for name in question_names(self._question, index):
            definers = self._definers(name)
            if not definers:
                continue
            if any(_same_file(path, definer) for path in places for definer in definers):
                return None
            named = ", ".join(places[:2])
            return (
                f"the answer places {name} in {named}, but milk finds it defined in "
                f"{', '.join(definers[:2])}"
            )
        return None

    async def look(self) -> Look:
        """Read the paths the question names and search for its names, as the model could
        have (the top folder when it names nothing); the results are evidence, and the
        model gets them as a message."""
        tools = self._tools
        if tools is None:
            return Look(ASK_TO_LOOK, ASKED_TO_LOOK_NOTICE, found=False)
        asked = question_claims(self._question)
        index = self._index
        # with an index, also the plain words that stand where a name does and that this
        # workspace defines ("the format parameter of naturalsize")
        names = asked.names if index is None else question_names(self._question, index)
        found: list[str] = []
        events: list[ToolCallEvent | ToolResultEvent] = []
        looks: list[tuple[str, dict[str, object]]]
        looks = [(READ_FILE, {"path": path}) for path in asked.paths[:LOOK_PATHS]]
        definitions = None
        if asks_about_cli_options(self._question):
            # "which option of the slugify CLI …": the lines declaring options, each with its
            # help text; the CLI's name ("slugify") is no definition to read or search for
            looks.append((SEARCH_TEXT, {"pattern": cli_option_pattern(), "regex": True}))
        else:
            definitions = await self._read_definitions(names)
            if definitions is not None:
                events += definitions.events
                self._evidence.append(definitions.text)
                # a named file whose definitions were read is not read whole again
                looks = [look for look in looks if not self._read_in(look, definitions)]
            looks += [(SEARCH_TEXT, {"pattern": name}) for name in names[:LOOK_NAMES]]
        if not looks and definitions is None:  # "what does this project do?": its top
            looks = [(LIST_DIRECTORY, {"path": "."})]
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
            self._evidence.append(outcome.output)
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

    def _read_in(self, look: tuple[str, dict[str, object]], read: ReadFirst) -> bool:
        """Whether `look` reads a file whose lines `read` holds already."""
        path = look[1].get("path")
        index = self._index
        if look[0] != READ_FILE or not isinstance(path, str) or index is None:
            return False
        return index.file_for(path) in read.paths

    async def _read_definitions(self, names: Sequence[str]) -> ReadFirst | None:
        """The lines of the definitions a question asks about ("the default of the format
        parameter of naturalsize": its signature; a search shows only the line naming it).
        Not for "which file defines X?", which a search answers with fewer tokens."""
        index, texts = self._index, self._texts
        if index is None or texts is None or not names or asks_where_defined(self._question):
            return None
        try:
            return await read_first(
                self._question,
                index,
                texts,
                lead=DEFINITIONS_LEAD,
                max_chars=DEFINITIONS_CHARS,
                id_prefix="milk-look-definition",
            )
        except Exception:  # milk's own look is a help; it must never fail the turn
            logger.warning("milk's look at the definitions failed", exc_info=True)
            return None

"""What a guided request says: milk's short instructions, the located code, the request;
and the repair message that hands a failed check back once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from milk_lsp.guided.locate import Located

_SYSTEM = """\
You help with the code in the user's workspace. milk has already found the code the request \
is about: the lines below come from the user's files. Reply with one JSON object.

First `intent`: "change" when the user asks you to change, add, remove, rename or create \
anything in the code or files (a comment or a docstring too); "question" when they only ask \
something. A change is made with kind "edits"; a question gets \
kind "answer".

kind "answer": answer in `answer`, briefly (Markdown; file paths and code names in \
backticks). For each thing you say about the workspace add a citation: the file's path and \
the exact text of one line, copied from the lines shown.
kind "edits": when the user asks to change the code. Each edit: the file's path, `old_text` \
copied exactly from the lines shown (one to six whole lines, enough to be unique), and \
`new_text` to put in their place (to add lines, repeat the line they go next to). To create \
a file: `old_text` "". Say in one sentence in `answer` what you changed.
{escalate}\
Put any file you suggest creating, which does not exist yet, in `proposed`. Leave the \
fields you do not use empty. The shape: {{"intent": "…", "kind": "…", \
"answer": "…", "citations": [{{"path": "…", "quote": "…"}}], "proposed": [], \
"edits": [{{"path": "…", "old_text": "…", "new_text": "…"}}], "reason": ""}}"""

_ESCALATE = """\
kind "escalate": when the lines shown are not enough or the task is bigger than a few \
edits; say why in `reason`.
"""


INTENT_SYSTEM = """\
Decide what the user's message asks for. "change": it asks to change, add, remove, rename, \
fix, create or document anything in the code or files. "question": it asks something about \
the code and wants an answer, not a change. Reply with one JSON object: {"intent": "…"}"""

SIZE_SYSTEM = """\
The user's message asks for a change to their code. Say how much it changes: "one place", \
"one file" (several places of one file), or "many" (several files, new files, or a design). \
Reply with one JSON object: {"size": "…"}"""
"""Asked apart from the intent: in the intent request it turned 4 of the bench's 31
questions into changes (none without it)."""


WORDS_SYSTEM = """\
The user's message is about the code of their project. Write the English words and code \
names a programmer would search that code for, to answer or do what it asks: at most six, \
each one word or name. Reply with one JSON object: {"words": ["…"]}"""
"""Asked only of a message that holds no word of the code (`Located.speaks_code`): a
question all in Japanese or Russian otherwise locates nothing but the repository map."""


def words_messages(request: str) -> list[dict[str, Any]]:
    """The short request that asks what to search the code for, from the message alone."""
    return [
        {"role": "system", "content": WORDS_SYSTEM},
        {"role": "user", "content": request},
    ]


def intent_messages(request: str) -> list[dict[str, Any]]:
    """The short request that asks the model what the user's message asks for, alone
    (without the located code, where a 1.5B model read "Give its path" as a change)."""
    return [
        {"role": "system", "content": INTENT_SYSTEM},
        {"role": "user", "content": request},
    ]


def size_messages(request: str) -> list[dict[str, Any]]:
    """The short request that asks how much a change reaches, from the message alone."""
    return [
        {"role": "system", "content": SIZE_SYSTEM},
        {"role": "user", "content": request},
    ]


def system_prompt(offer_escalation: bool, repo_map: str = "") -> str:
    """milk's instructions, then the repository map: the same for every request in a
    workspace, so the model server's prompt cache keeps them."""
    text = _SYSTEM.format(escalate=_ESCALATE if offer_escalation else "")
    if repo_map:
        text += f"\n\nThe workspace's files and what they define:\n{repo_map}"
    return text


def messages(
    request: str,
    located: Located,
    history: Sequence[dict[str, Any]],
    *,
    offer_escalation: bool,
) -> list[dict[str, Any]]:
    """The guided request's messages: instructions, the conversation so far, then the
    located code and the request in one user message."""
    context = located.context(numbered=False)
    context = context or "(milk found nothing in the workspace for this request)"
    user = f"Code from the workspace:\n\n{context}\n\nRequest: {request}"
    return [
        {"role": "system", "content": system_prompt(offer_escalation, located.repo_map)},
        *history,
        {"role": "user", "content": user},
    ]


def repair(
    conversation: list[dict[str, Any]],
    problems: Sequence[str],
    lines: str = "",
    earlier: str | None = None,
) -> list[dict[str, Any]]:
    """The conversation asked again after a failed check, with what milk found and the
    lines that is about (the files as they were before the edits). `earlier`: the earlier
    reply, given back for the model to fix (an answer: a quote to correct in place); None
    leaves it out and asks the request again with the findings after it (edits: given
    back, Qwen2.5-Coder-1.5B at temperature 0 wrote the same edit again word for word)."""
    listed = "\n".join(f"- {problem}" for problem in problems)
    if lines:
        listed += (
            f"\nThe lines it is about, as the files are now (no edit of it was kept):\n\n{lines}\n"
        )
    if earlier is not None:
        return [
            *conversation,
            {"role": "assistant", "content": earlier},
            {
                "role": "user",
                "content": (
                    f"milk checked your reply against the files and found:\n{listed}\n"
                    "Reply again with the whole JSON object, fixed."
                ),
            },
        ]
    note = (
        f"\n\nmilk checked an earlier reply to this request and found:\n{listed}\n"
        "Reply with the whole JSON object, without those mistakes."
    )
    last = conversation[-1]
    return [*conversation[:-1], {**last, "content": f"{last['content']}{note}"}]

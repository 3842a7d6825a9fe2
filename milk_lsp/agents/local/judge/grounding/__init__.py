"""The grounding check of a local answer: what it asserts about this workspace, and whether
that exists.

A small model that guesses names files, functions and options that are not there, and a
good one names those that are. `workspace_claims` takes from an answer what it asserts
about this workspace: file paths (`src/app.py`, `calc.py`, `docs/`), code spans, names that
look like code (snake_case, CamelCase, dotted), `--options`. `ungrounded` returns those found
neither in the turn's evidence (successful tool results, attachments, the user's message)
nor in the `WorkspaceIndex`. The extraction leans towards saying nothing: a claim missed
costs a guess that passes, a claim invented costs a right answer flagged, which is worse.
So it leaves out:

* fenced code blocks (example code the model writes), and names the answer's own code
  defines (`def reverse_list`, `my_list = ...`, `for item in ...`);
* Python keywords, builtins, the methods of the builtin types, the standard library's
  modules and their common names, a few other languages' globals (`console.log`), product
  names (`JavaScript`, `NumPy`, `Node.js`) and placeholders (`my_list`, `foo`, `MyClass`);
* words of plain prose, and single plain words in code spans (`file`, `items`): a word
  counts when it has `_`, an inner capital or a dot, or in a span also a capital, a digit
  or a call (`add()`); names of two characters or less;
* URLs, absolute paths (`/etc/hosts`, `~/.bashrc`), version numbers, the options of
  well-known tools (`pip install --upgrade`);
* what the answer proposes (`create a new file main.py`, `for example foo_bar`) or denies
  (`there is no compute_total()`, `utils.py does not exist`).

`question_claims` is the same extraction for the user's question, where a plain word in a
code span counts too; `about_workspace` says whether the question names something that
exists here, decided by the index. `markup_answer` catches chat-template markup given as
the answer (`<tools></tools>`). Pure: no I/O besides asking the index.
"""

from milk_lsp.agents.local.judge.grounding.claims import Claims, question_claims, workspace_claims
from milk_lsp.agents.local.judge.grounding.verdict import (
    about_workspace,
    markup_answer,
    question_names,
    shows_line_of,
    shows_name,
    ungrounded,
)

__all__ = [
    "Claims",
    "about_workspace",
    "markup_answer",
    "question_claims",
    "question_names",
    "shows_line_of",
    "shows_name",
    "ungrounded",
    "workspace_claims",
]

"""End to end: local edits a small model can make, through the real server and the scripted
model server: read first by construction, forgiving unique matches, symbol edits, and a file
an edit broke never left so silently."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.conftest import Env, MilkClient, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

SLUG = """\
import re

NUMBERS_PATTERN = re.compile(r"(?<=\\d),(?=\\d)")


def truncate(
    text: str,
    max_length: int = 0,
) -> str:
    return text[:max_length]


def slug(
    text: str,
    max_length: int = 0,
) -> str:
    text = NUMBERS_PATTERN.sub("", text)
    return truncate(text, max_length)
"""


def edit(**arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "edit_file", "arguments": arguments}]}


async def chat(client: MilkClient, text: str, route: str = "local") -> dict[str, Any]:
    return await request(client, "milk/chat", {"text": text, "route": route})


def tool_updates(client: MilkClient, turn_id: str, kind: str) -> list[dict[str, Any]]:
    """The model's own calls or results (milk's read-first ones are `milk-read-…`)."""
    return [
        u
        for u in client.turn_updates(turn_id)
        if u["kind"] == kind and not u["toolCallId"].startswith("milk-read-")
    ]


@pytest.fixture
def slug_file(env: Env) -> Any:
    path = env.workspace / "slug.py"
    path.write_text(SLUG)
    return path


async def test_an_old_text_twice_in_the_file_is_matched_inside_the_named_function(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client.permission_answers.append("allow_once")
    openai.enqueue(
        # a small model's old_text: no indentation, no spaces, no trailing comma; two
        # matches in the file, one inside the function the request names
        edit(path="slug.py", old_text="max_length:int=0", new_text="max_length: int = 100"),
        {"text": "Changed the default to 100."},
    )
    result = await chat(client, "In slug.py change the default of max_length of truncate to 100")
    assert result["stopReason"] == "end_turn", result
    results = tool_updates(client, result["turnId"], "tool_result")
    assert results[-1]["output"] == (
        "Edited slug.py: lines 8-8 (matched ignoring differences of indentation, spaces, quotes,"
        " trailing commas and blank lines; the one inside truncate (lines 6-10); old_text also"
        " occurs on line(s) 15, left unchanged)."
    )
    text = slug_file.read_text()
    assert "    max_length: int = 100,\n) -> str:\n    return text[:max_length]" in text
    assert text.count("max_length: int = 0,") == 1  # slug's default stays


async def test_an_ambiguous_old_text_is_refused_with_where_it_occurs(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    openai.enqueue(
        edit(path="slug.py", old_text="max_length: int = 0", new_text="max_length: int = 1"),
        {"text": "I could not make the change."},
    )
    result = await chat(client, "In slug.py set max_length to 1")
    assert result["stopReason"] == "error", result
    [failed] = tool_updates(client, result["turnId"], "tool_result")
    assert "old_text occurs 2 times in slug.py (on lines 8, 15)" in failed["output"]
    assert "or give symbol" in failed["output"]
    assert slug_file.read_text() == SLUG
    assert client.permission_requests == []


async def test_a_symbol_edit_rewrites_a_whole_function(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client.permission_answers.append("allow_once")
    new = (
        'def truncate(text: str, max_length: int = 0) -> str:\n    """Cut text."""\n    return text'
    )
    openai.enqueue(
        edit(path="slug.py", symbol="truncate", new_text=new), {"text": "Added a docstring."}
    )
    result = await chat(client, "Add a docstring to truncate in slug.py")
    assert result["stopReason"] == "end_turn", result
    assert '\n\n\ndef truncate(text: str, max_length: int = 0) -> str:\n    """Cut text."""\n' in (
        slug_file.read_text()
    )
    results = tool_updates(client, result["turnId"], "tool_result")
    assert results[-1]["output"] == "Edited slug.py: lines 6-10 (matched function truncate)."


READER_GO = """\
package reader

import "io"

// Reader counts the bytes it reads.
type Reader struct {
\tsrc io.Reader
\tn   int
}

// Read reads into p.
func (r *Reader) Read(p []byte) (int, error) {
\tn, err := r.src.Read(p)
\tr.n += n
\treturn n, err
}
"""


async def test_a_symbol_edit_rewrites_a_go_method_by_its_receiver_type(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """A Go method named Type.Method, its text given without the doc comment: the
    method is replaced whole, the comment above it stays."""
    path = env.workspace / "reader.go"
    path.write_text(READER_GO)
    client.permission_answers.append("allow_once")
    new = "func (r *Reader) Read(p []byte) (int, error) {\n\treturn r.src.Read(p)\n}"
    openai.enqueue(
        edit(path="reader.go", symbol="Reader.Read", new_text=new), {"text": "Simplified."}
    )
    result = await chat(client, "In reader.go make Reader.Read stop counting")
    assert result["stopReason"] == "end_turn", result
    assert path.read_text() == READER_GO.split("func (r")[0] + new + "\n"
    results = tool_updates(client, result["turnId"], "tool_result")
    assert results[-1]["output"] == "Edited reader.go: lines 12-16 (matched method Reader.Read)."


async def test_replace_all_renames_a_constant_everywhere(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client.permission_answers.append("allow_once")
    openai.enqueue(
        edit(path="slug.py", old_text="NUMBERS_PATTERN", new_text="COMMA", replace_all=True),
        {"text": "Renamed."},
    )
    result = await chat(client, "In slug.py rename NUMBERS_PATTERN to COMMA")
    assert result["stopReason"] == "end_turn", result
    text = slug_file.read_text()
    assert "NUMBERS_PATTERN" not in text and text.count("COMMA") == 2


async def half_done_rename(client: MilkClient, openai: FakeOpenAIServer) -> dict[str, Any]:
    """A turn whose one edit renames NUMBERS_PATTERN's definition and not its use."""
    client.permission_answers.append("allow_once")
    openai.enqueue(
        edit(
            path="slug.py",
            old_text='NUMBERS_PATTERN = re.compile(r"(?<=\\d),(?=\\d)")',
            new_text='COMMA = re.compile(r"(?<=\\d),(?=\\d)")',
        ),
        {"text": "Renamed NUMBERS_PATTERN to COMMA."},
    )
    return await chat(client, "In slug.py rename NUMBERS_PATTERN to COMMA", route="local")


async def test_a_half_done_rename_is_reported_and_the_file_put_back(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    """The definition renamed, its use not: the file parses but uses a name defined nowhere.
    The model is told once (in the tool result); it ends anyway: milk puts the file back and
    the turn is not a success (`edit_broke_file`)."""
    result = await half_done_rename(client, openai)
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_broke_file"
    message = result["error"]["message"]
    assert (
        "slug.py" in message
        and 'NUMBERS_PATTERN (line 17: `text = NUMBERS_PATTERN.sub("", text)`)' in message
    )
    assert "put slug.py back as it was" in message
    [told] = tool_updates(client, result["turnId"], "tool_result")
    assert "But slug.py is broken now: it now uses names that are defined nowhere" in told["output"]
    assert slug_file.read_text() == SLUG
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("put slug.py back as it was before the turn" in n for n in notices)


async def test_a_broken_file_milk_cannot_put_back_says_how_to_undo(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    """The editor has slug.py open: it applies the broken edit, then refuses the edit that
    would put the file back. The turn fails, and the message says the file is left broken
    and how this door undoes the turn (a plain LSP editor: the milk.undo command)."""
    uri = slug_file.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=SLUG
            )
        )
    )
    client.apply_edit_answers.extend([True, False])
    result = await half_done_rename(client, openai)
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_broke_file"
    message = result["error"]["message"]
    assert "milk could not put slug.py back: it is left as the edit made it" in message, message
    assert "(the milk.undo command puts the turn's files back)" in message, message
    assert len(client.applied_edits) == 2


async def test_a_syntax_error_fixed_by_the_next_edit_is_kept(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client.permission_answers.extend(["allow_once", "allow_once"])
    openai.enqueue(
        edit(
            path="slug.py", old_text=") -> str:\n    return text[:max_length]", new_text="-> str:"
        ),
        edit(
            path="slug.py",
            old_text="    max_length: int = 0,\n-> str:",
            new_text=("    max_length: int = 0,\n) -> str:\n    return text"),
        ),
        {"text": "Done."},
    )
    result = await chat(client, "In slug.py make truncate return the whole text")
    assert result["stopReason"] == "end_turn", (
        result,
        tool_updates(client, result["turnId"], "tool_result"),
    )
    first, second = tool_updates(client, result["turnId"], "tool_result")
    assert "no longer parses as Python" in first["output"]
    assert "broken" not in second["output"]
    assert "    max_length: int = 0,\n) -> str:\n    return text\n" in slug_file.read_text()


# ---- local.checkCommand ----------------------------------------------------------------

NO_FIXME = "grep -n FIXME {files}; test $? -eq 1"
"""Passes when the edited files hold no FIXME; fails showing the lines that do."""


async def checked_client(harness: Any, env: Env) -> MilkClient:
    env.settings.setdefault("local", {})["checkCommand"] = NO_FIXME
    return await harness.start()


def checks(client: MilkClient, turn_id: str) -> list[dict[str, Any]]:
    return [
        u
        for u in client.turn_updates(turn_id)
        if u["kind"] in ("tool_call", "tool_result") and u["toolCallId"].startswith("milk-check-")
    ]


def ended(updates: list[dict[str, Any]]) -> list[str]:
    """The statuses the check calls ended with (they ask permission: pending, running)."""
    return [
        u["status"]
        for u in updates
        if u["kind"] == "tool_call" and u["status"] not in ("pending", "running")
    ]


async def test_the_check_command_runs_after_the_edits_with_permission(
    harness: Any, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client = await checked_client(harness, env)
    client.permission_answers.extend(["allow_once", "allow_once"])
    openai.enqueue(
        edit(path="slug.py", old_text="import re", new_text="import re  # patterns"),
        {"text": "Added a comment."},
    )
    result = await chat(client, "In slug.py add a comment to the import")
    assert result["stopReason"] == "end_turn", result
    _, check_ask = client.permission_requests
    assert check_ask["tool"] == "run_command"
    assert check_ask["input"] == {"command": "grep -n FIXME slug.py; test $? -eq 1"}
    ran = checks(client, result["turnId"])
    assert ended(ran) == ["completed"]
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any(
        "check after the local edits: grep -n FIXME slug.py" in n and "passed" in n for n in notices
    )
    assert any("milk checked the local edits: slug.py (Python parses" in n for n in notices)


async def test_a_failed_check_is_told_once_then_is_check_failed(
    harness: Any, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client = await checked_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 3)
    openai.enqueue(
        edit(path="slug.py", old_text="import re", new_text="import re  # FIXME"),
        {"text": "Done."},
        {"text": "Still done."},  # told what the check found, it changes nothing
    )
    result = await chat(client, "In slug.py add a comment to the import")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "check_failed"
    assert "1:import re  # FIXME" in result["error"]["message"]
    told = openai.requests[2]["messages"][-1]["content"]
    assert told.startswith("milk ran the check after your edits and it failed.")
    assert "1:import re  # FIXME" in told


async def test_a_failed_check_the_model_fixes_ends_well(
    harness: Any, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client = await checked_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 4)
    openai.enqueue(
        edit(path="slug.py", old_text="import re", new_text="import re  # FIXME"),
        {"text": "Done."},
        edit(path="slug.py", old_text="import re  # FIXME", new_text="import re  # patterns"),
        {"text": "Fixed the comment."},
    )
    result = await chat(client, "In slug.py add a comment to the import")
    assert result["stopReason"] == "end_turn", result
    assert ended(checks(client, result["turnId"])) == ["failed", "completed"]
    assert slug_file.read_text().startswith("import re  # patterns\n")


async def test_a_check_the_user_denies_is_not_a_failure(
    harness: Any, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client = await checked_client(harness, env)
    client.permission_answers.extend(["allow_once", "deny"])
    openai.enqueue(
        edit(path="slug.py", old_text="import re", new_text="import re  # FIXME"),
        {"text": "Done."},
    )
    result = await chat(client, "In slug.py add a comment to the import")
    assert result["stopReason"] == "end_turn", result
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("the check after the local edits was not run" in n for n in notices)


async def test_a_variant_of_an_edit_already_made_is_shown_the_text_as_it_is_now(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client.permission_answers.append("allow_once")
    openai.enqueue(
        edit(path="slug.py", old_text="import re", new_text="import re  # patterns"),
        edit(path="slug.py", old_text="import re\n", new_text="import re  # regexes\n"),
        {"text": "Added the comment."},
    )
    result = await chat(client, "In slug.py add a comment to the import")
    assert result["stopReason"] == "end_turn", result
    _, second = tool_updates(client, result["turnId"], "tool_result")
    assert second["isError"] is False, second
    assert second["output"].startswith(
        "Nothing changed: old_text is text this turn's earlier edit of slug.py already"
        " replaced. Lines 1-3 now read:\nimport re  # patterns\n"
    )
    assert slug_file.read_text().startswith("import re  # patterns\n\n")


async def test_a_call_written_on_one_line_matches_one_the_file_spreads_over_two(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    (env.workspace / "cli.py").write_text(
        'parser.add_argument("--no-lowercase", action="store_false",\n'
        '                    help="Keep case")\n'
    )
    client.permission_answers.append("allow_once")
    openai.enqueue(
        edit(
            path="cli.py",
            old_text="parser.add_argument('--no-lowercase', action='store_false', help='Keep case')",
            new_text="parser.add_argument('--keep-case', action='store_false', help='Keep case')",
        ),
        {"text": "Renamed the option."},
    )
    result = await chat(client, "In cli.py rename the option --no-lowercase to --keep-case")
    assert result["stopReason"] == "end_turn", result
    assert (env.workspace / "cli.py").read_text() == (
        "parser.add_argument('--keep-case', action='store_false', help='Keep case')\n"
    )
    [done] = tool_updates(client, result["turnId"], "tool_result")
    assert "(matched ignoring differences of spaces, line breaks and quotes)" in done["output"]


async def test_an_edit_repeated_after_it_was_made_changes_nothing_and_is_no_failure(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    client.permission_answers.append("allow_once")
    comment = edit(path="slug.py", old_text="import re", new_text="import re  # patterns")
    openai.enqueue(comment, comment, {"text": "Added the comment."})
    result = await chat(client, "In slug.py add a comment to the import")
    assert result["stopReason"] == "end_turn", result
    _, second = tool_updates(client, result["turnId"], "tool_result")
    assert second["isError"] is False, second
    assert second["output"] == (
        "slug.py already has new_text (line 1) and no longer has old_text: this edit was made"
        " already; nothing to change."
    )
    assert len(client.permission_requests) == 1
    assert slug_file.read_text().startswith("import re  # patterns\n\n")


async def test_a_rename_with_the_text_around_it_miscopied_changes_only_the_name(
    client: MilkClient, env: Env, openai: FakeOpenAIServer, slug_file: Any
) -> None:
    """The 1.5B model's rename: old_text and new_text agree on a regex it miscopied; only the
    name is changed, the file's regex kept. The use left behind is told with the way to
    rename it (replace_all on the bare name), which the model then takes."""
    client.permission_answers.extend(["allow_once", "allow_once"])
    mangled = 're.compile(r"(?<=\\d),(?\\\\d)")'  # `(?=` became `(?\\`
    openai.enqueue(
        edit(
            path="slug.py",
            old_text=f"NUMBERS_PATTERN = {mangled}",
            new_text=f"COMMA_PATTERN = {mangled}",
        ),
        edit(
            path="slug.py", old_text="NUMBERS_PATTERN", new_text="COMMA_PATTERN", replace_all=True
        ),
        {"text": "Renamed NUMBERS_PATTERN to COMMA_PATTERN."},
    )
    result = await chat(client, "In slug.py rename NUMBERS_PATTERN to COMMA_PATTERN")
    assert result["stopReason"] == "end_turn", result
    first, second = tool_updates(client, result["turnId"], "tool_result")
    assert first["output"].startswith(
        "Edited slug.py: lines 3-3 (matched only the part that differs, `NUMBERS_PATTERN` →"
        " `COMMA_PATTERN`: the rest of old_text did not match the file exactly and was left as"
        " the file has it). But slug.py is broken now:"
    )
    assert (
        'rename its uses too (edit_file with old_text "NUMBERS_PATTERN", new_text the new name'
        " and replace_all true)" in first["output"]
    )
    assert second["output"] == "Edited slug.py: lines 17-17."
    assert slug_file.read_text() == SLUG.replace("NUMBERS_PATTERN", "COMMA_PATTERN")


async def test_an_edit_elsewhere_than_the_quoted_change_is_edit_not_made(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """Asked to change "Slug string" to "Make a slug", the model puts the new text on another
    line and says it is done (what the 1.5B model did): "Slug string" is as it was, so the
    turn is not a success."""
    client.permission_answers.append("allow_once")
    cli = env.workspace / "cli.py"
    cli.write_text('parser = make(description="Slug string")\nparser.add(help="Text")\n')
    openai.enqueue(
        edit(path="cli.py", old_text='help="Text"', new_text='help="Make a slug"'),
        {"text": "Changed the description."},
    )
    ask = 'In cli.py change the description from "Slug string" to "Make a slug".'
    result = await chat(client, ask)
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert (
        'the request asks to change "Slug string" to "Make a slug", but the local model\'s edits'
        ' left "Slug string" as it was in cli.py; milk put cli.py back as it was before the'
        " turn." in result["error"]["message"]
    )
    # the edit elsewhere is put back: whoever goes on starts from the file the user had
    assert cli.read_text() == 'parser = make(description="Slug string")\nparser.add(help="Text")\n'
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("milk put cli.py back" in n for n in notices), notices


async def test_edits_that_only_add_blank_space_are_edit_not_made(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """The agent loop's model adds a line of spaces and says the change is made: the real
    diff holds no code, so the turn is not a success and the file is put back."""
    client.permission_answers.append("allow_once")
    cli = env.workspace / "cli.py"
    cli.write_text("parser = make(description='Slug')\n")
    openai.enqueue(
        edit(
            path="cli.py",
            old_text="parser = make(description='Slug')",
            new_text="parser = make(description='Slug')\n    ",
        ),
        {"text": "Отступы добавлены."},
    )
    result = await chat(client, "Добавь пробелы вокруг = в cli.py")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert "only add blank space" in result["error"]["message"]
    assert cli.read_text() == "parser = make(description='Slug')\n"


async def test_the_quoted_change_made_ends_well(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    client.permission_answers.append("allow_once")
    cli = env.workspace / "cli.py"
    cli.write_text('parser = make(description="Slug string")\n')
    openai.enqueue(
        edit(path="cli.py", old_text="Slug string", new_text="Make a slug"),
        {"text": "Changed the description."},
    )
    result = await chat(
        client, 'In cli.py change the description from "Slug string" to "Make a slug".'
    )
    assert result["stopReason"] == "end_turn", result


async def test_a_rename_that_renamed_something_else_is_edit_not_made(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """Asked to rename the dict `suffixes`, the 1.5B model renamed a key inside it (the
    file still works, so no check after the edit objects) and asked for "the necessary
    information": `suffixes` is there as often as before, so the turn is not a success."""
    client.permission_answers.append("allow_once")
    sizes = env.workspace / "sizes.py"
    sizes.write_text(
        'suffixes = {"decimal": " kB"}\n\n\ndef unit():\n    return suffixes["decimal"]\n'
    )
    openai.enqueue(
        edit(path="sizes.py", old_text='"decimal": " kB"', new_text='"SUFFIXES": " kB"'),
        {"text": "To continue, please provide the necessary information to proceed."},
    )
    # the names written as code: the structure that spells the change out (issue 38)
    result = await chat(
        client, "In sizes.py rename the module-level dict `suffixes` to `SUFFIXES`."
    )
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert (
        'the request asks to change "suffixes" to "SUFFIXES", but the local model\'s edits left'
        ' "suffixes" as it was in sizes.py; milk put sizes.py back' in result["error"]["message"]
    )
    assert '"decimal": " kB"' in sizes.read_text()


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain (golang-go)")
async def test_an_agent_edit_that_fails_the_go_tests_is_put_back_as_check_failed(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """One verification for both strategies (issue 38): the agent loop's edits get the
    project's own check too, run before the first edit and after the loop. The message a
    test compares word for word changed: `go vet` passes, `go test -short` fails."""
    (env.workspace / "go.mod").write_text("module example.com/hi\n\ngo 1.19\n")
    greeting = 'package hi\n\nfunc Greeting() string { return "hello" }\n'
    (env.workspace / "msg.go").write_text(greeting)
    (env.workspace / "msg_test.go").write_text(
        'package hi\n\nimport "testing"\n\nfunc TestGreeting(t *testing.T) {\n'
        '\tif Greeting() != "hello" {\n\t\tt.Fatal("wrong greeting")\n\t}\n}\n'
    )
    client.permission_answers.extend(["allow_once"] * 3)
    openai.enqueue(
        edit(path="msg.go", old_text='return "hello"', new_text='return "hi"'),
        {"text": "The greeting is now hi."},
    )
    result = await chat(client, 'In msg.go make Greeting return "hi".')
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "check_failed"
    assert "go test -short ./..." in result["error"]["message"]
    assert "put msg.go back" in result["error"]["message"]
    assert (env.workspace / "msg.go").read_text() == greeting
    asked = [r["input"].get("command") for r in client.permission_requests]
    assert "go vet ./..., then go test -short ./..." in asked, asked  # the baseline, asked

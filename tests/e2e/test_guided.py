"""End to end: guided local turns (issue 38) through the real server and the scripted model
server: milk locates, asks one constrained request, checks the reply by the files, repairs
once, and shows the checked citations."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.e2e.test_terminal_chat import one_shot
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

PARSER = """\
MAX_DEPTH = 256


def parse_nested(text, depth=0):
    \"\"\"Parse nested brackets, at most MAX_DEPTH deep.\"\"\"
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    return text
"""


def reply(**fields: Any) -> dict[str, Any]:
    """A scripted guided reply (the JSON the schema asks for)."""
    shape: dict[str, Any] = {
        "kind": "answer",
        "answer": "",
        "citations": [],
        "proposed": [],
        "edits": [],
        "reason": "",
    }
    shape.update(fields)
    return {"text": json.dumps(shape, ensure_ascii=False)}


def intent(value: str) -> dict[str, Any]:
    """The scripted reply to the turn's first request: what the user's message asks for."""
    return {"text": json.dumps({"intent": value})}


def words(*value: str) -> dict[str, Any]:
    """The scripted reply to the request that asks what to search the code for (asked of a
    request that holds no word of the code)."""
    return {"text": json.dumps({"words": list(value)})}


def size(value: str) -> dict[str, Any]:
    """The scripted reply to the request that asks how much a change reaches."""
    return {"text": json.dumps({"size": value})}


@pytest.fixture
def guided_env(env: Env) -> Env:
    (env.workspace / "parser.py").write_text(PARSER)
    env.settings["local"]["strategy"] = "guided"
    return env


async def chat(client: MilkClient, text: str, route: str = "local") -> dict[str, Any]:
    return await request(client, "milk/chat", {"text": text, "route": route})


def edits_twice(
    answer: str, first: list[dict[str, str]], then: list[dict[str, str]]
) -> tuple[dict[str, Any], ...]:
    """A change's scripted replies: its intent, edits `first`, then edits `then`."""
    return (
        intent("change"),
        reply(kind="edits", answer=answer, edits=first),
        reply(kind="edits", answer=answer, edits=then),
    )


async def sent_back_once(
    openai: FakeOpenAIServer, client: MilkClient, ask: str, *replies: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """`ask` with `replies` scripted, its first reply sent back by milk's check and the turn
    ending right after the repair: the result and the repair request's last message."""
    openai.enqueue(*replies)
    result = await chat(client, ask)
    assert result["stopReason"] == "end_turn", json.dumps(result)
    return result, openai.requests[2]["messages"][-1]["content"]


def kinds(client: MilkClient, turn_id: str, kind: str) -> list[dict[str, Any]]:
    return [u for u in client.turn_updates(turn_id) if u["kind"] == kind]


async def test_a_cited_answer_is_checked_and_shown_with_its_sources(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    openai.enqueue(
        intent("question"),
        reply(
            answer="Yes: `parse_nested` stops past `MAX_DEPTH`, which is 256.",
            citations=[{"path": "parser.py", "line": 2, "quote": "MAX_DEPTH = 256"}],
        ),
    )
    result = await chat(client, "Wie tief darf die Verschachtelung in parse_nested sein?")
    assert result["stopReason"] == "end_turn", result
    asked_intent = openai.requests[0]
    assert asked_intent["response_format"]["json_schema"]["name"] == "milk_intent"
    assert [m["role"] for m in asked_intent["messages"]] == ["system", "user"]  # no code
    body = openai.requests[1]
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["kind"]["enum"] == ["answer", "escalate"]  # a question
    shown = body["messages"][-1]["content"]
    assert "def parse_nested" in shown and "parser.py" in shown  # located before asking
    assert result["text"].startswith("Yes: `parse_nested` stops")
    assert "Sources (checked by milk):\n- parser.py:1" in result["text"]
    (cited,) = kinds(client, result["turnId"], "citations")
    assert cited["citations"][0]["line"] == 1  # the quote's real line, not the model's 2
    assert cited["citations"][0]["uri"].endswith("/parser.py")
    reads = [u for u in kinds(client, result["turnId"], "tool_call")]
    assert reads and all(u["toolCallId"].startswith("milk-look-located") for u in reads)


async def test_a_forged_quote_is_sent_back_once_then_fixed(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    openai.enqueue(
        intent("question"),
        reply(
            answer="The limit is `MAX_DEPTH` = 255.",
            citations=[{"path": "parser.py", "line": 1, "quote": "MAX_DEPTH = 255"}],
        ),
        reply(
            answer="The limit is `MAX_DEPTH` = 256.",
            citations=[{"path": "parser.py", "line": 1, "quote": "MAX_DEPTH = 256"}],
        ),
    )
    result = await chat(client, "是否有嵌套深度的限制？ parse_nested")
    assert result["stopReason"] == "end_turn", result
    assert "256" in result["text"] and "255" not in result["text"]
    repair = openai.requests[2]["messages"][-1]["content"]
    assert openai.requests[2]["messages"][-2]["role"] == "assistant"  # its answer, to fix
    assert "is not in parser.py" in repair
    notices = [u["message"] for u in kinds(client, result["turnId"], "notice")]
    assert any("asked once more" in message for message in notices)


async def test_two_forged_replies_never_end_as_done(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    forged = reply(
        answer="It is defined in `nested/depth.py`.",
        citations=[{"path": "nested/depth.py", "line": 3, "quote": "DEPTH = 9"}],
    )
    openai.enqueue(intent("question"), forged, forged)
    result = await chat(client, "Где определён parse_nested?")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "ungrounded_answer"
    assert "nested/depth.py" in result["error"]["message"]
    assert not kinds(client, result["turnId"], "citations")


async def test_an_invented_file_is_a_false_claim_unless_declared_proposed(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    quote = {"path": "parser.py", "line": 4, "quote": "def parse_nested(text, depth=0):"}
    openai.enqueue(
        intent("question"),
        reply(answer="For example, see `limits.py`.", citations=[quote]),
        reply(
            answer="`parse_nested` has no config; a `limits.py` could hold the limit.",
            citations=[quote],
            proposed=["limits.py"],
        ),
    )
    result = await chat(client, "Could parse_nested read its limit from a config file?")
    assert result["stopReason"] == "end_turn", result
    assert "limits.py is not in the workspace" in openai.requests[2]["messages"][-1]["content"]
    assert "Proposed, not in the workspace yet:\n- limits.py" in result["text"]
    (cited,) = kinds(client, result["turnId"], "citations")
    assert cited["proposed"][0]["path"] == "limits.py"


GERMAN_EDIT = reply(
    kind="edits",
    answer="MAX_DEPTH ist jetzt 512.",
    edits=[{"path": "parser.py", "old_text": "MAX_DEPTH = 256", "new_text": "MAX_DEPTH = 512"}],
)


async def test_an_edit_asked_in_german_is_made_and_judged_by_the_diff(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """ "Setze die maximale Tiefe auf 512." holds no word of the code (`maximale` is no
    `MAX`): the model, asked with the request alone, names what to search for, and the
    code it names is located and shown with the request."""
    client.permission_answers.append("allow_once")
    openai.enqueue(intent("change"), words("MAX_DEPTH", "depth"), GERMAN_EDIT)
    result = await chat(client, "Setze die maximale Tiefe auf 512.")
    assert result["stopReason"] == "end_turn", result
    assert (guided_env.workspace / "parser.py").read_text().startswith("MAX_DEPTH = 512\n")
    assert result["changes"][0]["uri"].endswith("/parser.py")
    asked = openai.requests[1]
    assert asked["response_format"]["json_schema"]["name"] == "milk_words"
    assert [m["role"] for m in asked["messages"]] == ["system", "user"]  # no code sent
    notices = [u["message"] for u in kinds(client, result["turnId"], "notice")]
    assert "milk looked for what the local model named: MAX_DEPTH depth" in notices, notices
    guided = openai.requests[2]
    assert "MAX_DEPTH = 256" in guided["messages"][-1]["content"]
    schema = guided["response_format"]["json_schema"]["schema"]
    edit_path = schema["properties"]["edits"]["items"]["properties"]["path"]
    assert edit_path["enum"] == ["parser.py"]


async def test_a_request_in_no_word_of_the_code_whose_words_name_nothing_locates_nothing(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    client.permission_answers.append("allow_once")
    openai.enqueue(intent("change"), {"text": "Tiefe"}, GERMAN_EDIT)
    result = await chat(client, "Setze die maximale Tiefe auf 512.")
    assert result["stopReason"] == "end_turn", result
    notices = [u["message"] for u in kinds(client, result["turnId"], "notice")]
    assert not any("milk looked for" in notice for notice in notices), notices
    schema = openai.requests[2]["response_format"]["json_schema"]["schema"]
    edit_path = schema["properties"]["edits"]["items"]["properties"]["path"]
    assert "enum" not in edit_path  # nothing located: the map's files are all it knows


async def test_an_edit_that_breaks_the_file_is_repaired_or_put_back(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    client.permission_answers.extend(["allow_once", "allow_once"])
    broken = {"path": "parser.py", "old_text": "MAX_DEPTH = 256", "new_text": "MAX_DEPTH = ("}
    openai.enqueue(
        *edits_twice("Done.", [broken], [broken]),
    )
    result = await chat(client, "Make the depth limit of parse_nested configurable.")
    assert result["stopReason"] == "error", result
    schema = openai.requests[1]["response_format"]["json_schema"]["schema"]
    edit_path = schema["properties"]["edits"]["items"]["properties"]["path"]
    assert edit_path["enum"] == ["parser.py"]  # only a file whose lines were shown
    assert result["error"]["data"]["signal"] == "edit_broke_file"
    assert (guided_env.workspace / "parser.py").read_text() == PARSER
    assert "broken" in openai.requests[2]["messages"][-1]["content"]


async def test_lines_an_edit_copied_but_did_not_write_back_are_kept_when_the_file_needs_them(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """The old lines run past what the new text rewrites (the signature and the two lines
    after it, the signature alone written back): as given the file no longer parses, with
    those lines kept it does, so milk keeps them and says so. The request's numbers (0 to
    1) are changed, so the diff does what was asked."""
    client.permission_answers.append("allow_once")
    old_lines = [
        "def parse_nested(text, depth=0):",
        '    """Parse nested brackets, at most MAX_DEPTH deep."""',
        "    if depth > MAX_DEPTH:",
    ]
    edit = {
        "path": "parser.py",
        "old_text": "\n".join(old_lines),
        "new_text": "def parse_nested(text, depth=1):",
    }
    openai.enqueue(intent("change"), reply(kind="edits", answer="Done.", edits=[edit]))
    result = await chat(client, "Change the default depth of parse_nested from 0 to 1.")
    assert result["stopReason"] == "end_turn", result
    text = (guided_env.workspace / "parser.py").read_text()
    assert text == PARSER.replace("depth=0)", "depth=1)")
    notices = [u["message"] for u in kinds(client, result["turnId"], "notice")]
    assert any("kept 2 lines of parser.py the edit dropped" in m for m in notices), notices
    schema = openai.requests[1]["response_format"]["json_schema"]["schema"]
    texts = schema["properties"]["edits"]["items"]["properties"]["old_text"]["enum"]
    assert "\n".join(old_lines) in texts and all(text in PARSER for text in texts)


async def test_edits_that_leave_every_file_as_it_was_are_not_a_change_made(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """Each edit applies, and together they leave the file as it was (humanize's docstring
    task: the tool found the edit "made already", nothing changed, and the turn ended as
    done): the turn's real diff is empty, so the change was not made, twice, and it ends
    failed, never as done."""
    client.permission_answers.extend(["allow_session"])
    there = {"path": "parser.py", "old_text": "MAX_DEPTH = 256", "new_text": "MAX_DEPTH = 128"}
    back = {"path": "parser.py", "old_text": "MAX_DEPTH = 128", "new_text": "MAX_DEPTH = 256"}
    made = reply(kind="edits", answer="Added a docstring.", edits=[there, back])
    openai.enqueue(intent("change"), made, made)
    result = await chat(client, "Add a one-line docstring to MAX_DEPTH's module.")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert "changed no file" in openai.requests[2]["messages"][-1]["content"]
    assert (guided_env.workspace / "parser.py").read_text() == PARSER


async def test_edits_that_only_add_blank_space_are_not_a_change_made(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """Asked in French for spaces around `=`, the model adds lines of two spaces after each
    line (ini's whitespace-default-fr): the files parse and differ, but no code changed. It
    is sent back once with that reason, and the second such reply ends failed, the file put
    back, never as done."""
    client.permission_answers.extend(["allow_session"])
    blank = {"path": "parser.py", "old_text": "MAX_DEPTH = 256", "new_text": "MAX_DEPTH = 256\n  "}
    made = reply(kind="edits", answer="Espaces ajoutés.", edits=[blank])
    openai.enqueue(intent("change"), made, made)
    result = await chat(client, "Mets des espaces autour du = dans parse_nested (depth = 0).")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert "only add blank space" in openai.requests[2]["messages"][-1]["content"]
    assert (guided_env.workspace / "parser.py").read_text() == PARSER


async def test_a_server_without_json_schemas_gets_the_shape_checked(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    openai.enqueue(
        intent("question"),
        {"status": 400, "body": {"error": {"message": "response_format not supported"}}},
        {
            "text": "```json\n"
            + json.dumps(
                {
                    "kind": "answer",
                    "answer": "256 (`MAX_DEPTH`).",
                    "citations": [{"path": "parser.py", "line": 1, "quote": "MAX_DEPTH = 256"}],
                }
            )
            + "\n```"
        },
    )
    result = await chat(client, "What is MAX_DEPTH?")
    assert result["stopReason"] == "end_turn", result
    assert "response_format" not in openai.requests[2]
    assert result["text"].startswith("256")


async def test_a_plain_answer_that_names_nothing_of_the_workspace_needs_no_citation(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    openai.enqueue(intent("question"), reply(answer="Hello! Ask me about this code."))
    result = await chat(client, "hi")
    assert result["stopReason"] == "end_turn", result
    assert "Sources" not in result["text"]


def test_the_terminal_prints_the_checked_sources_as_path_line(
    guided_env: Env, openai: FakeOpenAIServer
) -> None:
    openai.enqueue(
        intent("question"),
        reply(
            answer="256 (`MAX_DEPTH`).",
            citations=[{"path": "parser.py", "line": 1, "quote": "MAX_DEPTH = 256"}],
        ),
    )
    done = one_shot(guided_env, "--route", "local", "--", "What is MAX_DEPTH?")
    assert done.returncode == 0, done.stderr
    assert "Sources (checked by milk):\n- parser.py:1" in done.stdout
    assert done.stdout.count("parser.py:1") == 1


GO_A = "package calc\n\nfunc addOne(n int) int {\n\treturn n + 1\n}\n"
GO_B = "package calc\n\nfunc AddTwo(n int) int {\n\treturn addOne(addOne(n))\n}\n"


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain (golang-go)")
async def test_a_go_rename_of_the_definition_alone_is_finished_by_milk_and_built(
    env: Env, openai: FakeOpenAIServer, harness: Harness
) -> None:
    """The Go rename of issue 38: the model renames the definition and stops (google/uuid's
    `xtob`); milk reads the rename from that edit, renames the uses left (each an edit of
    its own, asked and parsed), and `go vet ./...` then the short tests pass."""
    (env.workspace / "go.mod").write_text("module example.com/calc\n\ngo 1.19\n")
    (env.workspace / "a.go").write_text(GO_A)
    (env.workspace / "b.go").write_text(GO_B)
    env.settings["local"]["strategy"] = "guided"
    client = await harness.start()
    client.permission_answers.extend(["allow_session"] * 6)
    define = {"path": "a.go", "old_text": "func addOne(", "new_text": "func incr("}
    openai.enqueue(
        intent("change"), reply(kind="edits", answer="Renamed addOne to incr.", edits=[define])
    )
    result = await chat(client, "Benenne addOne in incr um.")
    assert result["stopReason"] == "end_turn", result
    assert len(openai.requests) == 2  # what is asked, then the one reply: no repair
    assert "func incr(" in (env.workspace / "a.go").read_text()
    assert "incr(incr(n))" in (env.workspace / "b.go").read_text()
    assert "addOne" not in (env.workspace / "b.go").read_text()
    notices = [u["message"] for u in kinds(client, result["turnId"], "notice")]
    assert any("milk renamed the other uses of addOne to incr" in m for m in notices), notices
    passed = "go vet ./..., then go test -short ./... passed"
    assert any(passed in message for message in notices), notices


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain (golang-go)")
async def test_a_go_edit_that_vets_but_fails_a_test_is_sent_back_with_the_tests_line(
    env: Env, openai: FakeOpenAIServer, harness: Harness
) -> None:
    """`go vet` passes, the package's test compares the old message word for word: the
    short tests after the edits fail it, and the repair shows the test's line."""
    (env.workspace / "go.mod").write_text("module example.com/hi\n\ngo 1.19\n")
    (env.workspace / "msg.go").write_text(
        'package hi\n\nfunc Greeting() string { return "hello" }\n'
    )
    (env.workspace / "msg_test.go").write_text(
        'package hi\n\nimport "testing"\n\nfunc TestGreeting(t *testing.T) {\n'
        '\tif Greeting() != "hello" {\n\t\tt.Fatal("wrong greeting")\n\t}\n}\n'
    )
    env.settings["local"]["strategy"] = "guided"
    client = await harness.start()
    client.permission_answers.extend(["allow_session"] * 6)
    code = {"path": "msg.go", "old_text": 'return "hello"', "new_text": 'return "hi"'}
    test = {
        "path": "msg_test.go",
        "old_text": 'Greeting() != "hello"',
        "new_text": 'Greeting() != "hi"',
    }
    _, repair = await sent_back_once(
        openai,
        client,
        'Cambia el saludo de "hello" a "hi".',
        *edits_twice("The greeting is now hi.", [code], [code, test]),
    )
    assert "go test -short ./..." in repair and "--- msg_test.go lines" in repair, repair
    assert 'Greeting() != "hi"' in (env.workspace / "msg_test.go").read_text()


async def test_edits_given_up_in_words_after_they_failed_are_not_done(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """The model's edits broke the file and were put back; asked once more, it answered in
    words ("the edits failed, nothing to change") with its reply read as a question: the
    change it began is not made, so the turn does not end as done (slugify's bench)."""
    client.permission_answers.extend(["allow_once", "allow_once"])
    broken = {"path": "parser.py", "old_text": "MAX_DEPTH = 256", "new_text": "MAX_DEPTH = ("}
    openai.enqueue(
        intent("change"),
        reply(intent="change", kind="edits", answer="Done.", edits=[broken]),
        reply(intent="question", answer="The edits failed, so there is nothing to change."),
    )
    result = await chat(client, "Make the depth limit of parse_nested configurable.")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert (guided_env.workspace / "parser.py").read_text() == PARSER


async def test_a_change_answered_in_words_is_not_done(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """The model reads the request as a change and only says it is made: the files did not
    change, so the turn does not end as done (the bench's doc-comment task)."""
    said = reply(
        intent="change",
        answer="Added a doc comment to `parse_nested`.",
        citations=[{"path": "parser.py", "line": 4, "quote": "def parse_nested(text, depth=0):"}],
    )
    openai.enqueue(intent("change"), said, said)
    result = await chat(client, "Füge parse_nested einen Kommentar hinzu.")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "edit_not_made"
    assert "gave no edits" in openai.requests[2]["messages"][-1]["content"]
    assert (guided_env.workspace / "parser.py").read_text() == PARSER


async def test_a_question_answered_by_creating_a_file_is_sent_back(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    client.permission_answers.append("allow_once")
    invented = {"path": "limits.py", "old_text": "", "new_text": "max_depth = 10\n"}
    openai.enqueue(
        intent("question"),
        reply(intent="question", kind="edits", answer="Created limits.py.", edits=[invented]),
        reply(
            intent="question",
            answer="Yes: `MAX_DEPTH` is 256.",
            citations=[{"path": "parser.py", "line": 1, "quote": "MAX_DEPTH = 256"}],
        ),
    )
    result = await chat(client, "Is there a limit on how deeply parse_nested can nest?")
    assert result["stopReason"] == "end_turn", result
    assert not (guided_env.workspace / "limits.py").exists()
    assert "answer it without changing files" in openai.requests[2]["messages"][-1]["content"]


async def test_edits_away_from_what_the_request_names_are_put_back_and_sent_back(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    far = "def helper():\n    return 1\n" + "\n" * 12 + "def parse_list(text):\n    return text\n"
    (guided_env.workspace / "lists.py").write_text(far)
    client.permission_answers.extend(["allow_once", "allow_once"])
    away = {"path": "lists.py", "old_text": "    return 1\n", "new_text": "    return 2\n"}
    near = {
        "path": "lists.py",
        "old_text": "def parse_list(text):\n",
        "new_text": 'def parse_list(text):\n    """Parse a list."""\n',
    }
    openai.enqueue(
        intent("change"),
        reply(intent="change", kind="edits", answer="Done.", edits=[away]),
        reply(intent="change", kind="edits", answer="Docstring added.", edits=[near]),
    )
    result = await chat(client, "Füge parse_list einen Docstring hinzu.")
    assert result["stopReason"] == "end_turn", result
    assert "away from what the request names" in openai.requests[2]["messages"][-1]["content"]
    text = (guided_env.workspace / "lists.py").read_text()
    assert "return 1" in text and '"""Parse a list."""' in text


async def test_a_quoted_change_left_undone_by_the_edits_is_sent_back(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """cross-env's stdio task: asked to change 'inherit' to 'pipe' (straight single quotes),
    the model added a line elsewhere and said it was done; 'inherit' stood as it was."""
    index_js = (
        "const proc = spawn(command, args, {\n  stdio: 'inherit',\n  shell: true,\n})\n"
        "process.on('SIGTERM', () => proc.kill('SIGTERM'))\n"
    )
    (guided_env.workspace / "index.js").write_text(index_js)
    client.permission_answers.extend(["allow_once", "allow_once"])
    sigterm = "process.on('SIGTERM', () => proc.kill('SIGTERM'))\n"
    sigint = sigterm.replace("SIGTERM", "SIGINT")
    elsewhere = {"path": "index.js", "old_text": sigterm, "new_text": sigterm + sigint}
    right = {"path": "index.js", "old_text": "stdio: 'inherit',", "new_text": "stdio: 'pipe',"}
    openai.enqueue(
        intent("change"),
        reply(intent="change", kind="edits", answer="Cambiado a 'pipe'.", edits=[elsewhere]),
        reply(intent="change", kind="edits", answer="Cambiado a 'pipe'.", edits=[right]),
    )
    result = await chat(client, "En index.js cambia la opción stdio de 'inherit' a 'pipe'.")
    assert result["stopReason"] == "end_turn", result
    repair = openai.requests[2]["messages"][-1]["content"]
    assert 'left "inherit" as it was' in repair, repair
    roles = [message["role"] for message in openai.requests[2]["messages"]]
    assert "assistant" not in roles  # the request again, not the missed edit to copy
    # the repair shows where 'inherit' stands, and lets the edit copy that line
    assert "index.js lines 1-4 (what the request names)" in repair, repair
    assert "2|   stdio: 'inherit'," in repair, repair
    schema = openai.requests[2]["response_format"]["json_schema"]["schema"]
    texts = schema["properties"]["edits"]["items"]["properties"]["old_text"]["enum"]
    assert "  stdio: 'inherit'," in texts
    # and only those lines: the edit that missed is not there to copy again
    assert not any("SIGTERM" in text for text in texts), texts
    assert (guided_env.workspace / "index.js").read_text() == index_js.replace(
        "'inherit'", "'pipe'"
    )


async def test_two_edits_of_one_line_are_not_applied_and_sent_back(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """dotenv's quiet-option: the reply's last edit replaced the line its first had edited
    (the ENCODING option was no longer read). Not applied: sent back with why, then the
    one edit lands and the other options stand."""
    options_js = (
        "const options = {}\n\nif (process.env.CONFIG_ENCODING != null) {\n"
        "  options.encoding = process.env.CONFIG_ENCODING\n}\n\nmodule.exports = options\n"
    )
    (guided_env.workspace / "options.js").write_text(options_js)
    client.permission_answers.extend(["allow_once"])
    encoding = "if (process.env.CONFIG_ENCODING != null) {"
    quiet = "if (process.env.CONFIG_QUIET != null) {\n  options.quiet = process.env.CONFIG_QUIET\n}"
    first = {"path": "options.js", "old_text": encoding, "new_text": f"{encoding}\n  // read"}
    over = {"path": "options.js", "old_text": encoding, "new_text": quiet}
    right = {
        "path": "options.js",
        "old_text": "module.exports = options",
        "new_text": f"{quiet}\n\nmodule.exports = options",
    }
    _, repair = await sent_back_once(
        openai,
        client,
        "In options.js also read CONFIG_QUIET into options.quiet.",
        *edits_twice("Added.", [first, over], [right]),
    )
    assert "two edits change the same lines of options.js" in repair, repair
    text = (guided_env.workspace / "options.js").read_text()
    assert encoding in text and "options.quiet = process.env.CONFIG_QUIET" in text
    assert "// read" not in text  # the crossed edits were never applied


async def test_edits_in_another_file_than_the_one_named_are_sent_back_to_its_lines(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """cross-env's normalize-default: asked to change a default in src/command.js, the model
    changed a comment in src/index.js, which calls the function. Sent back, the repair's
    edits may copy only the named file's lines where the request's texts stand."""
    src = guided_env.workspace / "src"
    src.mkdir()
    command_js = (
        "function commandConvert(command, env, normalize = false) {\n"
        "  return normalize ? command.trim() : command\n}\n\nmodule.exports = commandConvert\n"
    )
    index_js = (
        "const commandConvert = require('./command')\n"
        "// by default normalize is `false`, so not run for cmd args\n"
        "module.exports = (command, env) => commandConvert(command, env, true)\n"
    )
    (src / "command.js").write_text(command_js)
    (src / "index.js").write_text(index_js)
    client.permission_answers.extend(["allow_once", "allow_once"])
    comment = "// by default normalize is `false`, so not run for cmd args"
    wrong = {
        "path": "src/index.js",
        "old_text": comment,
        "new_text": comment.replace("false", "true"),
    }
    head = "function commandConvert(command, env, normalize = false) {"
    right = {"path": "src/command.js", "old_text": head, "new_text": head.replace("false", "true")}
    ask = "In src/command.js change the default value of normalize of commandConvert to true."
    _, repair = await sent_back_once(
        openai,
        client,
        ask,
        *edits_twice("Changed.", [wrong], [right]),
    )
    assert "it names src/command.js, the edits changed src/index.js" in repair, repair
    schema = openai.requests[2]["response_format"]["json_schema"]["schema"]
    item = schema["properties"]["edits"]["items"]
    assert item["properties"]["path"]["enum"] == ["src/command.js"], item
    assert head in item["properties"]["old_text"]["enum"]
    assert (src / "index.js").read_text() == index_js
    assert "normalize = true" in (src / "command.js").read_text()


async def test_edits_that_change_nothing_are_left_out_and_alone_are_no_change(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """cross-env's stdio-pipe: the model's edits gave old texts back as they were. Alone
    they are the change not made, sent back; beside a real edit they are left out."""
    index_js = "const proc = spawn(command, args, {\n  stdio: 'inherit',\n  shell: true,\n})\n"
    (guided_env.workspace / "index.js").write_text(index_js)
    client.permission_answers.extend(["allow_once"])
    same = {"path": "index.js", "old_text": "  shell: true,", "new_text": "  shell: true,"}
    right = {"path": "index.js", "old_text": "  stdio: 'inherit',", "new_text": "  stdio: 'pipe',"}
    _, repair = await sent_back_once(
        openai,
        client,
        "En index.js cambia stdio de 'inherit' a 'pipe'.",
        *edits_twice("Hecho.", [same], [same, right]),
    )
    assert "each edit's new_text is its old_text" in repair, repair
    assert (guided_env.workspace / "index.js").read_text() == index_js.replace("inherit", "pipe")


async def test_an_answer_that_repeats_itself_is_asked_again_without_it(
    guided_env: Env, openai: FakeOpenAIServer, client: MilkClient
) -> None:
    """cross-env's sigint-exit-code: an answer that said one sentence again and again was
    ended by milk, given back with the repair, and repeated again. Now the request is asked
    again with what milk found, not the reply to copy."""
    loop = "parse_nested stops at MAX_DEPTH, and then it stops. " * 12
    openai.enqueue(
        intent("question"),
        reply(citations=[{"path": "parser.py", "quote": "MAX_DEPTH = 256"}], answer=loop),
        reply(
            citations=[{"path": "parser.py", "quote": "MAX_DEPTH = 256"}],
            answer="`parse_nested` stops past `MAX_DEPTH`, 256.",
        ),
    )
    result = await chat(client, "How deep may parse_nested nest?")
    assert result["stopReason"] == "end_turn", json.dumps(result)
    repair = openai.requests[2]["messages"]
    assert "assistant" not in [message["role"] for message in repair]
    assert "it repeated itself" in repair[-1]["content"], repair[-1]["content"]
    assert result["text"].startswith("`parse_nested` stops past")

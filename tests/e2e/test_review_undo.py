"""End to end: diffs before and undo after, for the local agent's edits and commands.

The real server over stdio with the scripted model server; the files are real, and undo is
checked byte for byte."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "'hello'", "new_text": "'hi there'"},
}


def command(text: str) -> dict[str, Any]:
    return {"name": "run_command", "arguments": {"command": text}}


async def chat(client: MilkClient, text: str, session_id: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"text": text, "route": "local"}
    if session_id:
        params["sessionId"] = session_id
    return await request(client, "milk/chat", params)


def changes_update(client: MilkClient, turn_id: str) -> dict[str, Any]:
    kinds = client.kinds(turn_id)
    assert kinds[-2:] == ["changes", "turn_ended"], kinds
    return client.turn_updates(turn_id)[-2]


async def test_edit_is_previewed_then_listed_and_undone(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    hello = env.workspace / "hello.py"
    original = hello.read_bytes()
    client.permission_answers.append("allow_once")
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "Changed the greeting."})
    result = await chat(client, "make the greeting friendlier")
    assert result["stopReason"] == "end_turn", result
    [asked] = client.permission_requests
    assert asked["edits"] == [
        {
            "uri": hello.as_uri(),
            "before": original.decode(),
            "after": "def greet():\n    return 'hi there'\n",
        }
    ]
    pending = [
        u["status"]
        for u in client.turn_updates(result["turnId"])
        if u["kind"] == "tool_call" and u["name"] == "edit_file"
    ]
    assert pending[:2] == ["running", "pending"], pending
    summary = [{"uri": hello.as_uri(), "kind": "modified", "added": 1, "removed": 1}]
    assert result["changes"] == summary
    assert changes_update(client, result["turnId"])["changes"] == summary
    assert result["nextRoute"]["agent"] == "local"

    ids = {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    listed = await request(client, "milk/turn/changes", ids)
    assert listed == {
        "changes": [
            {
                "uri": hello.as_uri(),
                "kind": "modified",
                "before": original.decode(),
                "after": "def greet():\n    return 'hi there'\n",
            }
        ]
    }
    undone = await request(client, "milk/turn/undo", ids)
    assert undone == {"restored": [hello.as_uri()]}
    assert hello.read_bytes() == original
    assert await request(client, "milk/turn/undo", ids) == {"restored": []}
    assert (await request(client, "milk/turn/changes", ids))["undone"] is True
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    [info] = got["turnInfo"]
    assert info["undone"] is True and info["changes"] == summary


async def test_command_changes_are_seen_and_undone_byte_for_byte(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    ws = env.workspace
    (ws / "gone.txt").write_bytes(b"keep me\r\nplease\n")
    blob = bytes(range(256)) * 4
    (ws / "data.bin").write_bytes(blob)
    (ws / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (ws / "tool.sh").chmod(0o755)
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    script = (
        "printf 'new file\\n' > made.txt && rm gone.txt && printf 'xx' >> data.bin"
        " && printf 'echo bye\\n' >> tool.sh && printf 'ignored' > build/out.o"
    )
    client.permission_answers.append("allow_once")
    openai.enqueue({"tool_calls": [command(script)]}, {"text": "Ran it."})
    result = await chat(client, "run the build step")
    assert result["stopReason"] == "end_turn", result
    kinds = {Path(c["uri"]).name: (c["kind"], c["added"], c["removed"]) for c in result["changes"]}
    assert kinds == {
        "made.txt": ("created", 1, 0),
        "gone.txt": ("deleted", 0, 2),
        "data.bin": ("modified", 0, 0),
        "tool.sh": ("modified", 1, 0),
    }
    ids = {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    listed = {
        Path(c["uri"]).name: c for c in (await request(client, "milk/turn/changes", ids))["changes"]
    }
    assert listed["made.txt"] == {
        "uri": (ws / "made.txt").as_uri(),
        "kind": "created",
        "after": "new file\n",
    }
    assert (
        listed["gone.txt"]["before"] == "keep me\r\nplease\n" and "after" not in listed["gone.txt"]
    )
    assert listed["data.bin"]["binary"] is True and "before" not in listed["data.bin"]

    await request(client, "milk/turn/undo", ids)
    assert not (ws / "made.txt").exists()
    assert (ws / "gone.txt").read_bytes() == b"keep me\r\nplease\n"
    assert (ws / "data.bin").read_bytes() == blob
    assert (ws / "tool.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert (ws / "tool.sh").stat().st_mode & 0o777 == 0o755
    assert (ws / "build" / "out.o").read_text() == "ignored"  # ignored: never touched


async def test_undo_refuses_a_file_changed_since_unless_forced(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    hello = env.workspace / "hello.py"
    original = hello.read_bytes()
    client.permission_answers.append("allow_once")
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "Done."})
    first = await chat(client, "edit it")
    hello.write_text("the user's own text\n")
    ids = {"sessionId": first["sessionId"], "turnId": first["turnId"]}
    with pytest.raises(JsonRpcException) as refused:
        await request(client, "milk/turn/undo", ids)
    data = refused.value.data
    assert data["reason"] == "undo_conflict" and data["files"] == [hello.as_uri()]
    assert "hello.py" in refused.value.message and "force" in refused.value.message
    assert hello.read_text() == "the user's own text\n"
    await request(client, "milk/turn/undo", {**ids, "force": True})
    assert hello.read_bytes() == original


async def test_undo_of_an_older_turn_conflicts_with_a_newer_one(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    client.permission_answers.extend(["allow_once", "allow_once"])
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "One."})
    first = await chat(client, "edit it")
    again = {
        "name": "edit_file",
        "arguments": {"path": "hello.py", "old_text": "'hi there'", "new_text": "'hello'"},
    }
    openai.enqueue({"tool_calls": [again]}, {"text": "Two."})
    second = await chat(client, "and back", first["sessionId"])
    assert second["changes"], second
    # the file is byte-equal to what the first turn found, yet a newer turn touched it
    with pytest.raises(JsonRpcException) as refused:
        await request(
            client, "milk/turn/undo", {"sessionId": first["sessionId"], "turnId": first["turnId"]}
        )
    assert refused.value.data["reason"] == "undo_conflict"
    # undoing the newer turn first clears the way
    await request(
        client, "milk/turn/undo", {"sessionId": second["sessionId"], "turnId": second["turnId"]}
    )
    restored = await request(
        client, "milk/turn/undo", {"sessionId": first["sessionId"], "turnId": first["turnId"]}
    )
    assert restored["restored"] == [(env.workspace / "hello.py").as_uri()]
    assert (env.workspace / "hello.py").read_text() == "def greet():\n    return 'hello'\n"


async def test_cancelled_turn_lists_and_undoes_what_it_changed(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    client.permission_answers.extend(["allow_once", "hang"])
    openai.enqueue(
        {"tool_calls": [command("printf 'half\\n' > half.txt")]},
        {"tool_calls": [EDIT]},
    )
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    turn = asyncio.ensure_future(chat(client, "two steps", session["sessionId"]))
    await client.wait_for_update(
        lambda u: u["kind"] == "tool_call" and u["status"] == "pending" and u["name"] == "edit_file"
    )
    assert (await request(client, "milk/cancel", {"sessionId": session["sessionId"]}))["cancelled"]
    result = await turn
    assert result["stopReason"] == "cancelled"
    assert [Path(c["uri"]).name for c in result["changes"]] == ["half.txt"]
    await request(
        client, "milk/turn/undo", {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    )
    assert not (env.workspace / "half.txt").exists()
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    statuses = [c["status"] for c in got["turns"][-1]["toolCalls"]]
    assert statuses == ["completed", "denied"], statuses


async def test_reloaded_history_keeps_denied_errors_usage_and_route(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    client = await harness.start()
    client.permission_answers.append("deny")
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "You said no."})
    first = await chat(client, "edit it")
    openai.enqueue({"status": 500})
    second = await chat(client, "again", first["sessionId"])
    assert second["stopReason"] == "error"
    await harness.stop(client)
    client = await harness.start()  # a restart: only the store remembers
    got = await request(client, "milk/session/get", {"sessionId": first["sessionId"]})
    [call] = got["turns"][1]["toolCalls"]
    assert call["status"] == "denied" and call["isError"] is True
    infos = {info["turnId"]: info for info in got["turnInfo"]}
    assert infos[first["turnId"]]["stopReason"] == "end_turn"
    assert infos[first["turnId"]]["usage"]["outputTokens"] > 0
    assert infos[first["turnId"]]["model"] == "fake-model"  # the badge of a reload
    assert "changes" not in infos[first["turnId"]]
    assert infos[second["turnId"]]["stopReason"] == "error"
    assert infos[second["turnId"]]["error"] == second["error"]
    assert got["session"]["nextRoute"] == {
        "agent": "local",
        "reason": "local model first; it hands hard turns to Claude",
    }


async def test_message_request_fallback_shows_a_unified_diff(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    client = await harness.start(milk_permission=False)
    client.message_answers.append("Allow once")
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "Done."})
    result = await chat(client, "edit it")
    assert result["stopReason"] == "end_turn"
    [question] = client.message_requests
    path = env.workspace / "hello.py"
    # the diff, then one short line, who asks for what (issue 20 item 18; issue 31: the diff
    # is in view when the choices open, and a one-line area keeps the question)
    assert question.message == (
        "--- a/hello.py\n+++ b/hello.py\n@@ -1,2 +1,2 @@\n def greet():\n-    return 'hello'\n"
        "+    return 'hi there'\n\nThe local model asks to edit hello.py (+1 -1) with edit_file."
    )
    transcript = env.storage / "transcripts" / f"{result['sessionId']}.md"
    for _ in range(100):  # written on disk just after the turn's end
        text = await asyncio.to_thread(transcript.read_text)
        if "*Done.*" in text:
            break
        await asyncio.sleep(0.1)
    assert "```diff\n--- a/hello.py\n+++ b/hello.py\n" in text and str(path) not in text
    assert "-    return 'hello'\n+    return 'hi there'" in text


async def test_unknown_turn_and_bad_params(client: MilkClient, env: Env) -> None:
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    with pytest.raises(JsonRpcException) as unknown:
        await request(
            client, "milk/turn/undo", {"sessionId": session["sessionId"], "turnId": "nope"}
        )
    assert unknown.value.data["reason"] == "turn_not_found"
    with pytest.raises(JsonRpcException) as bad:
        await request(client, "milk/turn/changes", {"sessionId": session["sessionId"]})
    assert bad.value.code == -32602 and "turnId" in bad.value.message


async def test_an_unsaved_buffer_edit_is_undone_through_the_editor(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    uri = (env.workspace / "hello.py").as_uri()
    unsaved = "def greet():\n    return 'hello (unsaved)'\n"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=unsaved
            )
        )
    )
    client.permission_answers.append("allow_once")
    edit = {"path": "hello.py", "old_text": "hello (unsaved)", "new_text": "hi"}
    openai.enqueue({"tool_calls": [{"name": "edit_file", "arguments": edit}]}, {"text": "edited"})
    result = await chat(client, "edit")
    [asked] = client.permission_requests
    assert asked["edits"][0]["before"] == unsaved  # the buffer, not the disk
    edited = "def greet():\n    return 'hi'\n"
    assert result["changes"] == [{"uri": uri, "kind": "modified", "added": 1, "removed": 1}]
    # the editor applied it: its buffer now holds the edit (still unsaved)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    ids = {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    listed = await request(client, "milk/turn/changes", ids)
    assert listed["changes"] == [
        {"uri": uri, "kind": "modified", "before": unsaved, "after": edited}
    ]
    assert await request(client, "milk/turn/undo", ids) == {"restored": [uri]}
    [change] = client.applied_edits[-1].edit.changes[uri]
    assert change.new_text == unsaved
    assert (env.workspace / "hello.py").read_text() == "def greet():\n    return 'hello'\n"


async def test_reloaded_text_and_tool_calls_keep_their_live_order(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    read = {"name": "read_file", "arguments": {"path": "hello.py"}}
    openai.enqueue({"text": "Let me look.", "tool_calls": [read]}, {"text": "It greets."})
    result = await chat(client, "what does hello.py do?")
    live = [
        ("text", u["delta"]) if u["kind"] == "text" else ("call", u["toolCallId"])
        for u in client.turn_updates(result["turnId"])
        if u["kind"] == "text" or (u["kind"] == "tool_call" and u["status"] == "running")
    ]
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    answer = got["turns"][-1]
    segments = answer["segments"]
    assert [next(iter(s)) for s in segments] == ["text", "toolCallId", "text"]
    assert segments[1]["toolCallId"] == answer["toolCalls"][0]["toolCallId"]
    assert "".join(s.get("text", "") for s in segments) == answer["text"]
    # the same order as the live stream: the text before the call, the call, the rest
    call_at = live.index(("call", segments[1]["toolCallId"]))
    assert "".join(d for kind, d in live[:call_at] if kind == "text") == segments[0]["text"]


def undo_from_terminal(env: Env, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "milk_lsp", "undo", "--workspace", str(env.workspace)]
    argv += ["--storage-dir", str(env.storage), *flags]
    return subprocess.run(
        argv, env=env.server_env(), capture_output=True, text=True, timeout=60, check=False
    )


async def test_milk_lsp_undo_from_the_terminal(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    client = await harness.start()
    client.permission_answers.extend(["allow_once", "allow_once"])
    openai.enqueue({"tool_calls": [command("printf 'one\\n' > one.txt")]}, {"text": "One."})
    first = await chat(client, "make one")
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "Two."})
    await chat(client, "and edit", first["sessionId"])
    await harness.stop(client)
    hello = env.workspace / "hello.py"
    hello.write_text("the user's own\n")
    refused = await asyncio.to_thread(undo_from_terminal, env)
    assert refused.returncode == 1, refused.stderr
    assert "undo_conflict" not in refused.stdout and "hello.py" in refused.stderr
    assert "milk-lsp undo --force" in refused.stderr
    forced = await asyncio.to_thread(undo_from_terminal, env, "--force")
    assert forced.returncode == 0, forced.stderr
    assert ": hello.py\n" in forced.stdout and "milk: undid turn" in forced.stdout  # relative
    assert hello.read_text() == "def greet():\n    return 'hello'\n"
    # the next undo takes the turn before it (the last one not undone)
    earlier = await asyncio.to_thread(undo_from_terminal, env, "--session", first["sessionId"])
    assert earlier.returncode == 0, earlier.stderr
    assert not (env.workspace / "one.txt").exists()
    assert "milk: milk:" not in earlier.stderr  # the server's message, prefixed once
    # nothing left: one sentence, no option that does not exist (issue 20 item 20)
    nothing = await asyncio.to_thread(undo_from_terminal, env)
    assert nothing.returncode == 1, nothing.stderr
    assert nothing.stderr == (
        "milk: nothing to undo: no turn of the current session changed files that is not "
        "undone yet\n"
    )
    # --turn names a turn (here one already undone: nothing left to restore)
    again = await asyncio.to_thread(undo_from_terminal, env, "--turn", first["turnId"])
    assert again.returncode == 0, again.stderr
    assert f"milk: undid turn {first['turnId']}: nothing left to restore" in again.stdout


async def test_the_goal_follows_the_latest_request_and_an_undone_one_is_dropped(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """Issue 31: a change asked in any language becomes the goal; undoing its turn puts the
    goal before it back (`milk/escalate` without text carries on with the session's goal)."""
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "hello.py defines greet(), which returns 'hello'."},
    )
    first = await chat(client, "what does hello.py do?")
    sid = first["sessionId"]

    async def goal() -> str | None:
        got = await request(client, "milk/session/get", {"sessionId": sid})
        need: str | None = got["session"].get("currentNeed")
        return need

    assert await goal() == "what does hello.py do?"
    client.permission_answers.append("allow_once")
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "Erledigt: greet gibt 'hi there' zurück."})
    asked = "Ändere greet in hello.py, damit es 'hi there' zurückgibt"
    change = await chat(client, asked, sid)
    assert change["stopReason"] == "end_turn", change
    assert await goal() == asked
    openai.enqueue({"text": "It returns the greeting 'hi there' now (see hello.py)."})
    await chat(client, "and what does it return now?", sid)
    assert await goal() == asked, "a question does not replace the request"
    ids = {"sessionId": sid, "turnId": change["turnId"]}
    assert (await request(client, "milk/turn/undo", ids))["restored"]
    assert await goal() == "what does hello.py do?"
    got = await request(client, "milk/session/get", {"sessionId": sid})
    need_set = [info.get("needSet") for info in got["turnInfo"]]
    assert need_set[1] == {"need": asked, "before": "what does hello.py do?", "beforeAt": 1}
    assert need_set[2] is None


async def test_editor_scratch_files_are_never_a_turns_change(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    """Issue 31: Emacs' auto-save and lock files, Vim's swap files and its `4913` probe,
    written while a turn runs, are not listed as its changes, and its undo leaves them."""
    ws = env.workspace
    scratch = ["#hello.py#", ".#hello.py", "hello.py~", ".hello.py.swp", "4913"]
    script = "printf 'made\\n' > made.txt && " + " && ".join(
        f"printf 'scratch' > '{name}'" for name in scratch
    )
    client.permission_answers.append("allow_once")
    openai.enqueue({"tool_calls": [command(script)]}, {"text": "Ran it."})
    result = await chat(client, "run the build step")
    assert result["stopReason"] == "end_turn", result
    assert [Path(c["uri"]).name for c in result["changes"]] == ["made.txt"]
    ids = {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    await request(client, "milk/turn/undo", ids)
    assert not (ws / "made.txt").exists()
    assert all((ws / name).read_text() == "scratch" for name in scratch)

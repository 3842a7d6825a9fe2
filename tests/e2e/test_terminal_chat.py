"""`milk-lsp chat` as a user meets it in a terminal (issue 31, "The terminal").

The real CLI runs as a subprocess (`python -m milk_lsp chat`) with the `env` fixture's
folders, its settings in the config file `MILK_CONFIG_FILE` names, against the scripted
OpenAI-compatible server (and, where a turn goes to Claude, the real Claude Code CLI on the
Messages-API stand-in). stdin is a pipe, so the chat loop reads one message a line and ends
at EOF; a permission question is then shown and denied.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Env, Harness, request
from tests.fakes.anthropic_api import FakeAnthropicAPI, user_text
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

WAIT = 60.0
"""Generous: two cores, shared with whatever else runs."""
EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "'hello'", "new_text": "'hi there'"},
}
HELLO = "def greet():\n    return 'hello'\n"
SESSION_LINE = re.compile(r"milk: (?:new )?session ([0-9a-f-]{36})")
ANSI = "\x1b["


# ---- running the CLI -----------------------------------------------------------------------


def cli_env(env: Env, **extra: str) -> dict[str, str]:
    """The server's environment (its dirs, Claude's stand-in) with the settings written to
    milk's config file, and no colour wish of the machine's own."""
    config = env.root / "config" / "milk" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(env.settings, default=str))
    environment = {k: v for k, v in env.server_env().items() if k not in ("NO_COLOR", "MILK_COLOR")}
    environment.update(PYTHONIOENCODING="utf-8", **extra)
    return environment


def argv(env: Env, *args: str) -> list[str]:
    return [sys.executable, "-m", "milk_lsp", "chat", "--workspace", str(env.workspace), *args]


def one_shot(env: Env, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """`milk-lsp chat ARGS`, stdin not a terminal, to its end."""
    return subprocess.run(
        argv(env, *args),
        cwd=env.root,
        env=cli_env(env, **extra),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=WAIT * 2,
        check=False,
    )


class Chat:
    """`milk-lsp chat` with no message (the loop), fed and read while it runs."""

    def __init__(self, env: Env, *args: str, **extra: str) -> None:
        self.proc = subprocess.Popen(
            argv(env, *args),
            cwd=env.root,
            env=cli_env(env, **extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self._seen = {"out": "", "err": ""}
        self._changed = threading.Condition()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(name, stream), daemon=True)
            for name, stream in (("out", self.proc.stdout), ("err", self.proc.stderr))
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str, stream: Any) -> None:
        for piece in iter(lambda: stream.read(1), ""):
            with self._changed:
                self._seen[name] += piece
                self._changed.notify_all()

    @property
    def out(self) -> str:
        return self._seen["out"]

    @property
    def err(self) -> str:
        return self._seen["err"]

    def send(self, *lines: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("".join(f"{line}\n" for line in lines))
        self.proc.stdin.flush()

    def wait_for(self, text: str, where: str = "out", count: int = 1) -> None:
        with self._changed:
            seen = self._changed.wait_for(lambda: self._seen[where].count(text) >= count, WAIT)
        assert seen, f"{text!r} never came:\n{self.describe()}"

    def finish(self) -> int:
        """EOF on stdin (Ctrl-D), then the exit code."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        for reader in self._readers:
            reader.join(10)
        return code

    def describe(self) -> str:
        return f"--- stdout\n{self.out}\n--- stderr\n{self.err}"


def loop(env: Env, *lines: str, **extra: str) -> tuple[int, Chat]:
    """The loop fed `lines`, then EOF."""
    chat = Chat(env, **extra)
    chat.send(*lines)
    return chat.finish(), chat


def sessions_named(text: str) -> list[str]:
    return SESSION_LINE.findall(text)


def wait_until(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def servers_of(env: Env) -> list[int]:
    """milk-lsp servers still running with this test's log dir (Linux: /proc)."""
    marker = f"MILK_LOG_DIR={env.root / 'logs'}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"milk_lsp" in (proc / "cmdline").read_bytes() and marker in (
                (proc / "environ").read_bytes()
            ):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools") or []]


def said_to_model(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


# ---- the loop ------------------------------------------------------------------------------


def test_the_loop_keeps_one_session_across_messages(env: Env, openai: FakeOpenAIServer) -> None:
    openai.enqueue({"text": "First answer."}, {"text": "Second answer."})
    code, chat = loop(env, "what is a greeting?", "and a farewell?")
    assert code == 0, chat.describe()
    assert chat.out.count("── done") == 2 and "Second answer." in chat.out, chat.describe()
    assert len(sessions_named(chat.err)) == 1, chat.describe()  # said once, before the first
    first, second = openai.requests
    assert "what is a greeting?" in said_to_model(first)
    assert "First answer." in said_to_model(second), "the second message has the first's turn"


def test_eof_at_the_prompt_quits_with_0_and_shuts_the_server_down(env: Env) -> None:
    began = time.monotonic()
    code, chat = loop(env)
    assert code == 0, chat.describe()
    assert time.monotonic() - began < WAIT
    assert "Traceback" not in chat.err, chat.describe()
    if Path("/proc/self/environ").exists():
        wait_until(lambda: not servers_of(env), "the server exits with the chat")


def test_an_unknown_slash_word_lists_the_commands_and_sends_nothing(
    env: Env, openai: FakeOpenAIServer
) -> None:
    code, chat = loop(env, "/bogus")
    assert code == 0, chat.describe()
    assert "unknown command /bogus; nothing was sent" in chat.err, chat.describe()
    for command in ("/undo", "/escalate", "/local", "/new", "/context", "/help"):
        assert command in chat.err
    once = one_shot(env, "/bogus", "words")
    assert once.returncode == 2, once.stderr
    assert "unknown command /bogus" in once.stderr
    assert openai.requests == [], "the model was asked nothing"


def test_local_sends_the_next_message_on_route_local(env: Env, openai: FakeOpenAIServer) -> None:
    openai.enqueue({"text": "Local answer."}, {"text": "Auto answer."})
    code, chat = loop(env, "/local", "just you, please", "and now?")
    assert code == 0, chat.describe()
    assert "your next message goes to the local model on route local" in chat.err
    assert "── local (/local)" in chat.out and "── local (default)" in chat.out, chat.describe()
    on_local, on_auto = openai.requests
    assert "escalate_to_claude" not in tool_names(on_local)  # route local: no way to Claude
    assert "escalate_to_claude" in tool_names(on_auto)  # /local was for one message


def test_new_starts_a_new_session_for_the_following_messages(
    env: Env, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"text": "Answer one."}, {"text": "Answer two."})
    code, chat = loop(env, "the first question", "/new", "the second question")
    assert code == 0, chat.describe()
    first, second = sessions_named(chat.err)
    assert first != second, chat.describe()
    assert "Answer one." not in said_to_model(openai.requests[1]), "a new session's history"
    again = one_shot(env, "/context")  # the folder's latest session is now the new one
    assert again.returncode == 0, again.stderr
    assert "the second question" in again.stdout and "the first question" not in again.stdout


def test_context_prints_what_claude_would_get(env: Env, openai: FakeOpenAIServer) -> None:
    openai.enqueue({"text": "The parser lives in parse.py."})
    code, chat = loop(env, "where is the parser?", "/context")
    assert code == 0, chat.describe()
    preview = chat.out.split("── what Claude would get now", 1)[1]
    assert "(nothing was sent): mode first" in preview, chat.describe()
    assert "--append-system-prompt-file=<context-file>" in preview
    assert "── context file" in preview and "The parser lives in parse.py." in preview
    assert len(openai.requests) == 1, "a preview asks no model"


async def test_undo_restores_the_file_in_the_loop_and_one_shot(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    client = await harness.start()
    client.permission_answers.extend(["allow_once", "allow_once"])
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "Edited."})
    await request(client, "milk/chat", {"text": "edit it", "route": "local"})
    command = {"name": "run_command", "arguments": {"command": "printf 'x\\n' > one.txt"}}
    openai.enqueue({"tool_calls": [command]}, {"text": "Made one.txt."})
    await request(client, "milk/chat", {"text": "make one", "route": "local"})
    await harness.stop(client)
    hello, one = env.workspace / "hello.py", env.workspace / "one.txt"
    assert one.exists() and "hi there" in hello.read_text()
    asked = len(openai.requests)

    code, chat = await asyncio.to_thread(loop, env, "/undo")
    assert code == 0, chat.describe()
    assert "milk: undid turn" in chat.out and "one.txt" in chat.out, chat.describe()
    assert not one.exists() and "hi there" in hello.read_text()

    once = await asyncio.to_thread(one_shot, env, "/undo")
    assert once.returncode == 0, once.stderr
    assert "milk: undid turn" in once.stdout and ": hello.py" in once.stdout
    assert hello.read_text() == HELLO
    assert "file(s)" not in once.stdout + once.stderr + chat.out + chat.err
    assert len(openai.requests) == asked, "/undo is no message to the model"


def test_a_turn_that_changes_files_says_1_file_changed_and_2_files_changed(
    env: Env, openai: FakeOpenAIServer
) -> None:
    slow = {"text": "Done waiting.", "chunk_chars": 1, "delay": 0.2}
    openai.enqueue(slow, slow)
    chat = Chat(env)
    chat.send("/local wait a moment")
    wait_until(lambda: len(openai.requests) == 1, "the first turn asks the model")
    (env.workspace / "hello.py").write_text("def greet():\n    return 'hey'\n")
    chat.wait_for("── done")
    chat.send("/local and again")
    wait_until(lambda: len(openai.requests) == 2, "the second turn asks the model")
    (env.workspace / "hello.py").write_text(HELLO)
    (env.workspace / "new.txt").write_text("new\n")
    chat.wait_for("── done", count=2)
    assert chat.finish() == 0, chat.describe()
    assert "✎ 1 file changed: hello.py (+1 -1)" in chat.out, chat.describe()
    assert "✎ 2 files changed: " in chat.out and "new.txt (+1 -0)" in chat.out
    assert "file(s)" not in chat.out


async def test_ctrl_c_cancels_the_turn_and_the_loop_answers_the_next_message(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"text": "once upon a time " * 40, "chunk_chars": 2, "delay": 0.1})
    chat = Chat(env)
    chat.send("tell me a long story")
    await asyncio.to_thread(chat.wait_for, "once upon")  # streaming
    chat.proc.send_signal(signal.SIGINT)
    await asyncio.to_thread(chat.wait_for, "── cancelled")
    assert await asyncio.to_thread(openai.wait_for_disconnects, 1, WAIT), "stream left open"
    openai.enqueue({"text": "Still here."})
    chat.send("are you there?")
    await asyncio.to_thread(chat.wait_for, "── done")
    assert await asyncio.to_thread(chat.finish) == 0, chat.describe()
    assert "Still here." in chat.out, chat.describe()
    assert "cancelling the turn" in chat.err and "Traceback" not in chat.err, chat.describe()
    [session_id] = sessions_named(chat.err)
    client = await harness.start()
    stored = await request(client, "milk/session/get", {"sessionId": session_id})
    statuses = [(r["text"], r["status"]) for r in stored["turns"] if r["role"] == "user"]
    assert statuses == [("tell me a long story", "cancelled"), ("are you there?", "ok")]


def test_at_a_terminal_ctrl_c_clears_the_line_history_is_kept_and_ctrl_d_leaves(
    env: Env, openai: FakeOpenAIServer
) -> None:
    """stdin a terminal (a pty): the prompt, readline, Ctrl-C at the prompt drops the line
    typed so far (nothing sent), Ctrl-D leaves with 0, the history file is the user's."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    openai.enqueue({"text": "Hello from the model."})
    proc = subprocess.Popen(
        argv(env),
        cwd=env.root,
        env=cli_env(env, TERM="dumb"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    seen = bytearray()

    def read() -> None:
        with contextlib.suppress(OSError):  # EIO once the last writer is gone
            while piece := os.read(master, 4096):
                seen.extend(piece)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: b"milk> " in seen, "the prompt")
        os.write(master, b"half a thought")
        wait_until(lambda: b"half a thought" in seen, "the echo")
        proc.send_signal(signal.SIGINT)  # what Ctrl-C at the prompt sends
        wait_until(lambda: seen.count(b"milk> ") >= 2, "a fresh prompt")
        os.write(master, b"hi there\r")
        wait_until(lambda: b"Hello from the model." in seen, "the answer")
        wait_until(lambda: seen.count(b"milk> ") >= 3, "the prompt after the turn")
        os.write(master, b"\x04")  # Ctrl-D
        assert proc.wait(WAIT) == 0, seen.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(10)
        os.close(master)
    [asked] = openai.requests
    assert "half a thought" not in said_to_model(asked) and "hi there" in said_to_model(asked)
    history = env.root / "state" / "milk-lsp" / "chat_history"
    assert history.read_text().split() == ["hi", "there"]
    assert history.stat().st_mode & 0o777 == 0o600


# ---- one message ---------------------------------------------------------------------------


def test_a_failed_turn_is_told_once_with_its_reason(env: Env, openai: FakeOpenAIServer) -> None:
    openai.enqueue({"status": 500})
    done = one_shot(env, "hello")
    assert done.returncode == 1, done.stderr
    failure = re.search(r"milk: turn failed \(local_failed\): (.+)", done.stderr)
    assert failure, done.stderr
    message = failure.group(1)
    assert (done.stdout + done.stderr).count(message) == 1, done.stdout + done.stderr
    assert "[error]" not in done.stdout
    assert done.stdout.splitlines()[-1] == "── failed"
    assert ANSI not in done.stdout + done.stderr, "no colour without a terminal"


def test_colour_when_forced_none_with_no_color(env: Env, openai: FakeOpenAIServer) -> None:
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "I left it."})
    coloured = one_shot(env, "--route", "local", "look at it", MILK_COLOR="1")
    out = coloured.stdout
    assert "\x1b[1m--- a/hello.py\x1b[0m" in out and "\x1b[1m+++ b/hello.py\x1b[0m" in out, out
    assert "\x1b[36m@@ -1,2 +1,2 @@\x1b[0m" in out
    assert "\x1b[31m-    return 'hello'\x1b[0m" in out
    assert "\x1b[32m+    return 'hi there'\x1b[0m" in out
    assert "\x1b[1;34m── local (--route local)\x1b[0m" in out
    assert "denied edit_file (no terminal to ask on)" in coloured.stderr
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "I left it."})
    plain = one_shot(env, "--route", "local", "look at it", MILK_COLOR="1", NO_COLOR="1")
    assert "+    return 'hi there'" in plain.stdout, plain.stdout
    assert ANSI not in plain.stdout + plain.stderr


# ---- Claude --------------------------------------------------------------------------------


@pytest.mark.claude
def test_joining_says_a_message_goes_to_claude_before_sending_and_local_takes_it_back(
    claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    env = claude_env
    api.enqueue({"text": "Claude here: the tokenizer is fine."})
    first = one_shot(env, "--route", "claude", "check the tokenizer")
    assert first.returncode == 0, first.stdout + first.stderr
    [session_id] = sessions_named(first.stderr)
    assert len(api.main_requests()) == 1

    code, idle = loop(env)  # joins, says where the next message goes, sends nothing
    assert code == 0, idle.describe()
    assert idle.err.splitlines()[0] == (
        f"milk: session {session_id} (1 turn; the last went to Claude): your next message "
        "goes to Claude (you sent this session to Claude) — /local to send it to the local "
        "model, /new for a new session"
    ), idle.describe()
    assert len(api.main_requests()) == 1 and openai.requests == []

    openai.enqueue({"text": "Local again."})
    code, back = loop(env, "/local", "thanks")
    assert code == 0, back.describe()
    assert "takes the session back from Claude (you sent this session to Claude)" in back.err
    assert "── local (/local)" in back.out and "Local again." in back.out, back.describe()
    assert "the next message goes to the local model" in back.err
    assert len(api.main_requests()) == 1 and len(openai.requests) == 1


@pytest.mark.claude
def test_escalate_with_text_asks_claude_in_one_shot(
    claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    env = claude_env
    api.enqueue({"text": "Reviewed: looks right."})
    done = one_shot(env, "/escalate", "please review hello.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "this message goes to Claude (/escalate)" in done.stderr.splitlines()[0]
    assert "── Claude (/escalate)" in done.stdout and "Reviewed: looks right." in done.stdout
    [sent] = api.main_requests()
    assert "please review hello.py" in user_text(sent) and "/escalate" not in user_text(sent)
    assert openai.requests == [], "an escalation asks no local model"

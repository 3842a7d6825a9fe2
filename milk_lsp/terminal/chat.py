"""`milk-lsp chat`: a terminal client that drives the real server over LSP like an editor.

With a message it sends that one message (or runs that slash command: `milk-lsp chat
/undo`) and exits with the turn's outcome. Without one it is a chat loop: one server
process and one session for every message, a prompt with line editing and a history file
where the standard library's `readline` exists, and the slash commands of
`milk_lsp.terminal.commands`. With stdin not a terminal the loop reads one message a line
and ends at EOF, so a script can pipe a conversation in.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import platformdirs

from milk_lsp.terminal.commands import Command, parse, show_help, unknown
from milk_lsp.terminal.conversation import Conversation
from milk_lsp.terminal.link import connected
from milk_lsp.terminal.printer import ChatPrinter
from milk_lsp.terminal.style import Style
from milk_lsp.terminal.undo import run_undo
from milk_lsp.terminal.waiting import GaveUp

__all__ = ["ChatPrinter", "connected", "history_file", "run_chat", "run_undo"]

HISTORY_LINES = 1000
PROMPT = "milk> "
_SERVERLESS = ("help", "quit")


def history_file() -> Path:
    """Where the loop keeps the lines typed at its prompt (0600: they are your messages)."""
    return platformdirs.user_state_path("milk-lsp") / "chat_history"


def run_chat(
    text: str | None,
    workspace: Path,
    route: str,
    session_id: str | None,
    settings: dict[str, Any],
    *,
    verbose: bool = False,
) -> int:
    """One message (`text`), or the chat loop (`text` None). Exit codes: 0 done, 1 the
    turn failed, 2 refused (an unknown session or command), 130 cancelled."""
    printer = ChatPrinter()
    command = parse(text) if text is not None else None
    if command is not None and (command.name in _SERVERLESS or not command.known):
        if not command.known:  # nothing is started, nothing sent
            unknown(command, printer)
            return 2
        if command.name == "help":
            show_help(printer)
        return 0
    conversation = Conversation(
        workspace,
        route,
        session_id,
        settings,
        interactive=text is None,
        verbose=verbose,
        printer=printer,
    )
    try:
        conversation.start()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        printer.say(f"could not start milk-lsp: {exc}", "failed")
        return 1
    try:
        if text is None:
            return _loop(conversation)
        return _one_shot(conversation, text, command)
    except KeyboardInterrupt:
        printer.say("stopped")
        return 130
    finally:
        with contextlib.suppress(KeyboardInterrupt):
            conversation.close()


def _one_shot(conversation: Conversation, text: str, command: Command | None) -> int:
    """The message or command of the command line. A message (and `/escalate`, `/local
    text`) first says which session it joins and where it goes."""
    going: tuple[str, str] | None = None
    if command is not None and command.name == "escalate":
        going = ("claude", "/escalate")
    elif command is not None and command.name == "local" and command.text:
        going = ("local", "/local")
    elif command is not None and command.name == "advise" and command.text:
        going = ("claude", "/advise")
    if command is None or going is not None:
        code = conversation.join(going=going)
        if code:
            return code
    done = conversation.handle(text)
    return 0 if done is None else done


def _loop(conversation: Conversation) -> int:
    """Read and handle lines until EOF (Ctrl-D) or `/quit`: 0; 130 when a second Ctrl-C
    gave up on a turn that was still ending; 1 when the server went away."""
    printer = conversation.printer
    code = conversation.join()
    if code:
        return code
    tty = sys.stdin.isatty()
    if tty:
        printer.say("/help lists the commands; Ctrl-C cancels a turn, Ctrl-D leaves")
    with _line_editing(printer.style, tty) as read:
        while True:
            printer.end_line()
            try:
                line = read()
            except KeyboardInterrupt:  # at the prompt: the line is dropped
                printer.show("")
                continue
            except EOFError:
                if tty:
                    printer.show("")
                return 0
            try:
                if conversation.handle(line) is None:
                    return 0
            except GaveUp:
                printer.say("stopped waiting for the turn; leaving")
                return 130
            except KeyboardInterrupt:  # a request that was not a turn: back to the prompt
                printer.show("")
            if not conversation.alive:
                printer.say("milk-lsp exited; the chat ends here", "failed")
                return 1


@contextlib.contextmanager
def _line_editing(style: Style, tty: bool) -> Iterator[Callable[[], str]]:
    """`input` with a prompt, line editing and a history file when stdin is a terminal
    and `readline` exists; a plain line reader (no prompt) otherwise."""
    if not tty:
        yield input
        return
    try:
        import readline
    except ImportError:  # Windows without pyreadline: no line editing, still a prompt
        prompt = style("prompt", PROMPT)
        yield lambda: input(prompt)
        return
    path = history_file()
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LINES)
    prompt = style.prompt(PROMPT)
    try:
        yield lambda: input(prompt)
    finally:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600, exist_ok=True)
            readline.write_history_file(path)
            path.chmod(0o600)

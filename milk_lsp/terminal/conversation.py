"""One `milk-lsp chat` run: one server process, one session, and what each message and
slash command does there.

Everything waits in the main thread (`milk_lsp.terminal.waiting`), where permission
questions are asked and Ctrl-C arrives: during a turn Ctrl-C becomes `milk/cancel`, so the
turn ends `cancelled` and the chat goes on. Before a message goes anywhere the client says
which session it joined and where that message goes (`nextRoute`), so nothing reaches
Claude unannounced; after a turn it says so again when that changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from milk_lsp import wire
from milk_lsp.terminal.commands import message_text, parse, show_help, unknown
from milk_lsp.terminal.link import Link
from milk_lsp.terminal.printer import ChatPrinter
from milk_lsp.terminal.undo import refused, undo_with
from milk_lsp.terminal.waiting import Waiter
from milk_lsp.text import plural


class Conversation:
    """A chat with milk-lsp from the terminal: `handle` one line at a time."""

    def __init__(
        self,
        workspace: Path,
        route: str,
        session_id: str | None,
        settings: dict[str, Any],
        *,
        interactive: bool,
        verbose: bool = False,
        printer: ChatPrinter | None = None,
    ) -> None:
        self.workspace = workspace
        self.route = route
        """`--route`: every message's route, but for one after `/local`."""
        self.session_id = session_id
        self.interactive = interactive
        """The loop (else one message from the command line): how the way back is said."""
        self.printer = printer or ChatPrinter()
        self.printer.workspace = workspace
        self._waiter = Waiter(self.printer)
        self._link = Link(workspace, settings, self.printer, self._waiter.ask, verbose=verbose)
        self._local_next = False
        self._told: str | None = None
        """The agent the user was last told takes the next message."""

    def start(self) -> None:
        """Start the server; raises what kept it from starting."""
        self._link.start()

    def close(self) -> None:
        """Shut the server down (a running turn ends cancelled)."""
        self._link.close()

    @property
    def alive(self) -> bool:
        return self._link.alive

    @property
    def _folder(self) -> str:
        return self.workspace.as_uri()

    # ---- one line ------------------------------------------------------------------------

    def handle(self, line: str) -> int | None:
        """Send a message or run a command; the exit code a one-shot run gives for it, None
        for `/quit`."""
        command = parse(line)
        if command is None:
            text = message_text(line)
            return self.send(text) if text else 0
        if not command.known:
            unknown(command, self.printer)
            return 2
        if command.name == "quit":
            return None
        if command.name == "help":
            show_help(self.printer)
            return 0
        actions = {
            "undo": lambda: self._waiter.wait(self._link.submit(self._undo)),
            "escalate": lambda: self.escalate(command.text),
            "local": lambda: self.local(command.text),
            "advise": lambda: self.advise(command.text),
            "new": lambda: self.new(command.text),
            "context": self.context,
        }
        try:
            return actions[command.name]()
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a refused request: said, and the chat goes on
            return refused(exc, self.printer)

    def send(self, text: str) -> int:
        """A message to the session, on `--route` (route local once after `/local`)."""
        route = "local" if self._local_next else self.route
        chosen = "/local" if self._local_next else None
        self._local_next = False
        params = {"text": text, "route": route, "workspaceFolder": self._folder}
        params["sessionId"] = self._session()
        return self._turn(wire.CHAT, params, chosen)

    def escalate(self, text: str) -> int:
        """`milk/escalate`; without text Claude carries on with the session's goal."""
        params = {"sessionId": self._session()}
        if text:
            params["text"] = text
        return self._turn(wire.ESCALATE, params, "/escalate")

    def advise(self, text: str) -> int:
        """`text` on route `advise`: Claude's plan, carried out by the local model."""
        if not text:
            self.printer.say(
                '/advise needs the request: /advise "rename x to y everywhere"', "failed"
            )
            return 2
        params = {"text": text, "route": "advise", "workspaceFolder": self._folder}
        params["sessionId"] = self._session()
        return self._turn(wire.CHAT, params, "/advise")

    def local(self, text: str) -> int:
        """The next message (or `text`) on route local, and how the session is routed."""
        self._local_next = True
        if text:
            return self.send(text)
        if not self.interactive:
            self._local_next = False
            self.printer.say('/local needs a message here: milk-lsp chat /local "…"', "failed")
            return 2
        routed = self._next_route(self._call(wire.SESSION_GET, self._get_params()))
        agent, reason = routed
        if agent == "claude":
            self.printer.say(
                "your next message goes to the local model (route local), which takes the "
                f"session back from Claude ({reason})"
            )
        else:
            self.printer.say(
                "your next message goes to the local model on route local (no hand-off to "
                f"Claude); the session is routed as before: {reason}"
            )
        return 0

    def new(self, text: str) -> int:
        """`milk/session/new` for the folder; the following messages go there."""
        info = self._call(wire.SESSION_NEW, {"workspaceFolder": self._folder})
        self._joined(info, new=True, whose=None if text else "your next message")
        return self.send(text) if text else 0

    def context(self) -> int:
        """`milk/context`: what Claude would get now, printed; nothing is sent."""
        session_id = self.session_id or self._latest()
        if session_id is None:
            self.printer.say("no session in this folder yet: nothing would go to Claude")
            return 1
        preview = self._call(wire.CONTEXT, {"sessionId": session_id})
        chars = preview.get("chars") or {}
        show = self.printer.show
        show(
            f"── what Claude would get now (nothing was sent): mode {preview.get('mode')}, "
            f"{chars.get('contextFile', 0):,} characters of context file, "
            f"{chars.get('userMessagePrefix', 0):,} before your message"
        )
        show("$ " + " ".join(str(arg) for arg in preview.get("argv") or []))
        show("── context file")
        show(str(preview.get("contextFile") or "(empty)"))
        show("── before your message")
        show(str(preview.get("userMessagePrefix") or "(nothing)"))
        return 0

    # ---- the session ---------------------------------------------------------------------

    def join(self, *, create: bool = True, going: tuple[str, str] | None = None) -> int:
        """Say which session this client joins (`--session`, else the folder's latest, else
        a new one when `create`) and where the next message goes (`going`: the agent and
        how the user chose it, when not the session's own route). 0, or the exit code of
        a refusal (an unknown `--session`)."""
        try:
            if self.session_id:
                found = self._call(wire.SESSION_GET, self._get_params())["session"]
                self._joined(found, new=False, going=going)
                return 0
            session_id = self._latest()
            if session_id is not None:
                found = self._call(wire.SESSION_GET, self._get_params(session_id))["session"]
                self._joined(found, new=False, going=going)
            elif create:
                info = self._call(wire.SESSION_NEW, {"workspaceFolder": self._folder})
                self._joined(info, new=True, going=going)
            else:
                self.printer.say("no session in this folder yet")
            return 0
        except Exception as exc:
            return refused(exc, self.printer)

    def _joined(
        self,
        info: dict[str, Any],
        *,
        new: bool,
        going: tuple[str, str] | None = None,
        whose: str | None = None,
    ) -> None:
        self.session_id = str(info.get("sessionId"))
        count = int(info.get("turnCount") or 0)
        if new:
            said = f"new session {self.session_id}"
        elif count == 0:
            said = f"session {self.session_id} (no turns yet)"
        else:
            last = "Claude" if info.get("activeAgent") == "claude" else "the local model"
            said = f"session {self.session_id} ({plural(count, 'turn')}; the last went to {last})"
        whose = whose or ("your next message" if self.interactive else "this message")
        if going is None and self.route != "auto":
            going = (self.route, f"--route {self.route}")
        if going is not None:
            agent = "Claude" if going[0] == "claude" else "the local model"
            self.printer.say(f"{said}: {whose} goes to {agent} ({going[1]})")
            return
        agent, reason = self._next_route(info)
        self._told = agent
        if agent == "claude":
            self.printer.say(f"{said}: {whose} goes to Claude ({reason}) — {self._way_back()}")
        else:
            self.printer.say(f"{said}: {whose} goes to the local model ({reason})")

    def _way_back(self) -> str:
        if self.interactive:
            return "/local to send it to the local model, /new for a new session"
        return "--route local sends it to the local model"

    def _tell_route(self, result: dict[str, Any]) -> None:
        """After a turn: where the next message goes, when that changed."""
        if self.route != "auto" or not isinstance(result.get("nextRoute"), dict):
            return
        agent, reason = self._next_route(result)
        if agent == (self._told or "local"):
            return
        self._told = agent
        if agent == "claude":
            self.printer.say(f"the next message goes to Claude ({reason}) — {self._way_back()}")
        else:
            self.printer.say(f"the next message goes to the local model ({reason})")

    @staticmethod
    def _next_route(info: dict[str, Any]) -> tuple[str, str]:
        routed = info.get("nextRoute")
        if not isinstance(routed, dict) and isinstance(info.get("session"), dict):
            routed = info["session"].get("nextRoute")
        if not isinstance(routed, dict):
            return "local", "local model first"
        return str(routed.get("agent")), str(routed.get("reason"))

    def _latest(self) -> str | None:
        listed = self._call(wire.SESSION_LIST, {"workspaceFolder": self._folder})
        sessions = listed.get("sessions") if isinstance(listed, dict) else None
        return str(sessions[0]["sessionId"]) if sessions else None

    def _session(self) -> str:
        """The session messages go to: the joined one, else the folder's latest or new."""
        if self.session_id is None:
            self.join(create=True)
        if self.session_id is None:
            raise RuntimeError("no session to send to")
        return self.session_id

    def _get_params(self, session_id: str | None = None) -> dict[str, Any]:
        return {"sessionId": session_id or self.session_id, "limit": 1}

    async def _undo(self, client: Any) -> int:
        return await undo_with(client, self.printer, self.workspace, self.session_id)

    # ---- turns and waiting ---------------------------------------------------------------

    def _turn(self, method: str, params: dict[str, Any], chosen: str | None) -> int:
        """Run a turn to its end: 0 done, 1 failed (the reason said once), 2 refused, 130
        cancelled."""
        self.printer.chosen_by = chosen
        try:
            result = self._waiter.wait(self._link.request(method, params), self._cancel)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            return refused(exc, self.printer)
        finally:
            self._waiter.drop_questions()
        outcome = result if isinstance(result, dict) else {}
        stop = outcome.get("stopReason")
        code = 0
        if stop == "error":
            error = outcome.get("error") or {}
            reason, message = error.get("reason"), error.get("message")
            self.printer.say(f"turn failed ({reason}): {message}", "failed")
            code = 1
        elif stop == "cancelled":
            code = 130
        self._tell_route(outcome)
        return code

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        return self._waiter.wait(self._link.request(method, params))

    def _cancel(self) -> None:
        """Ctrl-C during a turn: `milk/cancel`; the turn ends `cancelled`."""
        self.printer.say("cancelling the turn (Ctrl-C again to stop waiting)")
        if self.session_id:
            self._link.request(wire.CANCEL, {"sessionId": self.session_id})

"""What the scripted test servers share: a thread on 127.0.0.1 and a queue of responses."""

from __future__ import annotations

import copy
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

Response = dict[str, Any]


class QuietThreadingServer(ThreadingHTTPServer):
    """A threaded loopback server that does not print a traceback when a client hangs up
    (tests cancel streams on purpose)."""

    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        super().handle_error(request, client_address)


class LoopbackHandler(BaseHTTPRequestHandler):
    """What the fakes' request handlers share: quiet logs, bodies, hang-up aware waits."""

    protocol_version = "HTTP/1.1"
    wait_tick_seconds = 0.05

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _json_body(self) -> Any:
        """The request body as JSON; as text when it is not JSON (recorded as sent)."""
        raw = self._read_body()
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return raw.decode("utf-8", "replace")

    def _replace_script(self, body: Any) -> None:
        """``POST /_script``: a JSON list of responses, or ``{"responses": [...]}``."""
        responses = script_from(body)
        if responses is None:
            self._send_json(400, {"error": {"message": "expected a JSON list of objects"}})
            return
        owner: ScriptedLoopbackServer = getattr(self.server, "owner")  # noqa: B009
        owner.set_script(responses)
        self._send_json(200, {"ok": True, "queued": len(responses)})

    def _send_json(self, status: int, payload: Any) -> None:
        raise NotImplementedError

    def _wait(self, seconds: float) -> bool:
        """Sleep, waking early on stop() or when the client hangs up. False if it hung up."""
        owner: ScriptedLoopbackServer = getattr(self.server, "owner")  # noqa: B009
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if owner.stopping.is_set():
                return False
            try:
                readable, _, _ = select.select(
                    [self.connection], [], [], min(left, self.wait_tick_seconds)
                )
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return False
            except (OSError, ValueError):
                return False


class ScriptedLoopbackServer:
    """A `ThreadingHTTPServer` on 127.0.0.1 in a daemon thread, answering from a script.

    Subclasses name their handler and server classes and attach themselves to the server
    (`_attach`) so handlers can reach the script. ``port=0`` picks a free port.
    """

    handler_class: type[BaseHTTPRequestHandler]
    server_class: type[ThreadingHTTPServer]
    url_suffix = ""
    """Appended to ``http://127.0.0.1:PORT`` to form `base_url`."""

    def __init__(self, script: list[Response] | None = None, *, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._queue: deque[Response] = deque()
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        if script:
            self.enqueue(*script)

    # -- lifecycle -------------------------------------------------------------------------

    def _attach(self, server: ThreadingHTTPServer) -> None:
        raise NotImplementedError

    def _wake_handlers(self) -> None:
        """Called on stop, after the listener closed: unblock handler threads if needed."""

    def start(self) -> Self:
        if self._server is not None:
            return self
        self.stopping.clear()
        server = self.server_class(("127.0.0.1", self._port), self.handler_class)
        server.owner = self  # type: ignore[attr-defined]
        self._attach(server)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        self._wake_handlers()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.url_suffix}"

    # -- script ----------------------------------------------------------------------------

    def enqueue(self, *responses: Response) -> None:
        with self.lock:
            self._queue.extend(copy.deepcopy(dict(r)) for r in responses)

    def set_script(self, responses: list[Response]) -> None:
        with self.lock:
            self._queue.clear()
            self._queue.extend(copy.deepcopy(dict(r)) for r in responses)

    def pending(self) -> int:
        """How many scripted responses are still queued."""
        with self.lock:
            return len(self._queue)

    def pop_response(self, said: str = "") -> Response:
        """The next response (`"repeat": N` answers N requests); "ok" when the queue is empty.

        An entry `{"when": text, "then": [...]}` waits in the queue, skipped, until a request
        whose latest user text (`said`) contains `text`: its `then` responses are then the
        next ones, in order (a conversation whose turns are not known in advance). When
        several match, the one found last in `said` is taken (a request's subject comes after
        the context it carries)."""
        with self.lock:
            matching = [
                (said.rfind(when), index)
                for index, entry in enumerate(self._queue)
                if isinstance(when := entry.get("when"), str) and when in said
            ]
            if matching:
                _, index = max(matching, key=lambda found: (found[0], -found[1]))
                entry = self._queue[index]
                del self._queue[index]
                self._queue.extendleft(reversed(copy.deepcopy(list(entry.get("then", [])))))
            ready = next((i for i, r in enumerate(self._queue) if "when" not in r), None)
            if ready is None:
                return {"text": "ok"}
            response = self._queue[ready]
            repeat = int(response.get("repeat", 1))
            if repeat > 1:
                response["repeat"] = repeat - 1
                return copy.deepcopy(response)
            del self._queue[ready]
            return response


def script_from(loaded: Any) -> list[Response] | None:
    """A script: a JSON list of response objects, or ``{"responses": [...]}``; None if not."""
    responses = loaded.get("responses", []) if isinstance(loaded, dict) else loaded
    if isinstance(responses, list) and all(isinstance(r, dict) for r in responses):
        return responses
    return None


def load_script(path: Path | None) -> list[Response] | None:
    """A script file (see `script_from`)."""
    if path is None:
        return None
    script = script_from(json.loads(path.read_text(encoding="utf-8")))
    if script is None:
        raise ValueError(f"{path}: expected a JSON list of response objects")
    return script


def serve_until_killed(server: ScriptedLoopbackServer) -> int:
    """The CLI mode: start, print ``READY <base_url>``, serve until killed."""
    server.start()
    print(f"READY {server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0

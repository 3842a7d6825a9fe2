"""End to end: the disk fills up mid-turn, and the turn still ends properly.

The real server stores its sessions on a small file system and the scripted model sends a
1.5 MB answer with about 96 KB free. Two ways to fill the disk, both a real SQLITE_FULL
from real SQLite in the server process:

- `tmpfs`: an 8 MB tmpfs, filled up to 96 KB by a filler file that is later deleted (needs
  the right to mount, as root in a sandbox);
- `max_page_count`: where mounting is not allowed, a `sitecustomize` on the server's
  PYTHONPATH sets SQLite's `PRAGMA max_page_count` on every connection it opens, so the
  database is full at a chosen size (small turns still fit, large ones do not).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Env, Harness, request
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_store_faults import fill, mount_tmpfs, unmount

pytestmark = pytest.mark.e2e

BIG_ANSWER = " ".join(f"word{n}" for n in range(160_000))
"""About 1.5 MB of text that does not repeat itself (a loop would be ended as it streams)."""
HEADROOM = 96 * 1024
MAX_PAGES = 48
"""For `max_page_count`: the first small turn fits (a dozen pages), 1.5 MB does not."""

SITECUSTOMIZE = """\
import os
import sqlite3

_connect = sqlite3.connect
_PAGES = int(os.environ["MILK_TEST_MAX_PAGE_COUNT"])


def _limited(*args, **kwargs):
    conn = _connect(*args, **kwargs)
    conn.execute(f"PRAGMA max_page_count = {_PAGES}")
    return conn


sqlite3.connect = _limited
"""


class SmallStorage:
    """The server's storage directory on a file system that can be filled and freed."""

    def __init__(self, mechanism: str, folder: Path) -> None:
        self.mechanism = mechanism
        self.folder = folder
        self._filler: Path | None = None

    def fill(self, leave: int) -> None:
        """Leave `leave` bytes free (tmpfs); with max_page_count the limit is already set."""
        if self.mechanism == "tmpfs":
            self._filler = fill(self.folder, leave)

    def free(self) -> None:
        if self._filler is not None:
            self._filler.unlink()
            self._filler = None


@pytest.fixture(params=["tmpfs", "max_page_count"])
def small_storage(
    request: pytest.FixtureRequest, env: Env, tmp_path: Path
) -> Iterator[SmallStorage]:
    folder = tmp_path / "small"
    env.settings["storageDir"] = str(folder / "storage")
    if request.param == "tmpfs":
        if not mount_tmpfs(folder, "8m"):
            pytest.skip("mounting a tmpfs is not permitted here (max_page_count covers it)")
        try:
            yield SmallStorage("tmpfs", folder)
        finally:
            unmount(folder)
        return
    folder.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env.extra_env["PYTHONPATH"] = str(site)
    env.extra_env["MILK_TEST_MAX_PAGE_COUNT"] = str(MAX_PAGES)
    yield SmallStorage("max_page_count", folder)


async def test_a_full_disk_mid_turn_ends_the_turn(
    harness: Harness, openai: FakeOpenAIServer, small_storage: SmallStorage
) -> None:
    client = await harness.start()
    openai.enqueue({"text": "first answer"})
    first = await request(client, "milk/chat", {"text": "first"})
    assert first["stopReason"] == "end_turn"
    session_id = first["sessionId"]

    small_storage.fill(HEADROOM)
    openai.enqueue({"text": BIG_ANSWER, "chunk_chars": 50_000})
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "write a lot"})

    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "storage_failed"
    assert "the turn could not be saved" in result["error"]["message"]
    assert "database or disk is full" in result["error"]["message"]
    assert result["text"] == BIG_ANSWER  # the answer still reaches the user
    updates = client.turn_updates(result["turnId"])
    kinds = [u["kind"] for u in updates]
    assert kinds[0] == "turn_started"
    assert kinds[-2:] == ["notice", "turn_ended"] and kinds.count("turn_ended") == 1
    assert updates[-2]["severity"] == "error"
    assert updates[-2]["message"] == result["error"]["message"]
    assert updates[-1]["stopReason"] == "error"
    assert [u["seq"] for u in updates] == list(range(1, len(updates) + 1))
    for reports in client.progress_reports.values():  # every turn's progress ended
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)

    status = await request(client, "milk/status", {})  # the server keeps serving
    assert status["storage"].startswith(str(small_storage.folder))

    # The user's message itself cannot be stored: a clean request error, no turn.
    small_storage.fill(0)
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "milk/chat", {"sessionId": session_id, "text": "z" * 400_000})
    assert caught.value.code == -32803
    assert caught.value.data == {"reason": "storage_failed"}
    assert "could not store the message" in caught.value.message

    small_storage.free()
    # A second server process takes the session: the failed turn released its claim.
    other = await harness.start()
    openai.enqueue({"text": "after freeing"})
    after = await request(other, "milk/chat", {"sessionId": session_id, "text": "small"})
    assert after["stopReason"] == "end_turn", after
    openai.enqueue({"text": "and here"})
    again = await request(client, "milk/chat", {"sessionId": session_id, "text": "back"})
    assert again["stopReason"] == "end_turn", again

    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert [(t["role"], t["text"], t["status"]) for t in got["turns"]] == [
        ("user", "first", "ok"),
        ("assistant", "first answer", "ok"),
        ("user", "write a lot", "error"),
        ("user", "small", "ok"),
        ("assistant", "after freeing", "ok"),
        ("user", "back", "ok"),
        ("assistant", "and here", "ok"),
    ]
    assert got["session"]["turnCount"] == 4

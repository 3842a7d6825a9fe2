"""The embedded engine's prompt cache kept across restarts (issue 30, item 4).

llama.cpp keeps what it evaluated of the last prompt in its slot; milk's system prompt and
tool specs (about 1,500 tokens, the same bytes for every session and workspace) are read
again after every restart of the engine (an editor restart, the idle stop): a minute on two
cores. llama.cpp's server saves a slot to a file and restores it (`POST /slots/0?action=save`
and `restore`, the files under `--slot-save-path`); a restored slot's tokens are reused for
the common start of the next prompt, token by token, so a changed prompt reuses only what
still matches and is never wrong.

The file is named for what it holds: the GGUF (its path, size and modification time), the
context size and milk's version; another model or context never restores it. It is saved
once per model file and version, after the first local turn of an engine's life (the slot
then holds the static prefix and that turn), in a private folder of the user's cache.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import httpx
import platformdirs

from milk_lsp import __version__

logger = logging.getLogger(__name__)

SLOT = 0
"""The engine runs one slot (`n_parallel` 1)."""
TIMEOUT_SECONDS = 60.0


def slot_dir() -> Path:
    """The private folder of saved slots, made on first use (0700)."""
    folder = Path(platformdirs.user_cache_dir("milk-lsp", appauthor=False)) / "slots"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.chmod(0o700)
    return folder


def slot_name(model_path: str, context_size: int) -> str:
    """The file name for this model file, context size and milk version (see the module);
    "" when the model file cannot be read."""
    try:
        info = Path(model_path).stat()
    except OSError:
        return ""
    key = f"{Path(model_path).resolve()}\0{info.st_size}\0{info.st_mtime_ns}\0{context_size}"
    digest = hashlib.sha256(f"{key}\0{__version__}".encode()).hexdigest()[:20]
    return f"prefix-{digest}.bin"


async def restore(origin: str, folder: Path, name: str) -> int | None:
    """Load the saved slot `name` into the engine at `origin` (`http://127.0.0.1:PORT`);
    the tokens restored, or None when there is none or the engine refused it."""
    if not name or not (folder / name).is_file():
        return None
    answer = await _slot_action(origin, "restore", name)
    restored = answer.get("n_restored") if answer else None
    return int(restored) if isinstance(restored, int) else None


async def save(origin: str, folder: Path, name: str) -> int | None:
    """Save the engine's slot as `name` unless it is there already; the tokens saved."""
    if not name or (folder / name).is_file():
        return None
    answer = await _slot_action(origin, "save", name)
    saved = answer.get("n_saved") if answer else None
    if (folder / name).is_file():
        (folder / name).chmod(0o600)
    return int(saved) if isinstance(saved, int) else None


async def _slot_action(origin: str, action: str, name: str) -> dict[str, object] | None:
    """One `POST /slots/0?action=…`; its JSON answer, or None on any failure (a busy slot,
    an engine without the endpoint): the cache is an optimisation, never an error."""
    url = f"{origin}/slots/{SLOT}"
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, trust_env=False) as http:
            response = await http.post(url, params={"action": action}, json={"filename": name})
    except httpx.HTTPError as exc:
        logger.info("prompt cache: %s failed: %r", action, exc)
        return None
    if response.status_code != 200:
        logger.info("prompt cache: %s answered %s", action, response.status_code)
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None

"""The embedded engine downloads a real model from a stand-in Hub, loads it and answers.

The pinned SmolLM2-135M GGUF (fetched and checked as the rest of the tier) is served by
`tests.fakes.hf_hub` on 127.0.0.1 (``HF_ENDPOINT``; the real Hub cannot be reached here) as
`local.modelRepo`/`local.modelFile`; milk-lsp downloads it into the cache under ``HF_HOME``,
checks its sha256, starts llama.cpp on it and answers. Plumbing only, never wording.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from milk_lsp.local_model.download import hub_installed
from tests.e2e.conftest import Harness, request
from tests.fakes.hf_hub import COMMIT, FakeHub, HubFile
from tests.real_model import fetch
from tests.real_model.conftest import THREADS, _prepare, local_env

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(not hub_installed(), reason="huggingface_hub is not installed"),
]

REPO = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"


@pytest.fixture(scope="module")
def smollm2_gguf() -> Path:
    return _prepare(fetch.SMOLLM2_135M)


@pytest.fixture
def hub(smollm2_gguf: Path) -> Iterator[FakeHub]:
    served = HubFile(REPO, smollm2_gguf.name, smollm2_gguf, sha256=fetch.SMOLLM2_135M.sha256)
    with FakeHub([served], chunk_size=1 << 20) as fake:
        yield fake


async def test_the_model_is_downloaded_checked_loaded_and_answers(
    tmp_path: Path, hub: FakeHub, smollm2_gguf: Path
) -> None:
    env = local_env(
        tmp_path,
        {
            "provider": "embedded",
            "modelRepo": REPO,
            "modelFile": smollm2_gguf.name,
            "threads": THREADS,
            "contextSize": 2048,
            "maxReplyTokens": 64,
            "temperature": 0,
            "strategy": "agent",  # the download's plumbing (test_embedded.py says why)
        },
    )
    env.extra_env.update({"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf")})
    harness = Harness(env)
    try:
        client = await harness.start()
        result = await asyncio.wait_for(
            request(client, "milk/chat", {"text": "Say hello in five words."}), 120
        )
        assert result["stopReason"] == "end_turn", result
        assert result["text"].strip(), "the model answered nothing"
        notices = [
            u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"
        ]
        downloaded = [n for n in notices if n.startswith(f"Downloaded {REPO}/")]
        assert downloaded and "sha256 checked" in downloaded[0], notices
        assert any(n.startswith("Loaded the embedded model") for n in notices), notices
        assert hub.ranges() == [None], "one whole download"

        pointer = (
            (tmp_path / "hf" / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots")
            / COMMIT
            / smollm2_gguf.name
        )
        status = (await request(client, "milk/status", {}))["local"]
        assert status["modelPath"] == str(pointer), status
        assert status["modelBytes"] == fetch.SMOLLM2_135M.size
        assert status["loadState"] == "running" and status["model"] == smollm2_gguf.stem
    finally:
        await harness.close()

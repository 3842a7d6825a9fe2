"""One constrained request to the local model: its reply held to a JSON schema where the
server takes one, streamed into a `Reply`, ended where it repeats itself. The guided turn
asks all its requests so; the agent loop asks the intent request so before it starts.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from milk_lsp.agents.base import AgentEvent, NoticeEvent, TextDelta, UsageEvent
from milk_lsp.agents.local.client import LocalClient
from milk_lsp.agents.local.reply.runaway import RunawayWatch
from milk_lsp.agents.local.reply.stream import LocalModelError, Reply
from milk_lsp.agents.local.rounds import request_body
from milk_lsp.guided import prompt
from milk_lsp.guided.shape import intent_format, parse_intent, parse_words, words_format

logger = logging.getLogger(__name__)

READ_TOKENS = 24
"""`{"intent": "question"}` (or `{"size": "one place"}`), laid out on lines, and its end."""
WORDS_TOKENS = 96
"""`{"words": […]}` with six words of up to 40 characters, laid out on lines."""
INTENT_PROBES = (
    ("What does the function parse return?", "question"),
    ("Rename the function parse to parse_text.", "change"),
)
"""A plain question and a plain change, asked once per model before its reading of a user's
request is relied on: SmolLM2-135M read every request as a change ("Say hi.", "What is
2+2?"), and a change answered in words fails; Qwen2.5-Coder-1.5B read all the bench's."""


class Ask:
    """Constrained requests to one model server (`client`), saying what they wait for
    through `progress`."""

    def __init__(self, client: LocalClient, progress: Callable[[str], None]) -> None:
        self._client = client
        self._progress = progress

    async def read(
        self, model: str, messages: list[dict[str, Any]], shape: dict[str, Any]
    ) -> AsyncGenerator[AgentEvent | str, None]:
        """One tiny request about the user's message alone (no code): what it asks for, or
        how much a change reaches (`prompt.SIZE_SYSTEM`); its reply's text is yielded last.
        The size is asked apart, and only of a change Claude could take: in the intent request
        it turned 4 of the bench's 31 questions into changes. Asked alone, Qwen2.5-Coder-
        1.5B sized all 10 of the bench's Claude-sized requests "many" and none of its 26
        edits; of 22 requests none of the benches had, in six languages, the 8 Claude-sized
        ones and none of the 12 edits."""
        body = request_body(model, messages, [], self._client.settings, False)
        body["max_tokens"] = READ_TOKENS
        reply = Reply()
        self._progress("the local model is reading what the request asks for…")
        async for event in self.stream(model, body, shape, reply):
            yield event
        yield "".join(reply.text)

    async def words(self, model: str, request: str) -> AsyncGenerator[AgentEvent | list[str]]:
        """What the model would search the code for, for the user's `request` alone
        (`prompt.WORDS_SYSTEM`), yielded last after the request's events; none when its
        reply is not in the shape."""
        body = request_body(model, prompt.words_messages(request), [], self._client.settings, False)
        body["max_tokens"] = WORDS_TOKENS
        reply = Reply()
        self._progress("the local model is naming what to look for in the code…")
        async for event in self.stream(model, body, words_format(), reply):
            yield event
        yield parse_words("".join(reply.text)) if reply.stopped is None else []

    async def intent(self, model: str, request: str) -> AsyncGenerator[AgentEvent | str | None]:
        """What the model reads the user's `request` as ("question", "change"), yielded last
        after the requests' events; None when it said neither, or when it did not tell
        `INTENT_PROBES` apart (asked once per model and server; a notice then says so)."""
        reads = self._client.reads_intent(model)
        if reads is None:
            reads = True
            for probe, meant in INTENT_PROBES:
                async for said in self.read(model, prompt.intent_messages(probe), intent_format()):
                    if isinstance(said, str):
                        reads = reads and parse_intent(said) == meant
                    else:
                        yield said
            self._client.remember_reads_intent(model, reads)
            if not reads:
                yield NoticeEvent(
                    "info",
                    f"milk does not rely on {model}'s reading of requests: it read a plain"
                    " question and a plain change alike. Its replies are still checked; a"
                    " larger model (local.model) reads requests apart",
                )
        if not reads:
            yield None
            return
        async for said in self.read(model, prompt.intent_messages(request), intent_format()):
            yield parse_intent(said) if isinstance(said, str) else said

    async def stream(
        self, model: str, body: dict[str, Any], shape: dict[str, Any], reply: Reply
    ) -> AsyncGenerator[AgentEvent, None]:
        """Stream one request into `reply`, constrained to `shape` where the server takes
        JSON schemas (one that answers it with HTTP 400, 422 or 501 is asked again without,
        remembered per model); yields its usage. A reply that repeats itself is ended
        there (`reply.stopped`): a schema bounds its length, not its sense, and SmolLM2
        wrote one sentence again and again to the 2,048-token cap, twice."""
        while True:
            constrained = self._client.takes_json_schema(model)
            if constrained:
                body["response_format"] = shape
            else:
                body.pop("response_format", None)
            pieces = 0
            watch = RunawayWatch((), calls=False)
            try:
                async with aclosing(self._client.stream_reply(body, reply)) as stream:
                    async for event in stream:
                        if isinstance(event, UsageEvent):
                            yield event
                        elif isinstance(event, TextDelta):
                            pieces += 1
                            if pieces % 50 == 0:
                                self._progress(f"the local model is writing ({pieces} tokens)…")
                            stop = watch.feed(event.text)
                            if stop is not None:
                                reply.stopped = stop.why
                                break
            except LocalModelError as exc:
                if constrained and exc.http_status in (400, 422, 501):
                    self._client.refuses_json_schema(model)
                    reply.text.clear()
                    continue
                raise
            return


async def intent_of(
    client: LocalClient, request: str, progress: Callable[[str], None]
) -> AsyncGenerator[AgentEvent | str | None, None]:
    """The intent request before an agent loop: its usage, then what the model read the
    request as ("change", "question"), None when it said neither or the server failed (the
    loop's own request then says why). A change answered in words with no file changed is
    then the change not made, as in a guided turn: the agent loop had ended uuid's "change
    the error message …" and "make randomBits read …" with an explanation, as if done."""
    try:
        model = await client.resolve_model()
        async for said in Ask(client, progress).intent(model, request):
            yield said
    except LocalModelError as exc:
        logger.info("the intent request failed (%s): %s", exc.reason, exc.message)
        yield None

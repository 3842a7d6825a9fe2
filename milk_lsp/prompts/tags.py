"""The nonce-tag interceptor: finds `<milk:need:NONCE>` / `<milk:percept:NONCE>` in agent text.

Agents are told to wrap the user's goal and remembered facts in tags carrying the session's
nonce (ADR 0029). `TagInterceptor` sits on the streamed answer: it removes those tags from
what the user sees, collects their bodies, and holds back only the few characters that could
still turn out to be the start of a tag. `strip_tags` gives the same result on a whole text.

What counts as a tag (one definition for the stream and for stored text):

- An open tag `<milk:need:N>` or `<milk:percept:N>` with N the session's nonce, followed by
  the exact close tag of the same kind and nonce within `max_body_chars` characters. The
  whole tag is removed and nothing else changes; its trimmed body, when non-empty, is
  appended to `needs` or `percepts`. A matched tag's body is not searched for more tags.
- Anything else is text and is left exactly as written: tags with another nonce (PROTOCOL.md,
  "Tags and processes"), the legacy `<milk:percept>`, a close tag with the wrong nonce, an
  open tag whose close never comes or comes too late. Scanning resumes right after such an
  open tag, so a real tag written after a stray one is still found.
- Tags in code are shown, not acted on: inside an inline code span (a run of N backticks up
  to the next run of exactly N) or a fenced block (a run of 3+ backticks starting a line with
  no backtick after it on that line, up to a run at least as long starting a line). An
  inline span also ends at a newline, so one stray backtick cannot switch interception off
  for the rest of the answer (the original's P15).

Why an unclosed tag at the end of the stream is shown rather than dropped: the original
discarded its body, but the usual causes are a small local model that forgot or misspelled
the close tag and then wrote its whole answer inside, or a reply cut off mid-tag. Dropping
would silently eat up to `max_body_chars` of the answer; showing it loses nothing and lets the
user see what the model did. It also keeps the rule above uniform: no exact close within the
limit means no tag, whether the stream ends first or the body grows too long.
"""

from __future__ import annotations

import enum

MAX_TAG_BODY_CHARS = 4000
"""A tag body longer than this is not a tag: bounds what the interceptor holds back."""

NEED = "need"
PERCEPT = "percept"

_FENCE_MIN_RUN = 3
_FORBIDDEN_NONCE_CHARS = frozenset("<>`")


def open_tag(kind: str, nonce: str) -> str:
    return f"<milk:{kind}:{nonce}>"


def close_tag(kind: str, nonce: str) -> str:
    return f"</milk:{kind}:{nonce}>"


class _Mode(enum.Enum):
    TEXT = enum.auto()
    INLINE_CODE = enum.auto()
    FENCE = enum.auto()
    TAG = enum.auto()


class TagInterceptor:
    """Streams agent text through, removing and collecting the session's nonce tags.

    Call `feed` with each chunk and show what it returns; call `flush` once at the end of
    the stream. The concatenated outputs equal `strip_tags` of the whole text, however the
    text was split into chunks. An empty nonce (none generated yet) acts on nothing.
    """

    def __init__(self, nonce: str, *, max_body_chars: int = MAX_TAG_BODY_CHARS) -> None:
        if any(c in _FORBIDDEN_NONCE_CHARS or c.isspace() for c in nonce):
            raise ValueError(f"a nonce must not contain '<', '>', '`' or spaces: {nonce!r}")
        self.nonce = nonce
        self.needs: list[str] = []
        """Need bodies found so far, in order (trimmed, non-empty); the last one wins."""
        self.percepts: list[str] = []
        """Percept bodies found so far, in order (trimmed, non-empty)."""
        self._max_body_chars = max_body_chars
        self._open_tags: dict[str, str] = (
            {open_tag(kind, nonce): kind for kind in (NEED, PERCEPT)} if nonce else {}
        )
        """Open tag text -> kind; empty when there is no nonce, so nothing is acted on."""
        self._mode = _Mode.TEXT
        self._code_run = 0
        """Backtick run length that opened the current inline span or fence."""
        self._run = 0
        """Length of the backtick run being read; its meaning is settled by the next char."""
        self._run_at_line_start = False
        self._fence_first_line = False
        """A fence opened on this line: a backtick before the newline makes it inline code."""
        self._at_line_start = True
        """Only spaces or tabs since the last newline (a fence must start a line)."""
        self._held = ""
        """Text mode: a possible start of an open tag, not shown yet."""
        self._tag_kind = ""
        self._close = ""
        self._body = ""
        """Tag mode: everything after the open tag, not shown yet."""
        self._body_scanned = 0
        """How much of `_body` has been searched for the close tag already."""

    def feed(self, chunk: str) -> str:
        """Take the next chunk of the stream; return the text that is safe to show now."""
        shown: list[str] = []
        self._consume(chunk, shown)
        return "".join(shown)

    def flush(self) -> str:
        """End of stream: return the held-back text (a partial or unclosed tag is text)."""
        shown: list[str] = []
        while self._mode is _Mode.TAG:
            self._consume(self._give_up_tag(shown), shown)
        shown.append(self._held)
        self._held = ""
        self._mode = _Mode.TEXT
        self._run = 0
        self._at_line_start = True
        return "".join(shown)

    def _consume(self, text: str, shown: list[str]) -> None:
        # A body given up on is scanned again before the rest of the text it came from;
        # the stack keeps that order without copying the rest of the text.
        work: list[tuple[str, int]] = [(text, 0)]
        while work:
            text, i = work.pop()
            while i < len(text):
                if self._mode is _Mode.TAG:
                    limit = self._max_body_chars + len(self._close)
                    held_before = len(self._body)
                    taken = min(len(text) - i, limit - held_before)
                    self._body += text[i : i + taken]
                    tag_end = self._find_close_end()
                    if tag_end >= 0:
                        self._record_tag(tag_end)
                        i += tag_end - held_before
                    elif len(self._body) >= limit:
                        work.append((text, i + taken))
                        text, i = self._give_up_tag(shown), 0
                    else:
                        i += taken
                    continue
                i = self._consume_char(text, i, shown)

    def _consume_char(self, text: str, i: int, shown: list[str]) -> int:
        """Handle `text[i]` outside a tag (or a run of plain text); return the next index."""
        char = text[i]
        if self._held:
            candidate = self._held + char
            kind = self._open_tags.get(candidate)
            if kind is not None:
                self._held = ""
                self._mode, self._tag_kind = _Mode.TAG, kind
                self._close = close_tag(kind, self.nonce)
                self._body, self._body_scanned = "", 0
                return i + 1
            if any(tag.startswith(candidate) for tag in self._open_tags):
                self._held = candidate
                return i + 1
            # Only the first character of an open tag is '<', so the held text cannot
            # contain another tag start: show it and look at `char` afresh.
            shown.append(self._held)
            self._held = ""
            self._at_line_start = False
            return i
        if char == "`":
            if self._run == 0:
                self._run_at_line_start = self._at_line_start
            self._run += 1
            shown.append(char)
            return i + 1
        if self._run:
            self._end_backtick_run()
            return i
        if char == "\n":
            if self._mode is _Mode.INLINE_CODE:
                self._mode = _Mode.TEXT
            self._at_line_start = True
            self._fence_first_line = False
            shown.append(char)
            return i + 1
        if char == "<" and self._mode is _Mode.TEXT and self._open_tags:
            self._held = char
            return i + 1
        end = _next_special(text, i + 1)
        segment = text[i:end]
        if self._at_line_start and segment.strip(" \t"):
            self._at_line_start = False
        shown.append(segment)
        return end

    def _end_backtick_run(self) -> None:
        run, self._run = self._run, 0
        if self._mode is _Mode.TEXT:
            if run >= _FENCE_MIN_RUN and self._run_at_line_start:
                self._mode = _Mode.FENCE
                self._fence_first_line = True
            else:
                self._mode = _Mode.INLINE_CODE
            self._code_run = run
        elif self._mode is _Mode.FENCE and self._fence_first_line:
            # A fence's info string has no backticks (CommonMark): this was inline code.
            self._mode = _Mode.INLINE_CODE
            if run == self._code_run:
                self._mode = _Mode.TEXT
        elif self._mode is _Mode.INLINE_CODE:
            if run == self._code_run:
                self._mode = _Mode.TEXT
        elif run >= self._code_run and self._run_at_line_start:
            self._mode = _Mode.TEXT
        self._at_line_start = False

    def _find_close_end(self) -> int:
        """End of the close tag within the allowed body length, or -1 when not there yet."""
        start = max(0, self._body_scanned - len(self._close) + 1)
        at = self._body.find(self._close, start, self._max_body_chars + len(self._close))
        self._body_scanned = len(self._body)
        return at + len(self._close) if at >= 0 else -1

    def _record_tag(self, tag_end: int) -> None:
        body = self._body[: tag_end - len(self._close)].strip()
        if body:
            (self.needs if self._tag_kind == NEED else self.percepts).append(body)
        self._mode, self._body = _Mode.TEXT, ""

    def _give_up_tag(self, shown: list[str]) -> str:
        """The open tag is text after all: show it, return the body to be scanned again."""
        shown.append(open_tag(self._tag_kind, self.nonce))
        self._at_line_start = False
        body, self._body = self._body, ""
        self._mode = _Mode.TEXT
        return body


def strip_tags(text: str, nonce: str, *, max_body_chars: int = MAX_TAG_BODY_CHARS) -> str:
    """Remove the session's nonce tags from a whole text, exactly as the stream does."""
    interceptor = TagInterceptor(nonce, max_body_chars=max_body_chars)
    return interceptor.feed(text) + interceptor.flush()


def _next_special(text: str, start: int) -> int:
    """Index of the next character the interceptor must look at one by one."""
    end = len(text)
    for special in "<`\n":
        at = text.find(special, start, end)
        if at >= 0:
            end = at
    return end

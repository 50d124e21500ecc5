"""A reply's body read up to a size cap, as it arrives: never more than the cap in memory.

Twelve judge replies of 10 MB each held 2.4 GB at once (issue 30): a body read whole, then
decoded to Python objects, costs many times its size. Both send paths read the body through
`read_capped` in parts as the connection delivers them (decompressed: the cap bounds
what is held, whatever was sent), and stop at the cap. A 2xx reply past the cap is an error
(`ReplyTooLarge`, with the body's first bytes as the evidence); an error reply's body
is only read for its message, so it is cut to its first bytes instead and keeps its status
(on the direct path: with a user's own client, openai reads an error body whole itself). A
reply whose ``Content-Length`` already says it is too large is not read past its first bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

#: The cap on a reply's body when none is set (``Judge(max_reply_bytes=...)``): 4 MiB. A chat
#: completion's text is a few KB; a model's whole output at 128k tokens is about 0.5 MB, so 4 MiB
#: leaves room for JSON escaping, reasoning text and log-probabilities.
DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024
#: How much of an over-size body is kept as the evidence (the raw output recorded).
EVIDENCE_BYTES = 1000
#: How much of it the error's message quotes.
_QUOTED = 200


class ReplyTooLarge(Exception):
    """A 2xx reply whose body is larger than the cap; nothing past the cap was read.

    Attributes:
        limit: The cap, in bytes.
        declared: The body's ``Content-Length``, when the server sent one.
        first: The body's first `EVIDENCE_BYTES` bytes.
    """

    def __init__(self, limit: int, declared: int | None, first: bytes) -> None:
        self.limit, self.declared, self.first = limit, declared, first[:EVIDENCE_BYTES]
        size = (
            f"its Content-Length is {declared:,} bytes"
            if declared is not None and declared > limit
            else f"more than {limit:,} bytes arrived"
        )
        super().__init__(
            f"the reply is larger than max_reply_bytes ({limit:,} bytes): {size}, and it was"
            f" not read further; it starts {self.excerpt[:_QUOTED]!r}"
        )

    @property
    def excerpt(self) -> str:
        """`first` as text (bytes that are not UTF-8 replaced)."""
        return self.first.decode("utf-8", errors="replace")


async def read_capped(
    parts: AsyncIterator[bytes], limit: int, declared: int | None
) -> tuple[bytes, bool]:
    """The body ``parts`` deliver: ``(body, True)`` when it is ``limit`` bytes or less, else
    ``(its first EVIDENCE_BYTES bytes, False)``: once past ``limit`` bytes, or once the
    first bytes are in when its ``declared`` length is past ``limit``. At most ``limit``
    bytes (and one part) are held at any time."""
    want = EVIDENCE_BYTES if declared is not None and declared > limit else limit
    held: list[bytes] = []
    size = 0
    async for part in parts:
        held.append(part)
        size += len(part)
        if size > want:
            break
    else:
        if want == limit:
            return b"".join(held), True
    first = bytearray()
    for part in held:  # the evidence only: never a copy of the whole
        first += part[: EVIDENCE_BYTES - len(first)]
        if len(first) >= EVIDENCE_BYTES:
            break
    return bytes(first), False

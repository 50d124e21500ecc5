"""A failure's message as a pattern: what varies from one failure to the next replaced by
placeholders, so that failures with one cause group together: the report's failure groups of
a run in memory, and the viewer's of a stored run. Shared by the two, so in the root layer:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

import re

_MAX_PATTERN = 500

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")
_QUOTED = re.compile(r"""(?<![\w'"])(?:'[^'\n]{0,200}'|"[^"\n]{0,200}")(?![\w'"])""")
_PREFIXED_ID = re.compile(r"\b[A-Za-z]+[_-](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}\b")
_HEX = re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b")
_NUMBER = re.compile(r"(?<![\w.])(?<!HTTP )\d+(?:\.\d+)*")
# Where a server is reached, kept as written: a URL's scheme and authority (its path is
# normalised like any text: an id in it varies), and a host with its port (an IP address,
# ``localhost`` or a dotted name). An endpoint is the same in all of one judge's failures, so
# keeping it splits no group. Every repetition is bounded (a scheme of at most 32 characters, a
# host of at most 253), so a long message costs linear time, not quadratic.
_ENDPOINT = re.compile(
    r"""((?<![\w.+-])[A-Za-z][A-Za-z0-9+.-]{0,31}://(?:[^\s/?#'"<>()\[\]{},@]{0,256}@)?"""
    r"""(?:\[[0-9A-Fa-f:.]{1,64}\]|[^\s/?#'"<>()\[\]{},:]{1,253})(?::\d{1,5})?"""
    r"""|(?<![\w.:/-])(?:\[[0-9A-Fa-f:.]{1,64}\]|localhost|\d{1,3}(?:\.\d{1,3}){3}"""
    r"""|(?=[A-Za-z0-9.-]{4,253}:\d)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"""
    r""":\d{1,5}(?![\w.:]))"""
)


def error_pattern(message: str) -> str:
    """``message`` with what varies from one failure to the next replaced by placeholders.

    UUIDs become ``<uuid>``, quoted values ``'…'``, prefixed ids (``req_8f3aB91c2dE4``) ``<id>``,
    hex ids of 8 digits or more ``<hex>``, and other numbers (dotted ones included, such as a
    lone IP address or a duration) ``<n>``; the status of ``HTTP 500`` is kept, and so are
    endpoints: a URL's scheme, host and port (``http://127.0.0.1:8000/v1`` stays as it is)
    and a host with its port (``10.0.0.7:8000``).
    """
    parts = _ENDPOINT.split(message)
    # re.split with one group: the endpoints are at the odd positions, kept as they are.
    text = "".join(part if i % 2 else _normalised(part) for i, part in enumerate(parts))
    return text if len(text) <= _MAX_PATTERN else text[:_MAX_PATTERN] + "…"


def _normalised(text: str) -> str:
    text = _UUID.sub("<uuid>", text)
    text = _QUOTED.sub(lambda m: "'…'" if m.group().startswith("'") else '"…"', text)
    text = _PREFIXED_ID.sub("<id>", text)
    text = _HEX.sub("<hex>", text)
    return _NUMBER.sub("<n>", text)

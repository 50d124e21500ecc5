"""How judges reach a model: the shared ``openai`` clients, their direct chat path, and errors.

- ``_clients.py``: one ``AsyncOpenAI`` per endpoint and key in the running event loop
  ([`shared_openai_client`][evalkit.judge.shared_openai_client]), closed when the loop shuts down;
- ``_http.py``: the shared clients' direct ``aiohttp`` path for chat completions
  (`ChatTransport`);
- ``_errors.py``: the ``openai`` exceptions both paths raise, translated once into
  [`JudgeError`][evalkit.errors.JudgeError] (`translate_error`);
- ``_body.py``: a reply's body read up to the reply cap as it arrives (`read_capped`,
  `ReplyTooLarge`);
- ``_reply.py``: the parts of a reply a judge reads (`Reply`);
- ``_refusals.py``: error replies that refuse a request field or overflow the context
  (`refused_field`, `context_overflow`).

Nothing here retries, limits or stops calls: that is the call policy's (``evalkit.judge.policy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.judge.transport._clients import shared_openai_client as shared_openai_client

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())

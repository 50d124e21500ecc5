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

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.judge.transport._body import (
        DEFAULT_MAX_REPLY_BYTES,
        ReplyTooLarge,
        read_capped,
    )
    from evalkit.judge.transport._clients import (
        aclose_shared_clients,
        chat_transport,
        openai_client_for,
        shared_openai_client,
    )
    from evalkit.judge.transport._errors import (
        failed_to_connect,
        server_message,
        translate_error,
    )
    from evalkit.judge.transport._http import ChatTransport, RawReply
    from evalkit.judge.transport._refusals import RefusedField, context_overflow, refused_field
    from evalkit.judge.transport._reply import Reply, parse_reply, read_reply

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.judge.transport._body": (
            "DEFAULT_MAX_REPLY_BYTES",
            "ReplyTooLarge",
            "read_capped",
        ),
        "evalkit.judge.transport._clients": (
            "aclose_shared_clients",
            "chat_transport",
            "openai_client_for",
            "shared_openai_client",
        ),
        "evalkit.judge.transport._errors": (
            "failed_to_connect",
            "server_message",
            "translate_error",
        ),
        "evalkit.judge.transport._http": ("ChatTransport", "RawReply"),
        "evalkit.judge.transport._refusals": ("RefusedField", "context_overflow", "refused_field"),
        "evalkit.judge.transport._reply": ("Reply", "parse_reply", "read_reply"),
    },
)

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "ChatTransport",
    "RawReply",
    "RefusedField",
    "Reply",
    "ReplyTooLarge",
    "aclose_shared_clients",
    "chat_transport",
    "context_overflow",
    "failed_to_connect",
    "openai_client_for",
    "parse_reply",
    "read_capped",
    "read_reply",
    "refused_field",
    "server_message",
    "shared_openai_client",
    "translate_error",
]

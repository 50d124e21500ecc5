"""Testing helpers: a real, local OpenAI-compatible server to run LLM judges against offline.

``FakeOpenAIServer`` runs in-process (``async with FakeOpenAIServer() as server``) or as its own
process (``python -m evalkit.testing.server --port 8000``, or ``with server_process() as url``).
``Rule`` scripts replies and ``Fault`` injects failures per prompt (``load_rules`` reads them from
a JSON file, as ``--rules FILE`` does); ``RateLimitPolicy`` makes it
enforce provider-like rate limits, announced with ``x-ratelimit-*`` headers. It also serves
OpenAI's Batch API (``/v1/files``, ``/v1/batches``), answering each line of a batch like an
online request.
``profile=`` (``--profile``) makes it answer as llama.cpp's ``llama-server``, llama-cpp-python,
vLLM or Ollama do (``PROFILES``, [`ServerProfile`][evalkit.testing.ServerProfile]).
``server.add_route(method, path, handler)`` serves more endpoints: a handler is an async
function of a ``Request`` returning a ``Response``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.testing._http import Request as Request
    from evalkit.testing._http import Response as Response
    from evalkit.testing._instances import instance_from_schema as instance_from_schema
    from evalkit.testing._process import server_process as server_process
    from evalkit.testing._profiles import PROFILES as PROFILES
    from evalkit.testing._profiles import ServerProfile as ServerProfile
    from evalkit.testing._rules import Fault as Fault
    from evalkit.testing._rules import RateLimitPolicy as RateLimitPolicy
    from evalkit.testing._rules import Rule as Rule
    from evalkit.testing._rules_file import RulesFileError as RulesFileError
    from evalkit.testing._rules_file import load_rules as load_rules
    from evalkit.testing._server import FakeOpenAIServer as FakeOpenAIServer
    from evalkit.testing._server import ServerStats as ServerStats

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())

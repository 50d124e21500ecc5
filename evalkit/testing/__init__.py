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

from evalkit.testing._http import Request, Response
from evalkit.testing._instances import instance_from_schema
from evalkit.testing._process import server_process
from evalkit.testing._profiles import PROFILES, ServerProfile
from evalkit.testing._rules import Fault, RateLimitPolicy, Rule
from evalkit.testing._rules_file import RulesFileError, load_rules
from evalkit.testing._server import FakeOpenAIServer, ServerStats

__all__ = [
    "PROFILES",
    "FakeOpenAIServer",
    "Fault",
    "RateLimitPolicy",
    "Request",
    "Response",
    "Rule",
    "RulesFileError",
    "ServerProfile",
    "ServerStats",
    "instance_from_schema",
    "load_rules",
    "server_process",
]

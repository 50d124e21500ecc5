"""Preflight: is every judge (and the target) usable, before a run spends its first item?

Without it, a run whose API key is missing, refused or whose endpoint is down scores nothing
and says so only item by item: ``200 failed``, the reason in the report or the store. The
check is one cheap request per distinct endpoint and key — ``GET {base_url}/models``, which
costs no tokens — sent concurrently with a short timeout. It fails only on what no retry can
fix during the run:

- the key's environment variable is not set (no request is sent);
- the endpoint refuses the key (HTTP 401 or 403);
- the endpoint does not answer at all (connection refused, unknown host, TLS failure, timeout).

Any other answer passes, so a gateway without a models list (404, 405) or a momentary 5xx or
429 does not stop a run: the endpoint is there, and the run's own retries deal with the rest.
The key is never part of a message (a provider may echo it: it is masked).
"""

from __future__ import annotations

import os
import socket
import ssl
import sys
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import anyio

from evalkit._masking import mask_secrets
from evalkit.errors import PreflightError, PreflightIssue, PreflightKind
from evalkit.judge._judge import Judge
from evalkit.judge.transport._clients import shared_openai_client

#: Seconds the whole check of one endpoint may take.
PREFLIGHT_TIMEOUT = 10.0
_CONCURRENT_CHECKS = 16


async def preflight(
    judges: Iterable[Judge], *, target: Judge | None = None, timeout: float = PREFLIGHT_TIMEOUT
) -> None:
    """Check that every judge's API key is set and its endpoint answers and accepts the key.

    Each distinct endpoint and key (``base_url`` and ``api_key_env``, or the prepared
    ``client``) is checked once, all of them concurrently, with one ``GET /models``. A judge
    without a model is skipped (its steps fail on their own). ``run_evals`` calls this before
    its first item unless ``preflight=False``.

    Args:
        judges: The judges to check (duplicates are checked once).
        target: The settings of an OpenAI chat-model target
            (`evalkit.OpenAITarget.settings`), named ``target`` in messages.
        timeout: Seconds allowed to each endpoint's check.

    Raises:
        PreflightError: A key is missing, an endpoint refused its key (401/403) or did not
            answer; the message has one line per failing endpoint.
    """
    checks: dict[Hashable, tuple[str, Judge]] = {}
    named = [("target", target)] if target is not None else []
    for role, judge in [*named, *(("judge", j) for j in judges)]:
        if judge.model is None:
            continue
        endpoint = judge.client if judge.client is not None else (judge.base_url, judge.api_key_env)
        checks.setdefault(endpoint, (role, judge))
    found: list[PreflightIssue | None] = [None] * len(checks)
    limiter = anyio.CapacityLimiter(_CONCURRENT_CHECKS)

    async def run(index: int, role: str, judge: Judge) -> None:
        async with limiter:
            found[index] = await check_endpoint(role, judge, timeout)

    async with anyio.create_task_group() as group:
        for index, (role, judge) in enumerate(checks.values()):
            group.start_soon(run, index, role, judge)
    issues = [issue for issue in found if issue is not None]
    if issues:
        raise PreflightError(issues)


async def check_endpoint(role: str, judge: Judge, timeout: float) -> PreflightIssue | None:
    """The problem of one endpoint, or None when it is usable (see the module docstring)."""
    import httpx2
    import openai

    model = judge.model or ""
    if judge.client is not None:
        client = judge.client
        key_env = None
        key = client.api_key
    else:
        key_env = judge.api_key_env
        key = os.environ.get(key_env, "")
        if not key:
            return PreflightIssue(
                role, model, _shown(judge.base_url), key_env, "missing_key",
                f"{key_env} is not set (export the API key in it, or set api_key_env to the "
                "variable that holds it)",
            )  # fmt: skip
        client = await shared_openai_client(base_url=judge.base_url, api_key=key)
    url = _shown(str(client.base_url).rstrip("/"))

    def issue(kind: PreflightKind, reason: str) -> PreflightIssue:
        masked = mask_secrets(reason, [key] if key else [])
        return PreflightIssue(role, model, url, key_env, kind, masked)

    options: Any = {"timeout": timeout, "max_retries": 0}
    try:
        with anyio.fail_after(timeout):
            await client.get("/models", cast_to=httpx2.Response, options=options)
    except openai.APIStatusError as exc:
        if exc.status_code not in (401, 403):
            return None  # it answered: no models list here (404/405), or a passing 5xx/429
        who = f"the API key in {key_env}" if key_env else "the client's API key"
        return issue(
            "refused",
            f"the endpoint refused {who} (HTTP {exc.status_code}: {_message(exc.body, exc)}); "
            "check the key",
        )
    except (openai.APIConnectionError, TimeoutError) as exc:  # APITimeoutError included
        return issue("unreachable", f"{_no_answer(exc, timeout)}; {_hint(role)}")
    except Exception as exc:  # an unusable URL, or the transport's own error
        return issue("unreachable", f"cannot connect ({type(exc).__name__}: {exc}); {_hint(role)}")
    return None


def _hint(role: str) -> str:
    return f"check the {role}'s base_url and that its server is running"


def _shown(url: str | None) -> str | None:
    return None if url is None else mask_secrets(url)


def _message(body: object, exc: Exception) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APIStatusError):
        # FastAPI's {"detail": ...} (llama-cpp-python), vLLM's {"error": "Unauthorized"}
        from evalkit.judge.transport._errors import server_message

        return server_message(exc)
    return str(exc)


def _no_answer(exc: BaseException, timeout: float) -> str:
    """Why nothing answered, from the root causes the client chained (the official transport
    reports a refused connection as a "timeout", so the causes decide)."""
    seen: BaseException | None = exc
    timed_out = False
    depth = 0
    while seen is not None and depth < 10:
        if isinstance(seen, ConnectionRefusedError):
            return "cannot connect (connection refused)"
        if isinstance(seen, socket.gaierror):
            return f"cannot connect (host not found: {seen.strerror or seen})"
        if isinstance(seen, ssl.SSLError):
            return f"cannot connect (TLS failed: {seen.reason or seen})"
        if isinstance(seen, TimeoutError):
            timed_out = True
        seen = seen.__cause__ or seen.__context__
        depth += 1
    if timed_out or type(exc).__name__ == "APITimeoutError":
        return f"no answer within {timeout:g} s"
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    return f"cannot connect ({root})"

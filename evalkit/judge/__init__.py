"""LLM judges: the models prompt steps ask, the shared clients, and the records of every call.

Also the things that make repeated and large runs cheap: the judge call cache
([`JudgeCache`][evalkit.JudgeCache], activated with [`use_judge_cache`][evalkit.use_judge_cache]),
the per-model rate limiters (`RateLimiter`, shared through
[`shared_rate_limiter`][evalkit.judge.shared_rate_limiter]) and batch mode (``Judge(mode="batch")``:
calls gathered into jobs of the provider's Batch API, recorded in the cache's file so an interrupted
run picks them up), and the check made before a run ([`preflight`][evalkit.judge.preflight]: every
judge's key and endpoint, one request each).

Layout: the judge value (``_judge.py``: model, endpoint, sampling; its call policy as
``Judge.policy``), what is asked and how replies are checked (``_structured.py``, the step
kind given by the caller), the request and cache keys (``_request.py``), the request shapes a
structured step is asked in and what each endpoint refused (``_formats.py``) and the ask
itself (``_ask.py``); ``transport/`` sends (shared clients, the direct ``aiohttp`` path, errors);
``policy/`` decides when (retries, rate limits, breakers); the cache (``_cache*.py``) and the
batch journal (``_batch*.py``) each own their tables in the cache file, opened by
``_duckdb.py``. Other packages use the names below, never the private modules. Why the
layout is so: docs/pages/design/judge-asks-only.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.judge._ask import Asked, ask
    from evalkit.judge._cache import (
        JudgeCache,
        WorkerCache,
        active_judge_cache,
        default_cache_path,
        store_entries,
        use_judge_cache,
    )
    from evalkit.judge._cache_db import JudgeCacheStats
    from evalkit.judge._judge import Judge
    from evalkit.judge._preflight import preflight
    from evalkit.judge._records import (
        JudgeAttempt,
        JudgeCost,
        JudgeErrorInfo,
        JudgeExecution,
        JudgeUsage,
        StepJudgeRecord,
    )
    from evalkit.judge._request import PreparedRequest
    from evalkit.judge._structured import OutputSpec, ScoreSpec, schema_spec
    from evalkit.judge.policy._ratelimit import RateLimiter, RateLimiterStats
    from evalkit.judge.policy._registry import rate_limiter_stats, shared_rate_limiter
    from evalkit.judge.transport._clients import shared_openai_client

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.judge._cache": (
            "JudgeCache",
            "WorkerCache",
            "active_judge_cache",
            "default_cache_path",
            "store_entries",
            "use_judge_cache",
        ),
        "evalkit.judge._cache_db": ("JudgeCacheStats",),
        "evalkit.judge._judge": ("Judge",),
        "evalkit.judge._preflight": ("preflight",),
        "evalkit.judge._records": (
            "JudgeAttempt",
            "JudgeCost",
            "JudgeErrorInfo",
            "JudgeExecution",
            "JudgeUsage",
            "StepJudgeRecord",
        ),
        "evalkit.judge.policy._ratelimit": (
            "RateLimiter",
            "RateLimiterStats",
        ),
        "evalkit.judge.policy._registry": (
            "rate_limiter_stats",
            "shared_rate_limiter",
        ),
        "evalkit.judge.transport._clients": ("shared_openai_client",),
        "evalkit.judge._ask": (
            "Asked",
            "ask",
        ),
        "evalkit.judge._structured": (
            "OutputSpec",
            "ScoreSpec",
            "schema_spec",
        ),
        "evalkit.judge._request": ("PreparedRequest",),
    },
)

__all__ = [
    "Asked",
    "Judge",
    "JudgeAttempt",
    "JudgeCache",
    "JudgeCacheStats",
    "JudgeCost",
    "JudgeErrorInfo",
    "JudgeExecution",
    "JudgeUsage",
    "OutputSpec",
    "PreparedRequest",
    "RateLimiter",
    "RateLimiterStats",
    "ScoreSpec",
    "StepJudgeRecord",
    "WorkerCache",
    "active_judge_cache",
    "ask",
    "default_cache_path",
    "preflight",
    "rate_limiter_stats",
    "schema_spec",
    "shared_openai_client",
    "shared_rate_limiter",
    "store_entries",
    "use_judge_cache",
]

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

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.judge._ask import Asked as Asked
    from evalkit.judge._ask import ask as ask
    from evalkit.judge._cache import JudgeCache as JudgeCache
    from evalkit.judge._cache import active_judge_cache as active_judge_cache
    from evalkit.judge._cache import default_cache_path as default_cache_path
    from evalkit.judge._cache import use_judge_cache as use_judge_cache
    from evalkit.judge._cache_db import CachedReply as CachedReply
    from evalkit.judge._cache_db import JudgeCacheStats as JudgeCacheStats
    from evalkit.judge._judge import Judge as Judge
    from evalkit.judge._preflight import preflight as preflight
    from evalkit.judge._records import JudgeAttempt as JudgeAttempt
    from evalkit.judge._records import JudgeCost as JudgeCost
    from evalkit.judge._records import JudgeErrorInfo as JudgeErrorInfo
    from evalkit.judge._records import JudgeExecution as JudgeExecution
    from evalkit.judge._records import JudgeUsage as JudgeUsage
    from evalkit.judge._records import StepJudgeRecord as StepJudgeRecord
    from evalkit.judge._request import PreparedRequest as PreparedRequest
    from evalkit.judge._structured import OutputSpec as OutputSpec
    from evalkit.judge._structured import ScoreSpec as ScoreSpec
    from evalkit.judge._structured import schema_spec as schema_spec
    from evalkit.judge.policy._ratelimit import RateLimiter as RateLimiter
    from evalkit.judge.policy._ratelimit import RateLimiterStats as RateLimiterStats
    from evalkit.judge.policy._registry import rate_limiter_stats as rate_limiter_stats
    from evalkit.judge.policy._registry import shared_rate_limiter as shared_rate_limiter
    from evalkit.judge.transport._clients import shared_openai_client as shared_openai_client

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())

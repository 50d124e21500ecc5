"""Normalising the ``usage`` of OpenAI-compatible replies, and reading authoritative costs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalkit.judge._records import JudgeUsage


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if math.isfinite(value) else 0


def _details(usage: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    details = usage.get(name)
    return details if isinstance(details, Mapping) else {}


def normalize_usage(usage: Any) -> JudgeUsage | None:
    """OpenAI's ``usage`` object as a :class:`JudgeUsage`, or None when there is none.

    ``prompt_tokens`` → ``input_tokens``, ``completion_tokens`` → ``output_tokens``,
    ``total_tokens`` (input + output when absent), ``prompt_tokens_details.cached_tokens`` →
    ``cached_input_tokens``, ``completion_tokens_details.reasoning_tokens`` →
    ``reasoning_tokens``, and ``cache_creation_input_tokens`` where a provider sends it (at the
    top level, as Anthropic-compatible proxies do, or in ``prompt_tokens_details``).
    Missing or non-numeric counts read as 0.
    """
    if not isinstance(usage, Mapping):
        return None
    input_tokens = _int(usage.get("prompt_tokens"))
    output_tokens = _int(usage.get("completion_tokens"))
    total = usage.get("total_tokens")
    prompt_details = _details(usage, "prompt_tokens_details")
    cache_creation = usage.get("cache_creation_input_tokens")
    if cache_creation is None:
        cache_creation = prompt_details.get("cache_creation_tokens")
    return JudgeUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=_int(total) if total is not None else input_tokens + output_tokens,
        reasoning_tokens=_int(_details(usage, "completion_tokens_details").get("reasoning_tokens")),
        cached_input_tokens=_int(prompt_details.get("cached_tokens")),
        cache_creation_input_tokens=_int(cache_creation),
    )


def reported_cost(usage: Any) -> float | None:
    """The cost the provider reported in ``usage.cost`` (OpenRouter, LiteLLM), else None.

    Only a finite, non-negative number counts; evalkit never estimates a cost here.
    """
    if not isinstance(usage, Mapping):
        return None
    cost = usage.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None

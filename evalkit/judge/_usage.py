"""Normalising the ``usage`` of OpenAI-compatible replies, and reading authoritative costs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalkit.judge._records import MAX_COUNT, JudgeUsage, add_counts


def _count(value: Any, name: str, notes: list[str]) -> int | None:
    """A provider's count as a non-negative integer within int64; anything else is absent
    (None) and says why in ``notes``. A missing count (or null) reads as 0."""
    if value is None:
        return 0
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value == int(value)
        and 0 <= value <= MAX_COUNT
    ):
        return int(value)
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "..."
    notes.append(
        f"usage.{name} {shown} is not a token count (a non-negative integer up to 2**63-1);"
        " recorded as absent"
    )
    return None


def _details(usage: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    details = usage.get(name)
    return details if isinstance(details, Mapping) else {}


def normalize_usage(usage: Any) -> JudgeUsage | None:
    """OpenAI's ``usage`` object as a [`JudgeUsage`][evalkit.JudgeUsage], or None when there is
    none.

    ``prompt_tokens`` → ``input_tokens``, ``completion_tokens`` → ``output_tokens``,
    ``total_tokens`` (input + output when absent), ``prompt_tokens_details.cached_tokens`` →
    ``cached_input_tokens``, ``completion_tokens_details.reasoning_tokens`` →
    ``reasoning_tokens``, and ``cache_creation_input_tokens`` where a provider sends it (at the
    top level, as Anthropic-compatible proxies do, or in ``prompt_tokens_details``).
    A missing count reads as 0. A count that is not a non-negative integer within int64
    (``1e20``, ``10**20``, ``-1``, ``2.5``, ``"12"``) is absent (None, NULL in the store) and
    the usage's ``notes`` say which and why: a provider's absurd number never stops a run.
    """
    if not isinstance(usage, Mapping):
        return None
    notes: list[str] = []
    input_tokens = _count(usage.get("prompt_tokens"), "prompt_tokens", notes)
    output_tokens = _count(usage.get("completion_tokens"), "completion_tokens", notes)
    total = usage.get("total_tokens")
    prompt_details = _details(usage, "prompt_tokens_details")
    completion_details = _details(usage, "completion_tokens_details")
    cache_creation_name = "cache_creation_input_tokens"
    cache_creation = usage.get(cache_creation_name)
    if cache_creation is None:
        cache_creation_name = "prompt_tokens_details.cache_creation_tokens"
        cache_creation = prompt_details.get("cache_creation_tokens")
    return JudgeUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=(
            _count(total, "total_tokens", notes)
            if total is not None
            else add_counts(input_tokens, output_tokens)
        ),
        reasoning_tokens=_count(
            completion_details.get("reasoning_tokens"),
            "completion_tokens_details.reasoning_tokens",
            notes,
        ),
        cached_input_tokens=_count(
            prompt_details.get("cached_tokens"), "prompt_tokens_details.cached_tokens", notes
        ),
        cache_creation_input_tokens=_count(cache_creation, cache_creation_name, notes),
        notes=tuple(notes),
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

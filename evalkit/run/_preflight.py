"""The check a run makes before its first item: the judges it will ask and its chat target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.judge import Judge, preflight
from evalkit.scorer import Scorer


async def check_endpoints(scorers: Sequence[Scorer], target: Any) -> None:
    """Run [`evalkit.judge.preflight`][evalkit.judge.preflight] over every judge of ``scorers`` and
    the target's model settings, when it has some (an [`OpenAITarget`][evalkit.OpenAITarget]'s
    ``settings``).

    A run without judges and without a chat target sends nothing.

    Raises:
        PreflightError: A key is missing, refused, or an endpoint does not answer.
    """
    judges = [judge for scorer in scorers for judge in scorer.judges]
    settings = getattr(target, "settings", None)
    chat_target = settings if isinstance(settings, Judge) else None
    if judges or chat_target is not None:
        await preflight(judges, target=chat_target)

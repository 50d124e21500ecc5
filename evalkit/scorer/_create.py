"""``create_scorer``: the start of every scorer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.errors import ConfigError
from evalkit.judge import Judge
from evalkit.scorer._ids import slugify
from evalkit.scorer._limits import DEFAULT_STEP_TIMEOUT
from evalkit.scorer._scorer import Scorer


def create_scorer(
    name: str,
    description: str = "",
    *,
    id: str | None = None,
    judge: Judge | None = None,
    higher_is_better: bool = True,
    metadata: Mapping[str, Any] | None = None,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
) -> Scorer:
    """Start building a scorer.

    Args:
        name: Display name, e.g. ``"Quality Scorer"``.
        description: What the scorer measures.
        id: The id the store records; defaults to a slug of ``name`` (``"quality-scorer"``).
        judge: The default judge for the scorer's prompt steps; a step's own judge overrides
            it field by field.
        higher_is_better: False for scores where lower is better (toxicity, error rates), so
            comparisons and regression gates judge them in the right direction.
        metadata: Extra facts kept with the scorer (a read-only copy), e.g. a definition version.
        step_timeout: Seconds one sync step may run in ``run_evals`` before that item's pair
            fails with [`StepTimeoutError`][evalkit.StepTimeoutError] and the run goes on (default
            60; above 0 and at most 86,400; None: no limit). Async and prompt steps are bounded by
            their own timeouts instead.

    Returns:
        A scorer with no steps; add them with ``.preprocess``, ``.analyze``,
        ``.generate_score`` (required) and ``.generate_reason``.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a scorer needs a non-empty name, got {name!r}")
    scorer_id = slugify(name) if id is None else id
    if not scorer_id or not isinstance(scorer_id, str):
        raise ConfigError(f"scorer {name!r}: an id must be a non-empty string, got {id!r}")
    if judge is not None and not isinstance(judge, Judge):
        raise ConfigError(f"scorer {name!r}: judge must be a Judge, not {type(judge).__name__}")
    if not isinstance(higher_is_better, bool):
        raise ConfigError(
            f"scorer {name!r}: higher_is_better must be True or False, got {higher_is_better!r}"
        )
    return Scorer(
        id=scorer_id,
        name=name,
        description=description,
        judge=judge,
        steps={},
        higher_is_better=higher_is_better,
        metadata=metadata,
        step_timeout=step_timeout,
    )

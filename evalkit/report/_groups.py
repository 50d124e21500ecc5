"""Failure groups: a run's failures as the distinct errors behind them, with counts.

A judge outage fails every pair with the same error, give or take an item id, a port or a
request id; 200 identical rows in a report hide that there is one problem. Grouping first
normalises each message into a *pattern* — UUIDs, hex and prefixed ids, quoted values and
numbers replaced by placeholders (an HTTP status is kept: ``HTTP 401`` and ``HTTP 500`` are
different problems; so is an endpoint, ``http://127.0.0.1:8000/v1`` or ``10.0.0.7:8000``:
it says which server failed, and a judge's failures all name the same one) — then counts the
failures per scorer, error type, failed step and pattern, keeping one example.

Groups are built from the per-item results a run keeps in memory. A run with
``keep_results=False`` (or a sharded run, whose items stay in its workers) has none, so it has
no groups; its failures are in the store's ``scorer_errors`` table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit._error_pattern import error_pattern

if TYPE_CHECKING:
    from evalkit.run import ErrorInfo, ItemResult

#: The scorer id of failures of the target (the item's output could not be produced).
TARGET = "(target)"


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """Failures of one scorer sharing an error type, a failed step and a message pattern.

    Attributes:
        scorer_id: The scorer, or ``"(target)"`` for failures of the target.
        error_type: The class of the error the step (or target) raised, e.g. ``JudgeError``.
        pattern: The message with ids, numbers and quoted values replaced by placeholders.
        count: How many failures the group holds.
        example_item_id: The first item (in dataset order) that failed this way.
        example_message: Its message, as it was.
        failed_step: The step that failed, or None (target failures, errors outside a step).
    """

    scorer_id: str
    error_type: str
    pattern: str
    count: int
    example_item_id: str
    example_message: str
    failed_step: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return {
            "scorer_id": self.scorer_id,
            "error_type": self.error_type,
            "failed_step": self.failed_step,
            "pattern": self.pattern,
            "count": self.count,
            "example_item_id": self.example_item_id,
            "example_message": self.example_message,
        }


def failure_groups(
    items: Iterable[ItemResult], *, scorer_ids: Sequence[str] = ()
) -> tuple[FailureGroup, ...]:
    """The failures of ``items`` grouped by scorer, error type, failed step and pattern.

    Args:
        items: A run's per-item results (``ExperimentResult.items``), in dataset order.
        scorer_ids: The order to list scorers in (the run's); target failures come first,
            scorers not named here last, in the order their first failure appears.

    Returns:
        The groups, per scorer, largest first (ties in order of first appearance).
    """
    counts: dict[tuple[str, str, str | None, str], list[Any]] = {}

    def add(scorer_id: str, item_id: str, error: ErrorInfo, step: str | None) -> None:
        error_type, message = _cause(error)
        key = (scorer_id, error_type, step, error_pattern(message))
        found = counts.get(key)
        if found is None:
            counts[key] = [1, item_id, message]
        else:
            found[0] += 1

    for item in items:
        if item.error is not None:
            add(TARGET, item.item_id, item.error, None)
        for outcome in item.outcomes:
            if outcome.status != "success" and outcome.error is not None:
                add(outcome.scorer_id, item.item_id, outcome.error, outcome.failed_step)
    rank = {sid: i for i, sid in enumerate((TARGET, *scorer_ids))}
    for key in counts:  # scorers not named: after the others, in order of appearance
        rank.setdefault(key[0], len(rank))
    # sorted() is stable: ties keep their order of first appearance.
    ordered = sorted(counts.items(), key=lambda entry: (rank[entry[0][0]], -entry[1][0]))
    return tuple(
        FailureGroup(scorer_id, error_type, pattern, count, item_id, message, step)
        for (scorer_id, error_type, step, pattern), (count, item_id, message) in ordered
    )


def _cause(error: ErrorInfo) -> tuple[str, str]:
    """The error type and message to group by: for a scorer run, the error its step raised
    (``ScorerRunError`` itself says only which scorer and step, which the group has)."""
    cause = (error.data or {}).get("cause")
    if error.name == "ScorerRunError" and isinstance(cause, dict):
        return str(cause.get("name") or error.name), str(cause.get("message") or error.message)
    return error.name, error.message


@dataclass(frozen=True, slots=True)
class ScorerFailures:
    """One scorer's groups as a report lists them: the largest ``shown``, the rest counted."""

    scorer_id: str
    failures: int
    shown: tuple[FailureGroup, ...]
    more_groups: int
    more_failures: int

    @property
    def more_text(self) -> str:
        """``… 2 more groups (9 failures)``, or "" when every group is shown."""
        if not self.more_groups:
            return ""
        groups = "group" if self.more_groups == 1 else "groups"
        failures = "failure" if self.more_failures == 1 else "failures"
        return f"… {self.more_groups} more {groups} ({self.more_failures} {failures})"


def per_scorer(groups: Sequence[FailureGroup], *, limit: int) -> list[ScorerFailures]:
    """``groups`` (as [`failure_groups`][evalkit.report.failure_groups] orders them) per scorer, at
    most ``limit`` each."""
    by_scorer: dict[str, list[FailureGroup]] = {}
    for group in groups:
        by_scorer.setdefault(group.scorer_id, []).append(group)
    return [
        ScorerFailures(
            scorer_id,
            sum(g.count for g in found),
            tuple(found[:limit]),
            max(len(found) - limit, 0),
            sum(g.count for g in found[limit:]),
        )
        for scorer_id, found in by_scorer.items()
    ]


def group_text(group: FailureGroup) -> str:
    """``JudgeError at analyze: <pattern>``: what failed, without the count."""
    where = f" at {group.failed_step}" if group.failed_step else ""
    return f"{group.error_type}{where}: {group.pattern}"

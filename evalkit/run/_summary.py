"""Running summaries of a run: counts, and per scorer n / mean / spread, in constant memory."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evalkit._json import dumps

if TYPE_CHECKING:
    from evalkit.run._outcome import ItemResult

ExperimentStatus = Literal[
    "running", "completed", "completed_with_errors", "failed", "cancelled", "interrupted"
]


@dataclass(frozen=True, slots=True)
class ScorerSummary:
    """One scorer over a run. Statistics are over successful scores only.

    Attributes:
        scorer_id: The scorer's id.
        succeeded: Items the scorer scored (its n).
        failed: Items on which it failed.
        mean: Mean of the successful scores, or None without any.
        stddev: Sample standard deviation, or None with fewer than two scores.
        min: Lowest successful score, or None.
        max: Highest successful score, or None.
    """

    scorer_id: str
    succeeded: int
    failed: int
    mean: float | None
    stddev: float | None
    min: float | None
    max: float | None

    @property
    def n(self) -> int:
        """The number of successful scores."""
        return self.succeeded

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return {
            "scorer_id": self.scorer_id,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "mean": self.mean,
            "stddev": self.stddev,
            "min": self.min,
            "max": self.max,
        }


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Counts over a run.

    Attributes:
        total_items: Rows to evaluate (the dataset, or its first ``limit`` rows).
        processed: Items finished (less than ``total_items`` when cancelled).
        succeeded: Items whose output was obtained and whose every scorer succeeded.
        failed: Items with a target failure or at least one failed scorer.
        target_failed: Items whose target failed (no scorer ran on them).
        scorers: Per-scorer summaries, in scorer order.
    """

    total_items: int
    processed: int
    succeeded: int
    failed: int
    target_failed: int
    scorers: Mapping[str, ScorerSummary]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the counts and per-scorer summaries."""
        return {
            "total_items": self.total_items,
            "processed": self.processed,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "target_failed": self.target_failed,
            "scorers": {sid: s.to_dict() for sid, s in self.scorers.items()},
        }


# Welford's updates in halves, with m2 held as a float times 2**k, so scores near the float
# limit (±1e308) give their true mean and spread instead of inf - inf = NaN (issue 30).
# Powers of two scale exactly: for everyday scores k stays 0 and the figures are those of the
# plain updates.
_RESCALE_ABOVE = 900  # binary exponent past which m2 is scaled down
_RESCALE_BY = 512  # even, so the spread's square root scales by a whole power of two
_M2S_ABOVE = 2.0**_RESCALE_ABOVE
_PLAIN_BELOW = 2.0**400  # halves below this multiply without overflow


class _Welford:
    """Streaming mean and variance (Welford), so a summary-only run needs no per-item memory.

    The sum of squared deviations is ``m2s * 2**k``: it stays representable for any finite
    scores, where the sum itself could exceed a float.
    """

    __slots__ = ("failed", "high", "k", "low", "m2s", "mean", "n")

    def __init__(self) -> None:
        self.n = 0
        self.failed = 0
        self.mean = 0.0
        self.m2s = 0.0
        self.k = 0
        self.low = math.inf
        self.high = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        if self.n == 1:
            self.mean = x
        else:
            half = x / 2 - self.mean / 2  # (x - mean) / 2, which cannot overflow
            self.mean += (half / self.n) * 2
            after = x / 2 - self.mean / 2
            if self.k == 0 and abs(half) < _PLAIN_BELOW and abs(after) < _PLAIN_BELOW:
                self.m2s += half * after * 4  # everyday scores: the same bits, faster
            else:
                self._add_product(half, after, 4.0)
        if x < self.low:
            self.low = x
        if x > self.high:
            self.high = x

    def _add_product(self, a: float, b: float, weight: float, shift: int = 0) -> None:
        """``m2 += a * b * weight * 2**shift`` without overflow (``weight`` < 2**100)."""
        mant_a, exp_a = math.frexp(a)
        mant_b, exp_b = math.frexp(b)
        exponent = exp_a + exp_b + shift
        while exponent - self.k > _RESCALE_ABOVE:
            self.m2s = math.ldexp(self.m2s, -_RESCALE_BY)
            self.k += _RESCALE_BY
        self.m2s += math.ldexp(mant_a * mant_b * weight, exponent - self.k)
        if self.m2s > _M2S_ABOVE:
            self.m2s = math.ldexp(self.m2s, -_RESCALE_BY)
            self.k += _RESCALE_BY

    def stddev(self) -> float | None:
        """The sample standard deviation, or None with fewer than two scores."""
        if self.n < 2:
            return None
        try:
            return math.ldexp(math.sqrt(self.m2s / (self.n - 1)), self.k // 2)
        except OverflowError:
            return math.inf

    def merge(self, n: int, mean: float, m2s: float, k: int) -> None:
        """Add another accumulator's ``n``, ``mean`` and ``m2s * 2**k`` (Chan et al.)."""
        total = self.n + n
        half = mean / 2 - self.mean / 2
        self._add_product(m2s, 1.0, 1.0, k)
        self._add_product(half, half, 4.0 * (self.n / total) * n)
        merged = self.mean + (mean - self.mean) * n / total
        if not math.isfinite(merged):  # the difference, or its product with n, overflowed
            merged = self.mean * (self.n / total) + mean * (n / total)
        self.mean = merged
        self.n = total


class SummaryBuilder:
    """Accumulates item results into a [`RunSummary`][evalkit.RunSummary]."""

    def __init__(self, scorer_ids: Sequence[str], total_items: int) -> None:
        self.total_items = total_items
        self.processed = 0
        self.succeeded = 0
        self.target_failed = 0
        self._stats = {sid: _Welford() for sid in scorer_ids}

    @property
    def failed(self) -> int:
        """Items finished without full success so far."""
        return self.processed - self.succeeded

    def add(self, result: ItemResult) -> None:
        """Count one finished item (only successful scores enter the statistics)."""
        self.processed += 1
        if result.status == "success":
            self.succeeded += 1
        elif result.error is not None:
            self.target_failed += 1
        stats = self._stats
        for outcome in result.outcomes:
            if outcome.status == "success" and outcome.score is not None:
                stats[outcome.scorer_id].add(outcome.score)
            else:
                stats[outcome.scorer_id].failed += 1

    def status(self) -> ExperimentStatus:
        """How a run over these items ended: ``"failed"`` when items were processed but no
        scorer succeeded on any, else ``"completed_with_errors"`` when a scorer failed, else
        ``"completed"``."""
        if self.processed and not any(s.n for s in self._stats.values()):
            return "failed"
        return "completed_with_errors" if self.failed else "completed"

    def state(self) -> str:
        """The running state as JSON: what `merge` adds to another builder (a sharded
        run stores it with each finished shard, and merges the stored ones on resume)."""
        stats = {
            # m2 as m2s and k (last, so a state written before k is read as k = 0).
            sid: [s.n, s.failed, s.mean, s.m2s, *((s.low, s.high) if s.n else (None, None)), s.k]
            for sid, s in self._stats.items()
        }
        return dumps(
            {
                "processed": self.processed,
                "succeeded": self.succeeded,
                "target_failed": self.target_failed,
                "stats": stats,
            }
        )

    def merge(self, state: str) -> None:
        """Add another builder's `state` to this one (Chan et al.'s parallel
        mean/variance)."""
        data = json.loads(state)
        self.processed += data["processed"]
        self.succeeded += data["succeeded"]
        self.target_failed += data["target_failed"]
        for sid, (n, failed, mean, m2s, low, high, *k) in data["stats"].items():
            s = self._stats[sid]
            s.failed += failed
            if not n:
                continue
            s.merge(n, mean, m2s, k[0] if k else 0)
            s.low = min(s.low, low)
            s.high = max(s.high, high)

    def build(self) -> RunSummary:
        """The summary so far."""
        scorers = {
            sid: ScorerSummary(
                scorer_id=sid,
                succeeded=s.n,
                failed=s.failed,
                mean=s.mean if s.n else None,
                stddev=s.stddev(),
                min=s.low if s.n else None,
                max=s.high if s.n else None,
            )
            for sid, s in self._stats.items()
        }
        return RunSummary(
            total_items=self.total_items,
            processed=self.processed,
            succeeded=self.succeeded,
            failed=self.failed,
            target_failed=self.target_failed,
            scorers=scorers,
        )


def summary_from_counts(counts: Mapping[str, Any], scorer_ids: Sequence[str]) -> RunSummary:
    """A [`RunSummary`][evalkit.RunSummary] from the store's counts of an experiment
    (``read_run_counts``), so a resumed run is summarised over every pass, not only its last one."""
    scorers = {}
    for sid in scorer_ids:
        row = counts["scorers"].get(sid, {})
        n = int(row.get("n") or 0)
        scorers[sid] = ScorerSummary(
            scorer_id=sid,
            succeeded=n,
            failed=int(row.get("errors") or 0),
            mean=row.get("mean") if n else None,
            stddev=row.get("stddev") if n > 1 else None,
            min=row.get("min") if n else None,
            max=row.get("max") if n else None,
        )
    return RunSummary(
        total_items=counts["total_items"],
        processed=counts["processed"],
        succeeded=counts["succeeded"],
        failed=counts["failed"],
        target_failed=counts["target_failed"],
        scorers=scorers,
    )


def state_from_counts(counts: Mapping[str, Any], scorer_ids: Sequence[str]) -> str:
    """A `SummaryBuilder.state` of stored rows, from their counts (``shard_counts`` of
    ``evalkit.store``): a retried shard's summary, recomputed from what it now holds."""
    stats = {}
    for sid in scorer_ids:
        row = counts["scorers"].get(sid, {})
        n = int(row.get("n") or 0)
        stats[sid] = [
            n,
            int(row.get("errors") or 0),
            float(row["mean"]) if n else 0.0,
            float(row.get("m2") or 0.0) if n else 0.0,
            row.get("min") if n else None,
            row.get("max") if n else None,
            int(row.get("k") or 0) if n else 0,
        ]
    return dumps(
        {
            "processed": counts["processed"],
            "succeeded": counts["succeeded"],
            "target_failed": counts["target_failed"],
            "stats": stats,
        }
    )

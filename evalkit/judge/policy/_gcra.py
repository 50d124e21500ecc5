"""The rpm and tpm token buckets of a `RateLimiter`, in GCRA form.

GCRA ("virtual scheduling") keeps one number per bucket, its theoretical arrival time: a
request may start once ``tat - tolerance`` has come, and starting charges it ``cost / rate``
from then (see the rate limiter's module docstring for why slots are charged when taken).
"""

from __future__ import annotations


class Bucket:
    """A token bucket as GCRA: ``tat`` is when the bucket would be empty again."""

    __slots__ = ("rate", "tat", "tolerance")

    def __init__(self, per_second: float, tolerance: float) -> None:
        self.rate = per_second
        self.tolerance = tolerance
        self.tat = 0.0

    def earliest(self, now: float) -> float:
        """When a request arriving at ``now`` may start."""
        start = self.tat - self.tolerance
        return start if start > now else now

    def commit(self, start: float, cost: float) -> None:
        """Charge ``cost`` to a request starting at ``start``."""
        self.tat = (self.tat if self.tat > start else start) + cost / self.rate

    def adjust(self, cost: float) -> None:
        """Charge (or refund, when negative) ``cost`` after the fact."""
        self.tat += cost / self.rate

    def defer(self, until: float) -> None:
        """Start nothing before ``until``, then pace at the rate (no burst after a pause)."""
        self.tat = max(self.tat, until + self.tolerance)

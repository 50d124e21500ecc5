"""How many items a run covers, as the reports, the CLI's listings and the viewer show it."""

from __future__ import annotations


def items_done(done: int, total: int) -> str:
    """``"43 of 200"`` for a run that stopped (or is still running) short of its total, else
    ``"200"``: a cancelled run's total is what it set out to do, not what it did."""
    return str(total) if done == total else f"{done} of {total}"

"""The progress bar on stderr: items done of total, failures, rate and ETA."""

from __future__ import annotations

import sys
import time
from typing import Any

from evalkit._visible import visible
from evalkit.judge import rate_limiter_stats

_REFRESH_S = 0.2


class Progress:
    """A tqdm bar fed item by item, redrawn at most every 0.2 s to stay cheap."""

    def __init__(self, total: int, *, name: str, enabled: bool) -> None:
        self.enabled = enabled
        self.failures = 0
        self._pending = 0
        self._last = 0.0
        self.bar: Any = None
        if not enabled:  # tqdm is imported only to draw a bar (issue 31 item 6)
            return
        from tqdm import tqdm

        self.bar = tqdm(
            total=total,
            # An experiment name may hold escape sequences or line breaks: one visible line.
            desc=visible(name).replace("\n", "\\n").replace("\t", "\\t"),
            unit="item",
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=_REFRESH_S,
        )

    def item_done(self, failed: bool) -> None:
        """Count one finished item."""
        if not self.enabled:
            return
        self._pending += 1
        if failed:
            self.failures += 1
        now = time.monotonic()
        if now - self._last >= _REFRESH_S:
            self._last = now
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.update(self._pending)
            self._pending = 0

    def _postfix(self) -> str:
        # Models under a rate limit show their current concurrency (AIMD lowers it during 429
        # storms), the calls waiting for a slot and the 429s met so far.
        parts = [f"failures={self.failures}"]
        for model in rate_limiter_stats():
            if model.rpm or model.tpm or model.rate_limited or model.waiting:
                parts.append(
                    f"{model.name}: conc={model.concurrency or '-'} waiting={model.waiting}"
                    f" 429s={model.rate_limited}"
                )
        return " ".join(parts)

    def close(self) -> None:
        """Draw the final state and release the bar."""
        if self.bar is not None:
            self._flush()
            self.bar.close()

"""A Ctrl-C noted, not obeyed, while a recorded run is judged and reported.

Shared by [`run_experiment_file`][evalkit.experiment_file.run_experiment_file] (judging a run
that scored every item) and ``evalkit run`` (writing its reports).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: What a Ctrl-C that came while a finished run was judged or reported leads to.
FINISHING_CTRL_C = (
    "evalkit: Ctrl-C after every item was scored: the run is finished (its verdict and"
    " reports are written)"
)


@contextlib.contextmanager
def ctrl_c_noted() -> Iterator[list[int]]:
    """Inside the block a Ctrl-C is noted in the list yielded, not obeyed.

    For the moments after a run was recorded: a run that scored every item is being judged
    and reported (stopping that would leave a finished run without its verdict and reports),
    or a stopped run is being reported. See docs/pages/design/ctrl-c-once.md. In the main
    thread only; elsewhere, nothing changes.
    """
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def note(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)

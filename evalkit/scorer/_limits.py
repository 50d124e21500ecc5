"""Time limits of sync steps: the clock a scorer run sets, and the watchdog that enforces it.

A sync step runs inline on the event loop (a thread each would cost more than most steps), so a
step that never returns would stall the whole run: nothing flushed, Ctrl-C ignored. A scorer run
writes which run and which step it is in into the `StepClock` of its event loop (the step
before it starts, nothing before anything is awaited); reading the time is left to a
`StepWatchdog` thread, which sees how long one step has been on the
clock. Past the limit it signals the loop's thread, whose handler checks the clock again (in that
thread, so a step that has already finished is never hit) and raises `StepStopped` inside the step.
The scorer records the pair as failed with [`StepTimeoutError`][evalkit.StepTimeoutError]; the run
goes on. Ctrl-C while a sync step runs stops the step at once (`StepInterrupted`), and the scorer
waits for the cancellation the loop's own SIGINT handler asked for, so the run ends as
``cancelled``.

Design: docs/pages/design/step-time-limits.md.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from contextvars import ContextVar, Token
from types import FrameType, TracebackType
from typing import Any

import anyio

from evalkit._ceilings import STEP_TIMEOUT, check_allowed
from evalkit.errors import EvalkitError
from evalkit.scorer._result import StepName

#: Seconds a sync step may run before it fails (``create_scorer(step_timeout=...)``).
DEFAULT_STEP_TIMEOUT = 60.0

#: The signal the watchdog sends to the main thread; it is taken only when nothing handles it.
WATCHDOG_SIGNAL = getattr(signal, "SIGUSR2", None)

#: Seconds between two looks of the watchdog at most.
_MAX_POLL = 0.25


class StepTimeoutError(EvalkitError, TimeoutError):
    """A sync step ran past its scorer's ``step_timeout``: the pair failed, the run went on.

    Attributes:
        scorer: The scorer's name.
        step: The step that ran too long.
        seconds: The limit.
    """

    def __init__(self, scorer: str, step: StepName, seconds: float) -> None:
        self.scorer = scorer
        self.step: StepName = step
        self.seconds = seconds
        super().__init__(f"step {step} of scorer {scorer!r} took longer than {seconds:g} s")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary naming the scorer, the step and the limit."""
        return {**super().to_dict(), "step": self.step, "seconds": self.seconds}


class StepStopped(BaseException):
    """Raised inside a sync step that is past its limit (a BaseException, so a step's
    ``except Exception`` does not swallow it); the scorer turns it into a StepTimeoutError."""


class StepInterrupted(StepStopped):
    """Raised inside a sync step when Ctrl-C arrives while it runs."""


async def await_cancellation(seconds: float = 1.0) -> None:
    """Give the event loop ``seconds`` to deliver the cancellation a Ctrl-C asked for (it
    raises here); returns if none comes (a SIGINT handler that cancels nothing)."""
    with anyio.move_on_after(seconds):
        await anyio.sleep_forever()


class StepClock:
    """What runs on one event loop: a scorer run, its limit and its sync step (None: no step)."""

    __slots__ = ("late", "limit", "run", "step")

    def __init__(self) -> None:
        self.run: object = None
        self.step: StepName | None = None
        self.limit = math.inf
        # Set by the watchdog to the (run, step) it saw past its limit: that run checks it
        # when its steps are done (the only enforcement when the loop's thread cannot be
        # signalled: the step ran to its end, the pair fails all the same).
        self.late: tuple[object, StepName] | None = None


_IDLE = StepClock()  # outside a watched run: written, never read
#: The clock of the current run (a scratch one outside a watched run).
CLOCK: ContextVar[StepClock] = ContextVar("evalkit_step_clock", default=_IDLE)


def check_step_timeout(value: Any, where: str) -> float:
    """``value`` as a limit in seconds: a number above 0 and at most a day
    (`evalkit._ceilings.STEP_TIMEOUT`), or None for no limit (``inf``)."""
    if value is None:
        return math.inf
    check_allowed(f"{where}: step_timeout", value, STEP_TIMEOUT)
    return float(value)


class StepWatchdog:
    """Enforces the step time limits of the run on the current event loop, while entered.

    Enter it in the task that runs the items (they inherit its clock). In the main thread the
    watchdogs entered take `WATCHDOG_SIGNAL` (when nothing else handles it) and wrap the
    SIGINT handler, until the last one exits; elsewhere, or on a platform without the signal,
    a step past its limit runs to its end and then fails with the same error.

    Args:
        poll: Seconds between two looks at the clock (a step overruns by at most this).
    """

    def __init__(self, *, poll: float = _MAX_POLL) -> None:
        self.poll = min(max(poll, 0.01), _MAX_POLL)
        self.clock = StepClock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._token: Token[StepClock] | None = None
        self._main: int | None = None
        self._joined = False
        # The step the watchdog found past its limit and signalled about: (run, step).
        self._suspect: tuple[object, StepName | None] = (None, None)

    def __enter__(self) -> StepWatchdog:
        self._token = CLOCK.set(self.clock)
        if threading.current_thread() is threading.main_thread():
            self._joined = True
            if _SIGNALS.join(self):
                self._main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._watch, name="evalkit-step-watchdog")
        self._thread.daemon = True
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.clock.step = None
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._joined:
            self._joined = False
            _SIGNALS.leave(self)
        if self._token is not None:
            CLOCK.reset(self._token)
            self._token = None

    def stop_if_late(self) -> None:
        """In the loop's thread: stop the step found past its limit if it is still running."""
        clock = self.clock
        run, step = self._suspect
        if step is not None and clock.step == step and clock.run is run:
            # Once the exception leaves the step, the scorer takes the step off the clock:
            # a later signal finds nothing to stop, unless the step swallowed this one.
            raise StepStopped

    def _watch(self) -> None:
        # A (run, step) pair is on the clock once: seen on two looks, it ran all along, for
        # at least the time between them (never less: it started before it was first seen).
        clock, stop = self.clock, self._stop
        seen: tuple[object, StepName | None] = (None, None)
        since = signalled = 0.0
        while not stop.wait(self.poll):
            now = time.monotonic()
            current = (clock.run, clock.step)
            if current[1] is None or current != seen:
                seen, since = current, now
                continue
            if now - since < clock.limit:
                continue
            clock.late = current  # type: ignore[assignment]
            # Again every second while it runs on: a step that catches BaseException (a bare
            # except) and goes on is stopped again where it is then.
            if self._main is not None and (self._suspect != current or now - signalled >= 1.0):
                self._suspect, signalled = current, now
                signal.pthread_kill(self._main, WATCHDOG_SIGNAL)  # type: ignore[arg-type]


class _Signals:
    """The main thread's handlers, shared by the watchdogs entered there (two runs side by side
    in one event loop); only the main thread changes them, and their handlers run there."""

    def __init__(self) -> None:
        self.active: list[StepWatchdog] = []
        # (signal, the handler found, the handler put in its place)
        self.saved: list[tuple[int, Any, Any]] = []
        self.alarm = False

    def join(self, watchdog: StepWatchdog) -> bool:
        """Add ``watchdog``; whether the watchdog signal is handled (so it may send it)."""
        if not self.active:
            if WATCHDOG_SIGNAL is not None and signal.getsignal(WATCHDOG_SIGNAL) in (
                signal.SIG_DFL,
                signal.SIG_IGN,
            ):
                self._take(WATCHDOG_SIGNAL, self._on_alarm)
                self.alarm = True
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):
                self._take(signal.SIGINT, self._interrupt_with(previous))
        self.active.append(watchdog)
        return self.alarm

    def leave(self, watchdog: StepWatchdog) -> None:
        """Remove ``watchdog``; the last one out gives the handlers back."""
        self.active.remove(watchdog)
        if self.active:
            return
        for signum, previous, ours in reversed(self.saved):
            # Left alone if someone replaced it meanwhile: theirs now.
            if signal.getsignal(signum) is ours:
                signal.signal(signum, previous)
        self.saved.clear()
        self.alarm = False

    def _take(self, signum: int, handler: Any) -> None:
        self.saved.append((signum, signal.signal(signum, handler), handler))

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        # Runs between two bytecodes of whatever the main thread is doing.
        for watchdog in tuple(self.active):
            watchdog.stop_if_late()

    def _interrupt_with(self, previous: Any) -> Any:
        def on_sigint(signum: int, frame: FrameType | None) -> Any:
            result = previous(signum, frame)
            # The loop's own handler only asks for a cancellation, delivered when the loop
            # next runs: a sync step that keeps it from running is stopped now.
            for watchdog in tuple(self.active):
                if watchdog.clock.step is not None:
                    watchdog.clock.step = None
                    raise StepInterrupted
            return result

        return on_sigint


_SIGNALS = _Signals()

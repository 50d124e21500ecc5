"""Ceilings on what an experiment file or a run's options may ask for.

Each guards against a value that would exhaust the machine before any useful work is done
(see docs/pages/design/ceilings-on-inputs.md); they are shared by the run options, the CLI
and the experiment file so all three refuse the same values.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.errors import ConfigError

#: Most items in flight at once. Each worker is a task holding an item, its target call and
#: its scorers' state (a few KB); 10,000 is far past what any endpoint's rate limits allow
#: and still starts in well under a second, while 10**6 took 4 GB and 90 s.
MAX_CONCURRENCY = 10_000

#: The most executions ``repeats`` may ask of each LLM-judged pair (each one is a judge call).
MAX_REPEATS = 20

#: Most worker processes of a sharded run (``workers``). Each is a Python process holding the
#: run's stack, about 150 MB, so 1,024 on one machine is already 150 GB; a Ray cluster of
#: that many CPUs is large, and past it more items in flight come from ``concurrency``
#: inside each worker, not from more processes.
MAX_WORKERS = 1024

#: Most bootstrap (and sign-flip) resamples of a comparison or an agreement interval. The
#: resampled means alone take 8 bytes each (10**12 asked for 8 TB); 10**6 resamples hold an
#: interval's ends to the third digit, far past what the default 10,000 already does.
MAX_RESAMPLES = 1_000_000

#: Longest time limit of one regular expression match (``regex_match``'s ``timeout``), in
#: seconds: the regex engine cannot represent a limit of 1e15 s or more (every match then
#: fails), and a match needing an hour is a pattern to fix, not to wait for.
MAX_REGEX_TIMEOUT = 3600.0

#: Most columns a dataset may have. DuckDB's reading of a CSV file grows faster than its
#: column count (20 rows opened in 0.3 s at 1,000 columns, 6 s at 10,000, 40 s at 30,000;
#: 100,000 took minutes and 30 s to answer Ctrl-C), and every column is a Python value per
#: item besides. No evaluation dataset needs more: a CSV header is checked before DuckDB
#: reads the file, any other source once its columns are known.
MAX_DATASET_COLUMNS = 10_000


#: Largest cap on a judge reply's body (``max_reply_bytes``): 1 GiB. The cap bounds what one
#: call holds (the body, then its decoded JSON: several times its size); a reply of a gigabyte
#: is no judgement, and twelve calls in flight at that cap would already need tens of GB.
MAX_REPLY_BYTES = 2**30
#: Smallest cap on a judge reply's body: a chat completion's envelope alone is a few hundred
#: bytes, so a cap below 1,024 would refuse ordinary replies.
MIN_REPLY_BYTES = 1024


def _check(key: str, value: float, ceiling: float, what: str) -> None:
    if value > ceiling:
        raise ConfigError(
            f"{key} = {value} is above the ceiling of {what}; see"
            " docs/pages/design/ceilings-on-inputs.md)"
        )


def check_concurrency_ceiling(key: str, value: int) -> None:
    """Refuse a concurrency above `MAX_CONCURRENCY`, naming ``key`` (option or flag).

    Raises:
        ConfigError: ``value`` is above the ceiling.
    """
    _check(
        key, value, MAX_CONCURRENCY, f"{MAX_CONCURRENCY} items in flight (more only costs memory"
    )


def check_resamples_ceiling(key: str, value: int) -> None:
    """Refuse more resamples than `MAX_RESAMPLES`, naming ``key`` (option or flag).

    Raises:
        ConfigError: ``value`` is above the ceiling.
    """
    _check(key, value, MAX_RESAMPLES,
           f"{MAX_RESAMPLES:,} resamples (more only cost memory and time")  # fmt: skip


def check_workers_ceiling(key: str, value: int) -> None:
    """Refuse more worker processes than `MAX_WORKERS`, naming ``key`` (option or flag).

    Raises:
        ConfigError: ``value`` is above the ceiling.
    """
    _check(key, value, MAX_WORKERS, f"{MAX_WORKERS} worker processes (each holds the run's stack;"
           " more items in flight come from the concurrency inside each worker")  # fmt: skip


# --- The ranges of the other numeric options (issue 30 item 7) ------------------------------
# Every numeric option a user sets has a documented range, checked where the option enters
# (``run_evals``, ``Judge``, ``create_scorer``, the CLI's flags, the experiment file) before
# any work, naming the option (key or flag), the value and the range. The upper bound is
# :func:`_check`'s ceiling; past the type, NaN and the lower bound, nothing else is checked.


@dataclass(frozen=True, slots=True)
class Allowed:
    """An option's allowed range: ``low`` (excluded when ``low_open``) to ``high``."""

    low: float
    high: float
    integer: bool = False
    low_open: bool = False
    unit: str = ""

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a number"
        unit = f" of {self.unit}" if self.unit else ""
        low = (
            f"above {_number(self.low)} and at most"
            if self.low_open
            else f"from {_number(self.low)} to"
        )
        return f"{kind}{unit} {low} {_number(self.high)}"

    def holds(self, value: object) -> bool:
        """Whether ``value`` is a number of the right kind within the range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if value != value or value < self.low or (self.low_open and value == self.low):
            return False
        return value <= self.high


#: A sampling temperature (``Judge``, ``[judge]``, ``[target]``).
TEMPERATURE = Allowed(0.0, 2.0)
#: Tokens of one reply (``max_tokens``): ten times the longest any model writes today.
MAX_TOKENS = Allowed(1, 1_000_000, integer=True)
#: Seconds of one HTTP attempt (a judge's or a target's ``timeout``): up to a day.
HTTP_TIMEOUT = Allowed(0, 86_400, low_open=True, unit="seconds")
#: Retries of one call (``max_retries``); each waits with back-off, so 100 is hours.
RETRIES = Allowed(0, 100, integer=True)
#: Retries after an HTTP 429 (``rate_limit_retries``), each waiting up to 60 s.
RATE_LIMIT_RETRIES = Allowed(0, 1_000, integer=True)
#: Requests per minute allowed to a model (``rpm``): one every 100 minutes to 10 million.
RPM = Allowed(0.01, 10_000_000)
#: Tokens per minute allowed to a model (``tpm``).
TPM = Allowed(1, 10_000_000_000)
#: Requests in one provider batch (``batch_max_requests``; OpenAI takes 50,000).
BATCH_MAX_REQUESTS = Allowed(1, 1_000_000, integer=True)
#: Seconds of a batch's waits (``batch_flush_after``, ``batch_poll_interval``): up to a day.
BATCH_SECONDS = Allowed(0, 86_400, low_open=True, unit="seconds")
#: Seconds one sync scorer step may run (``step_timeout``; None for no limit): up to a day.
STEP_TIMEOUT = Allowed(0, 86_400, low_open=True, unit="seconds")
#: Seconds between two flushes of a run's rows (``flush_interval``): up to an hour.
FLUSH_INTERVAL = Allowed(0, 3_600, low_open=True, unit="seconds")
#: Seconds a run waits for a locked or lost store (``lock_timeout``): up to a day.
LOCK_TIMEOUT = Allowed(0, 86_400, unit="seconds")
#: A count of rows (``limit``, ``--limit``, ``--offset``): a store counts rows in int64.
ROWS = Allowed(0, 2**63 - 1, integer=True)
#: Runs ``evalkit experiments --limit`` lists.
RUNS_LISTED = Allowed(1, 2**63 - 1, integer=True)
#: Rows a dataset reads at a time (``load_dataset(batch_size=)``), each batch held in memory.
DATASET_BATCH = Allowed(1, 1_000_000, integer=True)
#: Entries a judge cache hands its writer at a time (``JudgeCache(batch_size=)``).
CACHE_BATCH = Allowed(1, 1_000_000, integer=True)
#: Seconds a judge cache keeps a reply (``JudgeCache(ttl=)``): up to a hundred years.
CACHE_TTL = Allowed(0, 100 * 365.25 * 86_400, unit="seconds")
#: A scorer's ``scale`` (its highest score): far past any score range, short of overflow.
SCALE = Allowed(0, 1e12, low_open=True)
#: ``summarization``'s ``max_questions`` (each is a part of the judge's reply).
MAX_QUESTIONS = Allowed(1, 1_000, integer=True)
#: Bytes of a judge reply's body read (``max_reply_bytes``): :data:`MIN_REPLY_BYTES` to
#: :data:`MAX_REPLY_BYTES`.
REPLY_BYTES = Allowed(MIN_REPLY_BYTES, MAX_REPLY_BYTES, integer=True, unit="bytes")


def _number(value: float) -> str:
    """A bound as people write it: ``86,400``, ``0.01``, ``9,223,372,036,854,775,807``."""
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e16):
        return f"{int(value):,}"
    return f"{value:g}"


def check_allowed(key: str, value: object, allowed: Allowed) -> None:
    """Refuse ``value`` outside ``allowed``, naming ``key`` (an option, a flag or a file key),
    the value and the range.

    Raises:
        ConfigError: ``value`` is not a number of the right kind, is NaN, below the range or
            above it (the last through `_check`).
    """
    if allowed.holds(value):
        return
    if (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and (isinstance(value, int) or not allowed.integer)
        and value > allowed.high
    ):  # above the ceiling only: said as every ceiling says it
        unit = f" {allowed.unit}" if allowed.unit else ""
        _check(key, value, allowed.high, f"{_number(allowed.high)}{unit} ({key} is {allowed}")
    raise ConfigError(f"{key} must be {allowed}, got {value!r}")

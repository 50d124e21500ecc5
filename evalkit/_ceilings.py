"""Ceilings on what an experiment file or a run's options may ask for.

Each guards against a value that would exhaust the machine before any useful work is done
(see docs/pages/design/ceilings-on-inputs.md); they are shared by the run options, the CLI
and the experiment file so all three refuse the same values.
"""

from __future__ import annotations

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


def _check(key: str, value: float, ceiling: float, what: str) -> None:
    if value > ceiling:
        raise ConfigError(
            f"{key} = {value} is above the ceiling of {what}; see"
            " docs/pages/design/ceilings-on-inputs.md)"
        )


def check_concurrency_ceiling(key: str, value: int) -> None:
    """Refuse a concurrency above :data:`MAX_CONCURRENCY`, naming ``key`` (option or flag).

    Raises:
        ConfigError: ``value`` is above the ceiling.
    """
    _check(
        key, value, MAX_CONCURRENCY, f"{MAX_CONCURRENCY} items in flight (more only costs memory"
    )


def check_resamples_ceiling(key: str, value: int) -> None:
    """Refuse more resamples than :data:`MAX_RESAMPLES`, naming ``key`` (option or flag).

    Raises:
        ConfigError: ``value`` is above the ceiling.
    """
    _check(key, value, MAX_RESAMPLES,
           f"{MAX_RESAMPLES:,} resamples (more only cost memory and time")  # fmt: skip


def check_workers_ceiling(key: str, value: int) -> None:
    """Refuse more worker processes than :data:`MAX_WORKERS`, naming ``key`` (option or flag).

    Raises:
        ConfigError: ``value`` is above the ceiling.
    """
    _check(key, value, MAX_WORKERS, f"{MAX_WORKERS} worker processes (each holds the run's stack;"
           " more items in flight come from the concurrency inside each worker")  # fmt: skip

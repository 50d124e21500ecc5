"""Defaults every layer states: the store used when none is named, and how long a locked store
is waited for.

Here, in a module that imports nothing, so the options table of ``run_evals``
(``evalkit/run/_options.py``) and the command line's ``--help`` read them without loading the
store's stack (DuckDB); `evalkit.store` exports them.
"""

from __future__ import annotations

#: The store used when none is named.
DEFAULT_STORE = "evalkit.duckdb"

#: Seconds a writer waits for a store locked by another process before it gives up (and
#: spills the finished rows it could not write to the recovery folder).
DEFAULT_LOCK_TIMEOUT = 300.0

#: The comparison's defaults, declared once: ``compare_experiments``, ``stored_slices``,
#: ``judge_run``, the experiment file's ``[regression]`` table, ``evalkit compare``'s flags and
#: the pytest plugin's ``evalkit_run`` read them here, and tests/compare/test_options.py checks
#: that each of those states these values (docs/pages/design/one-statistics-module.md).
#: The drop in a scorer's mean tolerated before a significant drop is a regression: 0, so a
#: significant drop of any size fails unless a run's owner chooses a tolerance in its own units.
DEFAULT_MAX_DROP = 0.0
#: The paired interval's coverage; ``1 - confidence`` is the level the test's p-value must pass.
DEFAULT_CONFIDENCE = 0.95
#: Bootstrap and sign-flip resamples per scorer.
DEFAULT_RESAMPLES = 10_000
#: The seed the comparison's draws derive from.
DEFAULT_SEED = 0
#: The share of a candidate's items a baseline on another dataset must hold to be compared.
DEFAULT_MIN_PAIRED = 0.9

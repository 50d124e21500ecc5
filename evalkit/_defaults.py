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

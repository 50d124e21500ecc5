"""The score store: every experiment's items, scores, failures and judge calls, in a DuckDB
file or a DuckLake (``store = "ducklake:…"``, see [`store_location`][evalkit.store.store_location]).

Tables: ``experiments``, ``experiment_scorers``, ``experiment_items``, ``scores`` (successful
scores only), ``scorer_errors`` (failures, without a score), ``judge_executions``,
``shards_done`` (finished shards of a sharded run), ``model_prices`` and ``schema_version``;
views ``scorer_summary`` and ``judge_usage``. Their DDL lives in ``_schema.py``, the Arrow
schemas of the rows a writer appends in ``_arrow.py``. Rows a run could
not write to a locked store wait in ``<store>.recovery/`` until [`recover`][evalkit.store.recover]
(or the next writer) loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.store._connect import connection as connection
    from evalkit.store._copy import CopySummary as CopySummary
    from evalkit.store._copy import copy_experiments as copy_experiments
    from evalkit.store._export import ExportFormat as ExportFormat
    from evalkit.store._export import export_experiment as export_experiment
    from evalkit.store._lake import store_exists as store_exists
    from evalkit.store._location import StoreLocation as StoreLocation
    from evalkit.store._location import is_lake as is_lake
    from evalkit.store._location import store_location as store_location
    from evalkit.store._migrate import migrate as migrate
    from evalkit.store._migrate import schema_version as schema_version
    from evalkit.store._pins import BaselinePin as BaselinePin
    from evalkit.store._pins import pin_history as pin_history
    from evalkit.store._pins import read_pin as read_pin
    from evalkit.store._pins import unpin_baseline as unpin_baseline
    from evalkit.store._read import ExperimentRow as ExperimentRow
    from evalkit.store._read import ListedExperiment as ListedExperiment
    from evalkit.store._read import list_experiments as list_experiments
    from evalkit.store._read import read_experiment as read_experiment
    from evalkit.store._read import read_item_scores as read_item_scores
    from evalkit.store._read import read_scorer_summary as read_scorer_summary
    from evalkit.store._read_only import read_only_connection as read_only_connection
    from evalkit.store._read_only import refuse_file_writes as refuse_file_writes
    from evalkit.store._recovery import recover as recover
    from evalkit.store._schema import SCHEMA_VERSION as SCHEMA_VERSION
    from evalkit.store._stored import latest_resumable as latest_resumable
    from evalkit.store._verdicts import GateRow as GateRow
    from evalkit.store._verdicts import read_gates as read_gates

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())

"""The score store: every experiment's items, scores, failures and judge calls, in a DuckDB
file or a DuckLake (``store = "ducklake:…"``, see [`store_location`][evalkit.store.store_location]).

Tables: ``experiments``, ``experiment_scorers``, ``experiment_items``, ``scores`` (successful
scores only), ``scorer_errors`` (failures, without a score), ``judge_executions``,
``shards_done`` (finished shards of a sharded run), ``model_prices`` and ``schema_version``;
views ``scorer_summary`` and ``judge_usage``. Their DDL lives in ``_schema.py``, the Arrow
schemas of the rows a writer appends (`ARROW_SCHEMAS`) in ``_arrow.py``. Rows a run could
not write to a locked store wait in ``<store>.recovery/`` until [`recover`][evalkit.store.recover]
(or the next writer) loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.store._copy import CopySummary, copy_experiments
    from evalkit.store._export import ExportFormat, export_experiment
    from evalkit.store._lake import prepare_store, store_exists
    from evalkit.store._lake_merge import merge_finished_slices
    from evalkit.store._location import StoreLocation, is_lake, resolve_data_path, store_location
    from evalkit.store._merge import merge_stores
    from evalkit.store._migrate import migrate, schema_version
    from evalkit.store._pins import BaselinePin, pin_baseline, pin_history, read_pin, unpin_baseline
    from evalkit.store._read import (
        ExperimentRow,
        ListedExperiment,
        list_experiments,
        read_experiment,
        read_item_scores,
    )
    from evalkit.store._read_only import read_only_connection, refuse_file_writes
    from evalkit.store._recovery import recover, recovery_dir
    from evalkit.store._schema import SCHEMA_VERSION
    from evalkit.store._stored import latest_resumable
    from evalkit.store._verdicts import GateRecord, GateRow, read_gates, record_verdict

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.store._copy": (
            "CopySummary",
            "copy_experiments",
        ),
        "evalkit.store._export": (
            "ExportFormat",
            "export_experiment",
        ),
        "evalkit.store._lake": (
            "prepare_store",
            "store_exists",
        ),
        "evalkit.store._lake_merge": ("merge_finished_slices",),
        "evalkit.store._location": (
            "StoreLocation",
            "is_lake",
            "resolve_data_path",
            "store_location",
        ),
        "evalkit.store._migrate": (
            "migrate",
            "schema_version",
        ),
        "evalkit.store._pins": (
            "BaselinePin",
            "pin_baseline",
            "pin_history",
            "read_pin",
            "unpin_baseline",
        ),
        "evalkit.store._verdicts": (
            "GateRecord",
            "GateRow",
            "read_gates",
            "record_verdict",
        ),
        "evalkit.store._read": (
            "ExperimentRow",
            "ListedExperiment",
            "list_experiments",
            "read_experiment",
            "read_item_scores",
        ),
        "evalkit.store._read_only": (
            "read_only_connection",
            "refuse_file_writes",
        ),
        "evalkit.store._recovery": (
            "recover",
            "recovery_dir",
        ),
        "evalkit.store._schema": ("SCHEMA_VERSION",),
        "evalkit.store._stored": ("latest_resumable",),
        "evalkit.store._merge": ("merge_stores",),
    },
)

__all__ = [
    "SCHEMA_VERSION",
    "BaselinePin",
    "CopySummary",
    "ExperimentRow",
    "ExportFormat",
    "GateRecord",
    "GateRow",
    "ListedExperiment",
    "StoreLocation",
    "copy_experiments",
    "export_experiment",
    "is_lake",
    "latest_resumable",
    "list_experiments",
    "merge_finished_slices",
    "merge_stores",
    "migrate",
    "pin_baseline",
    "pin_history",
    "prepare_store",
    "read_experiment",
    "read_gates",
    "read_item_scores",
    "read_only_connection",
    "read_pin",
    "record_verdict",
    "recover",
    "recovery_dir",
    "refuse_file_writes",
    "resolve_data_path",
    "schema_version",
    "store_exists",
    "store_location",
    "unpin_baseline",
]

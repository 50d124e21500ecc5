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
    from evalkit.store._agreement import (
        AgreementRow,
        LabeledScores,
        StoredAgreement,
        read_agreement,
        read_fresh_shares,
        read_labeled_scores,
        read_repeats,
        write_agreement,
    )
    from evalkit.store._arrow import ARROW_SCHEMAS
    from evalkit.store._config_redaction import REDACTED, redact
    from evalkit.store._connect import (
        DEFAULT_STORE,
        connection,
        execute_interruptibly,
        interrupted_query,
        open_connection,
        quote_ident,
    )
    from evalkit.store._copy import COPIED_TABLES, CopySummary, copy_experiments
    from evalkit.store._export import EXPORT_FORMATS, ExportFormat, export_experiment
    from evalkit.store._extensions import ducklake_missing, has_extension, load_extensions
    from evalkit.store._lake import prepare_store, store_exists
    from evalkit.store._lake_merge import merge_finished_slices
    from evalkit.store._liveness import effective_status, process_alive, this_host
    from evalkit.store._location import (
        StoreLocation,
        is_lake,
        is_remote,
        resolve_data_path,
        sql_literal,
        store_location,
    )
    from evalkit.store._merge import merge_stores
    from evalkit.store._migrate import migrate, schema_version
    from evalkit.store._object_store import credentials_hint, lake_data_path
    from evalkit.store._pins import (
        BaselinePin,
        current_user,
        pin_baseline,
        pin_history,
        read_pin,
        unpin_baseline,
    )
    from evalkit.store._prices import PRICES_AS_OF, SEED_PRICES
    from evalkit.store._read import (
        ExperimentRow,
        ListedExperiment,
        RunCounts,
        ScorerCounts,
        list_experiments,
        read_experiment,
        read_item_scores,
        read_run_counts,
    )
    from evalkit.store._read_only import read_only_connection, refuse_file_writes
    from evalkit.store._recovery import recover, recovery_dir
    from evalkit.store._schema import SCHEMA_VERSION
    from evalkit.store._shard_writer import ShardRecord, ShardWriter
    from evalkit.store._stored import (
        StoredExperiment,
        StoredOutput,
        latest_resumable,
        read_done_shards,
        read_for_resume,
        read_outputs,
        read_shard_failures,
    )
    from evalkit.store._verdicts import (
        GateRecord,
        GateRow,
        StoredVerdict,
        read_gates,
        record_verdict,
    )
    from evalkit.store._writer import (
        DEFAULT_LOCK_TIMEOUT,
        ExperimentRecord,
        RowBatch,
        ScorerRecord,
        StoreWriter,
    )

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.store._agreement": (
            "AgreementRow",
            "CopySummary",
            "LabeledScores",
            "StoredAgreement",
            "read_agreement",
            "read_fresh_shares",
            "read_labeled_scores",
            "read_repeats",
            "write_agreement",
        ),
        "evalkit.store._connect": (
            "DEFAULT_STORE",
            "connection",
            "copy_experiments",
            "execute_interruptibly",
            "interrupted_query",
            "is_lake",
            "open_connection",
            "quote_ident",
        ),
        "evalkit.store._copy": (
            "COPIED_TABLES",
            "CopySummary",
            "copy_experiments",
        ),
        "evalkit.store._export": (
            "EXPORT_FORMATS",
            "ExportFormat",
            "export_experiment",
            "has_extension",
        ),
        "evalkit.store._extensions": (
            "ducklake_missing",
            "has_extension",
            "load_extensions",
        ),
        "evalkit.store._lake": (
            "prepare_store",
            "store_exists",
        ),
        "evalkit.store._lake_merge": ("merge_finished_slices",),
        "evalkit.store._location": (
            "StoreLocation",
            "is_lake",
            "is_remote",
            "resolve_data_path",
            "sql_literal",
            "store_location",
        ),
        "evalkit.store._liveness": (
            "effective_status",
            "process_alive",
            "this_host",
        ),
        "evalkit.store._merge": ("merge_stores",),
        "evalkit.store._object_store": ("credentials_hint", "lake_data_path"),
        "evalkit.store._migrate": (
            "migrate",
            "schema_version",
        ),
        "evalkit.store._pins": (
            "BaselinePin",
            "current_user",
            "pin_baseline",
            "pin_history",
            "read_pin",
            "unpin_baseline",
        ),
        "evalkit.store._verdicts": (
            "GateRecord",
            "GateRow",
            "StoredVerdict",
            "read_gates",
            "record_verdict",
        ),
        "evalkit.store._prices": (
            "PRICES_AS_OF",
            "SEED_PRICES",
        ),
        "evalkit.store._read": (
            "ExperimentRow",
            "ListedExperiment",
            "RunCounts",
            "ScorerCounts",
            "list_experiments",
            "read_experiment",
            "read_item_scores",
            "read_run_counts",
        ),
        "evalkit.store._read_only": (
            "read_only_connection",
            "refuse_file_writes",
        ),
        "evalkit.store._recovery": (
            "recover",
            "recovery_dir",
        ),
        "evalkit.store._config_redaction": (
            "REDACTED",
            "redact",
        ),
        "evalkit.store._arrow": ("ARROW_SCHEMAS",),
        "evalkit.store._schema": ("SCHEMA_VERSION",),
        "evalkit.store._shard_writer": (
            "ShardRecord",
            "ShardWriter",
        ),
        "evalkit.store._stored": (
            "StoredExperiment",
            "StoredOutput",
            "latest_resumable",
            "read_done_shards",
            "read_for_resume",
            "read_outputs",
            "read_shard_failures",
        ),
        "evalkit.store._writer": (
            "DEFAULT_LOCK_TIMEOUT",
            "ExperimentRecord",
            "RowBatch",
            "ScorerRecord",
            "StoreWriter",
        ),
    },
)

__all__ = [
    "ARROW_SCHEMAS",
    "COPIED_TABLES",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_STORE",
    "EXPORT_FORMATS",
    "PRICES_AS_OF",
    "REDACTED",
    "SCHEMA_VERSION",
    "SEED_PRICES",
    "AgreementRow",
    "BaselinePin",
    "CopySummary",
    "ExperimentRecord",
    "ExperimentRow",
    "ExportFormat",
    "GateRecord",
    "GateRow",
    "LabeledScores",
    "ListedExperiment",
    "RowBatch",
    "RunCounts",
    "ScorerCounts",
    "ScorerRecord",
    "ShardRecord",
    "ShardWriter",
    "StoreLocation",
    "StoreWriter",
    "StoredAgreement",
    "StoredExperiment",
    "StoredOutput",
    "StoredVerdict",
    "connection",
    "copy_experiments",
    "credentials_hint",
    "current_user",
    "ducklake_missing",
    "effective_status",
    "execute_interruptibly",
    "export_experiment",
    "has_extension",
    "interrupted_query",
    "is_lake",
    "is_remote",
    "lake_data_path",
    "latest_resumable",
    "list_experiments",
    "load_extensions",
    "merge_finished_slices",
    "merge_stores",
    "migrate",
    "open_connection",
    "pin_baseline",
    "pin_history",
    "prepare_store",
    "process_alive",
    "quote_ident",
    "read_agreement",
    "read_done_shards",
    "read_experiment",
    "read_for_resume",
    "read_fresh_shares",
    "read_gates",
    "read_item_scores",
    "read_labeled_scores",
    "read_only_connection",
    "read_outputs",
    "read_pin",
    "read_repeats",
    "read_run_counts",
    "read_shard_failures",
    "record_verdict",
    "recover",
    "recovery_dir",
    "redact",
    "refuse_file_writes",
    "resolve_data_path",
    "schema_version",
    "sql_literal",
    "store_exists",
    "store_location",
    "this_host",
    "unpin_baseline",
    "write_agreement",
]

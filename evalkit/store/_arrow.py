"""The Arrow schemas of the rows a writer appends to each table of the store, in the tables'
column order (evalkit.store._schema builds the tables; tests/store/test_schema.py checks that
the two agree). Why writers take Arrow: docs/pages/design/store-takes-arrow.md.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

_S = pa.string()
_F = pa.float64()
_I = pa.int64()
_I32 = pa.int32()
_TS = pa.timestamp("us")

#: The Arrow schema of the rows a writer appends to each table, in the tables' column order
#: (without the ``id`` columns the store fills in itself). A batch holds these columns.
ARROW_SCHEMAS: Mapping[str, pa.Schema] = {
    "experiment_items": pa.schema(
        [
            ("experiment_id", _S), ("item_id", _S), ("item_index", _I), ("run_id", _S),
            ("status", _S), ("source", _S), ("input", _S), ("ground_truth", _S),
            ("request_context", _S), ("metadata", _S), ("output", _S), ("error", _S),
            ("scorers_succeeded", _I32), ("scorers_failed", _I32), ("target_ms", _F),
            ("duration_ms", _F), ("completed_at", _TS),
        ]
    ),
    "scores": pa.schema(
        [
            ("experiment_id", _S), ("run_id", _S), ("scorer_id", _S), ("scorer_name", _S),
            ("item_id", _S), ("score", _F), ("reason", _S), ("input", _S), ("output", _S),
            ("ground_truth", _S), ("request_context", _S), ("preprocess_step_result", _S),
            ("analyze_step_result", _S), ("preprocess_prompt", _S), ("analyze_prompt", _S),
            ("generate_score_prompt", _S), ("generate_reason_prompt", _S), ("source", _S),
            ("duration_ms", _F), ("created_at", _TS),
        ]
    ),
    "scorer_errors": pa.schema(
        [
            ("experiment_id", _S), ("run_id", _S), ("scorer_id", _S), ("scorer_name", _S),
            ("item_id", _S), ("failed_step", _S), ("completed_steps", _S), ("error_name", _S),
            ("error_message", _S), ("error", _S), ("duration_ms", _F), ("created_at", _TS),
            ("error_code", _S),
        ]
    ),
    "judge_executions": pa.schema(
        [
            ("experiment_id", _S), ("run_id", _S), ("item_id", _S), ("scorer_id", _S),
            ("scorer_status", _S), ("step", _S), ("execution_index", _I32), ("status", _S),
            ("judge_model_id", _S), ("judge_provider", _S), ("attempt_count", _I32),
            ("model_call_count", _I32), ("duration_ms", _F), ("input_tokens", _I),
            ("output_tokens", _I), ("total_tokens", _I), ("reasoning_tokens", _I),
            ("cached_input_tokens", _I), ("cache_creation_input_tokens", _I),
            ("cost_amount", _F), ("cost_unit", _S), ("cost_source", _S), ("error_name", _S),
            ("error_message", _S), ("error_code", _S), ("finish_reason", _S),
            ("raw_output", _S), ("prompt", _S), ("output", _S), ("cached", pa.bool_()),
            ("created_at", _TS), ("repeat_index", _I32), ("truncated", pa.bool_()),
            ("queue_ms", _F), ("request_ms", _F), ("attempts", _S),
        ]
    ),
    "score_repeats": pa.schema(
        [
            ("experiment_id", _S), ("run_id", _S), ("item_id", _S), ("scorer_id", _S),
            ("repeat_index", _I32), ("status", _S), ("score", _F), ("reason", _S),
            ("error_name", _S), ("error_message", _S), ("duration_ms", _F), ("created_at", _TS),
        ]
    ),
}  # fmt: skip

"""Writing one stored run to a file: Parquet, CSV or JSON Lines, one row per item and scorer.

DuckDB writes the file itself (``COPY … TO``), streaming from the store, so a run of any size
exports in flat memory. Text is written as text: a JSON value that is a string (an input, an
output) becomes that string, not its JSON quoting; nested values stay nested in JSON Lines and
are JSON text in Parquet and CSV.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalkit.errors import StoreError

if TYPE_CHECKING:
    import duckdb

ExportFormat = Literal["parquet", "csv", "jsonl"]
"""The formats [`export_experiment`][evalkit.store.export_experiment] writes (the file's suffix
is the format's name)."""

#: The formats, with the suffix and DuckDB COPY options of each.
EXPORT_FORMATS: dict[str, tuple[str, str]] = {
    "parquet": (".parquet", "FORMAT parquet"),
    "csv": (".csv", "FORMAT csv, HEADER true"),
    "jsonl": (".jsonl", "FORMAT json"),
}

# One row per scorer outcome: a score, or a failure (which has no score).
_OUTCOMES = """
    SELECT experiment_id, run_id, item_id, scorer_id, scorer_name, 'success' AS status, score,
           reason, NULL AS failed_step, NULL::JSON AS completed_steps, NULL AS error_name,
           NULL AS error_message, preprocess_step_result, analyze_step_result, duration_ms
    FROM scores WHERE experiment_id = $id
    UNION ALL
    SELECT experiment_id, run_id, item_id, scorer_id, scorer_name, 'failed', NULL, NULL,
           failed_step, completed_steps, error_name, error_message, NULL, NULL, duration_ms
    FROM scorer_errors WHERE experiment_id = $id
"""


def _value(column: str, fmt: str) -> str:
    """A JSON column as written: nested in JSON Lines; text itself, or JSON text, otherwise."""
    if fmt == "jsonl":
        return f"{column} AS {column.split('.')[-1]}"
    return (
        f"CASE WHEN json_type({column}) = 'VARCHAR' THEN {column} ->> '$'"
        f" ELSE CAST({column} AS VARCHAR) END AS {column.split('.')[-1]}"
    )


def _query(fmt: str) -> str:
    steps = "o.completed_steps"
    if fmt == "parquet":
        steps = "CAST(o.completed_steps AS VARCHAR[])"
    elif fmt == "csv":
        steps = "CAST(o.completed_steps AS VARCHAR)"
    return f"""
        WITH outcomes AS ({_OUTCOMES})
        SELECT i.experiment_id, i.item_id, i.item_index, i.run_id, o.scorer_id, o.scorer_name,
               o.status, o.score, o.reason, o.failed_step, {steps} AS completed_steps,
               o.error_name, o.error_message, o.duration_ms,
               {_value("i.input", fmt)}, {_value("i.ground_truth", fmt)},
               {_value("i.output", fmt)}, {_value("i.request_context", fmt)},
               {_value("i.metadata", fmt)}, {_value("o.preprocess_step_result", fmt)},
               {_value("o.analyze_step_result", fmt)},
               i.source, i.status AS item_status, i.error ->> '$.message' AS target_error,
               i.target_ms, i.duration_ms AS item_duration_ms
        FROM experiment_items i
        LEFT JOIN outcomes o ON o.experiment_id = i.experiment_id AND o.run_id = i.run_id
             AND o.item_id = i.item_id
        LEFT JOIN experiment_scorers es ON es.experiment_id = i.experiment_id
             AND es.scorer_id = o.scorer_id
        WHERE i.experiment_id = $id
        ORDER BY i.item_index, i.item_id, es.position, o.scorer_id
    """


def export_experiment(
    store: str | os.PathLike[str],
    experiment_id: str,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat = "parquet",
) -> int:
    """Write one stored run's items, scores and failures to ``path``.

    One row per item and scorer, in dataset then scorer order; an item whose target failed has
    one row with empty scorer columns. Columns: ``experiment_id``, ``item_id``, ``item_index``,
    ``run_id``, ``scorer_id``, ``scorer_name``, ``status`` (``success`` or ``failed``),
    ``score`` (null when failed), ``reason``, ``failed_step``, ``completed_steps``,
    ``error_name``, ``error_message``, ``duration_ms``, ``input``, ``ground_truth``,
    ``output``, ``request_context``, ``metadata``, ``preprocess_step_result``,
    ``analyze_step_result``, ``source``, ``item_status``, ``target_error``, ``target_ms`` and
    ``item_duration_ms``. Values that are text are written as that text; other values are
    nested in JSON Lines and JSON text in Parquet and CSV.

    Args:
        store: The store file.
        experiment_id: The run's id (or a unique id prefix).
        path: The file to write (replaced if it exists).
        format: ``"parquet"``, ``"csv"`` or ``"jsonl"``.

    Returns:
        The number of rows written.

    Raises:
        StoreError: No run has this id, ``format`` is unknown, or the file cannot be written.
        BrokenPipeError: ``path`` is a pipe (``/dev/stdout`` into ``| head``) whose reader
            went away before the export ended.
    """
    # Here: `evalkit export --help` lists EXPORT_FORMATS without DuckDB (issue 31).
    import duckdb

    from evalkit.store._connect import connection
    from evalkit.store._read import read_experiment

    if format not in EXPORT_FORMATS:
        raise StoreError(f"unknown export format {format!r}; formats: {', '.join(EXPORT_FORMATS)}")
    run = read_experiment(store, experiment_id)
    target = Path(path)
    if not target.parent.is_dir():
        raise StoreError(f"{target}: cannot write the export: no folder {target.parent}")
    options = EXPORT_FORMATS[format][1]
    with connection(store, read_only=True) as con:
        try:
            written = con.execute(
                f"COPY ({_query(format)}) TO $path ({options})",
                {"id": run["id"], "path": str(target)},
            ).fetchone()
        except duckdb.Error as exc:
            if _reader_gone(exc):
                raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE), str(target)) from exc
            raise StoreError(f"{target}: cannot write the export: {exc}") from exc
    return int(written[0]) if written else 0


def _reader_gone(exc: duckdb.Error) -> bool:
    """Whether DuckDB failed writing to a pipe nobody reads any more (EPIPE, which it reports
    as text only: ``Could not write file "/dev/stdout": Broken pipe``)."""
    import duckdb

    return isinstance(exc, duckdb.IOException) and os.strerror(errno.EPIPE) in str(exc)

"""The store's runs as the run list reads them: one ``WITH`` clause every query of the list
builds on (the effective status, a column an older store lacks as NULL) and the list's filters
as SQL. See ``_runs_page.py`` and docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from evalkit._liveness import effective_status

# Columns of ``experiments`` an older store (read, never migrated) lacks, and what stands in.
_LATER_COLUMNS = {
    "writer_pid": "NULL::INTEGER",
    "writer_host": "NULL::VARCHAR",
    "partial": "false",
    "verdict": "NULL::VARCHAR",
    "baseline_id": "NULL::VARCHAR",
    "baseline_reason": "NULL::VARCHAR",
}


@dataclass(frozen=True, slots=True)
class RunRows:
    """The store's runs as the list reads them, as a ``WITH`` clause (``runs``): every column
    but ``config`` and ``metadata``, the effective status (a dead writer's ``running`` is
    ``interrupted``), ``partial`` never NULL, and a column an older store lacks as NULL.

    ``where(alias)`` is the list's filters on a row of ``runs`` (with ``where_params``)."""

    cte: str
    params: list[Any]
    name: str
    status: str
    failed: bool

    def where(self, alias: str) -> str:
        a = f"{alias}."
        return (
            f"(? = '' OR contains(lower({a}name), ?)) AND (? = '' OR {a}status = ?)"
            f" AND (NOT ? OR {a}verdict IS NOT DISTINCT FROM 'failed')"
        )

    @property
    def where_params(self) -> list[Any]:
        return [self.name, self.name, self.status, self.status, self.failed]


def run_rows(con: duckdb.DuckDBPyConnection, *, name: str, status: str, failed: bool) -> RunRows:
    """The ``runs`` clause (`RunRows`) of the store behind ``con``, filtered by a name
    substring, a status and whether the verdict failed."""
    columns = {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'experiments'"
            " AND database_name = current_database()"
        ).fetchall()
    }
    missing = [f"{stand_in} AS {column}" for column, stand_in in _LATER_COLUMNS.items()
               if column not in columns]  # fmt: skip
    gone: list[str] = []
    if "writer_pid" in columns:  # only a running row can have lost its writer: a few rows
        found = con.execute(
            "SELECT id, writer_pid, writer_host FROM experiments WHERE status = 'running'"
        ).fetchall()
        gone = [i for i, pid, host in found if effective_status("running", pid, host) != "running"]
    replaced = "CASE WHEN list_contains(?::VARCHAR[], id) THEN 'interrupted' ELSE status END"
    if "partial" in columns:
        replaced += " AS status, coalesce(partial, false) AS partial"
    else:
        replaced += " AS status"
    cte = (
        f"runs AS (SELECT * EXCLUDE (config, metadata) REPLACE ({replaced})"
        f"{''.join(', ' + m for m in missing)} FROM experiments)"
    )
    return RunRows(cte, [gone], name.strip().lower(), status, failed)

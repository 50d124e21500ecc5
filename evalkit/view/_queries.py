"""What the viewer's pages read from the store: every query parameterised, on a read-only
connection (the `Reader` shares one between requests for a
bounded time, so a run can write the store meanwhile).

Each page's function takes the store as a `Reader` or a path (then opened for that
call); `experiment` takes an open connection, on which the run page then reads its item
table (``_items.py``). The run list's page is ``_runs_page.py``.
See docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
from multidict import MultiMapping

from evalkit import _stable_sql as stable_sql
from evalkit._error_pattern import error_pattern
from evalkit._intervals import mean_interval95
from evalkit._liveness import effective_status
from evalkit.errors import StoreError
from evalkit.store import connection, schema_version
from evalkit.view._reader import LOCK_TIMEOUT, Reader

#: Bins of a score distribution.
BINS = 10
#: The store version whose ``judge_executions`` has ``truncated``.
TRUNCATED_SINCE = 7

#: The highest page number a query string is read as (:func:`page_number`).
MAX_PAGE = 2**31


Source = Reader | str | os.PathLike[str]


def page_number(query: MultiMapping[str]) -> int:
    """The ``page`` of a query string: 1 when absent, not a number or below 1.

    A page past the last shows the last; one past `MAX_PAGE` is read as it, so the
    page's offset stays far inside the 64 bits of a query's ``OFFSET``
    (``page=9223372036854775807`` overflowed it: a 500).
    """
    try:
        page = int(query.get("page", "1"))
    except ValueError:
        return 1
    return min(max(page, 1), MAX_PAGE)


@contextmanager
def reading(source: Source) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the store for one page."""
    if isinstance(source, Reader):
        with source.cursor() as con:
            yield con
    else:
        with connection(source, read_only=True, lock_timeout=LOCK_TIMEOUT) as con:
            yield con


def name_of(source: Source) -> str:
    """The store's path, for messages."""
    return source.store if isinstance(source, Reader) else str(source)


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    """``sql``'s result as dicts."""
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _with_status(run: dict[str, Any]) -> dict[str, Any]:
    """A run's row with its effective status (a dead writer's ``running`` is ``interrupted``)."""
    pid, host = run.pop("writer_pid", None), run.pop("writer_host", None)
    run["status"] = effective_status(run["status"], pid, host)
    run.setdefault("partial", False)
    # A store of schema 7 or older (opened read-only, never migrated) has no verdicts.
    for column in ("verdict", "baseline_id", "baseline_reason"):
        run.setdefault(column, None)
    return run


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the store has table ``name`` (an older store, read without migrating, may not)."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?"
        " AND database_name = current_database()",
        [name],
    ).fetchone()
    return bool(found and found[0])


def _runs_where(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]
) -> list[dict[str, Any]]:
    """The runs ``sql`` (a ``WHERE`` clause and its order or limit) selects, with their
    effective status; none in a store whose creation was cut short. A page reads the runs it
    shows, never every run: a store may hold tens of thousands."""
    if not has_table(con, "experiments"):
        return []
    found = rows(con, f"SELECT * EXCLUDE (config, metadata) FROM experiments {sql}", params)
    return [_with_status(run) for run in found]


def find_run(con: duckdb.DuckDBPyConnection, ref: str, where: str) -> dict[str, Any]:
    """The run with id ``ref``, or whose id alone starts with it.

    Raises:
        StoreError: No run matches, or a prefix matches several.
    """
    found = (
        _runs_where(con, "WHERE starts_with(id, ?) ORDER BY id = ? DESC, id LIMIT 2", [ref, ref])
        if ref
        else []
    )
    if found and found[0]["id"] == ref:
        return found[0]
    if not found:
        raise StoreError(f"{where}: no experiment with id {ref!r}")
    if len(found) > 1:
        raise StoreError(f"{where}: id prefix {ref!r} matches several experiments")
    return found[0]


def experiment(con: duckdb.DuckDBPyConnection, ref: str, where: str) -> dict[str, Any]:
    """One run: its row, scorers with their statistics and distribution, its verdict's
    baseline and each scorer's gate, coverage, failure groups, and the other runs of its name
    (to compare with), on an open connection; ``where`` names the store in messages.

    Raises:
        StoreError: No run has this id (or id prefix).
    """
    run = find_run(con, ref, where)
    eid = run["id"]
    scorers = _scorer_stats(con, eid)
    coverage = rows(
        con,
        "SELECT count(*) AS processed, count(*) FILTER (WHERE error IS NOT NULL)"
        " AS target_failed FROM experiment_items WHERE experiment_id = ?",
        [eid],
    )[0]
    groups = _failure_groups(con, eid)
    gates = _gates(con, eid)
    siblings = _runs_where(
        con,
        "WHERE name = ? AND id <> ? ORDER BY started_at DESC, id LIMIT 50",
        [run["name"], eid],
    )
    kept = _runs_where(con, "WHERE id = ?", [run["baseline_id"]]) if run["baseline_id"] else []
    baseline = kept[0] if kept else None
    return {
        "run": run,
        "baseline": baseline,
        "gates": gates,
        "scorers": scorers,
        "coverage": coverage,
        "failure_groups": groups,
        "siblings": siblings,
        # Per slice and scorer: n, mean and the change against a baseline. Filled by the
        # slices of issue 16 (item 2) once the store can compute them; None shows no section.
        "slices": None,
    }


def _gates(con: duckdb.DuckDBPyConnection, eid: str) -> list[dict[str, Any]]:
    """Each scorer's gate of the run's verdict (its newest, in the run's scorer order), with
    ``reasons`` as a list of sentences; none for a run never judged or an older store."""
    if not has_table(con, "scorer_gates"):
        return []
    found = rows(
        con,
        "SELECT g.* EXCLUDE (experiment_id) FROM scorer_gates g"
        " LEFT JOIN experiment_scorers es ON es.experiment_id = g.experiment_id"
        " AND es.scorer_id = g.scorer_id WHERE g.experiment_id = ?"
        " QUALIFY row_number() OVER (PARTITION BY g.scorer_id ORDER BY g.judged_at DESC) = 1"
        " ORDER BY es.position NULLS LAST, g.scorer_id",
        [eid],
    )
    for gate in found:
        gate["reasons"] = _reasons(gate["reasons"])
    return found


def _reasons(stored: Any) -> list[str]:
    """A gate's stored reasons (JSON, a list of sentences: DuckDB checks it is JSON) as text."""
    found = json.loads(stored) if isinstance(stored, str) else stored
    return [str(r) for r in found] if isinstance(found, list) else []


def _scorer_stats(con: duckdb.DuckDBPyConnection, eid: str) -> list[dict[str, Any]]:
    """Per scorer of the run, in one scan of its scores: n, failures, mean, stddev, the 95%
    t interval, min, max, pass rate, and `BINS` equal bins over [0, 1] (over the
    scores' own range when they leave it)."""
    found = rows(
        con,
        f"""
        WITH s AS (
            SELECT scorer_id, count(*) AS n, {stable_sql.mean("score")} AS mean,
                   {stable_sql.stddev("score")} AS stddev,
                   min(score) AS min, max(score) AS max,
                   histogram(least(CAST(floor(greatest(least(score, 1.0), 0.0) * {BINS})
                                  AS INTEGER), {BINS - 1}))
                       FILTER (WHERE score BETWEEN 0 AND 1) AS bins
            FROM scores WHERE experiment_id = ? GROUP BY scorer_id
        ), e AS (
            SELECT scorer_id, count(*) AS errors FROM scorer_errors
            WHERE experiment_id = ? GROUP BY scorer_id
        )
        SELECT es.scorer_id, es.scorer_name, es.description, es.threshold_min,
               es.threshold_max, coalesce(es.higher_is_better, true) AS higher_is_better,
               coalesce(s.n, 0) AS n, coalesce(e.errors, 0) AS errors, s.mean, s.stddev,
               s.min, s.max, s.bins
        FROM experiment_scorers es
        LEFT JOIN s USING (scorer_id) LEFT JOIN e USING (scorer_id)
        WHERE es.experiment_id = ? ORDER BY es.position
        """,
        [eid, eid, eid],
    )
    for scorer in found:
        scorer["pass_rate"] = None
        # The interval of the store's scorer_summary and the reports, computed here so that
        # a store read without migrating shows it too (evalkit/_intervals.py).
        interval = mean_interval95(
            scorer["n"], scorer["mean"], scorer["stddev"], scorer["min"], scorer["max"]
        )
        scorer["ci95_low"], scorer["ci95_high"] = interval or (None, None)
        bins = scorer.pop("bins") or {}
        if not scorer["n"]:
            scorer["histogram"] = None
        elif scorer["min"] >= 0 and scorer["max"] <= 1:
            counts = [int(bins.get(i, 0)) for i in range(BINS)]
            scorer["histogram"] = {"lo": 0.0, "hi": 1.0, "counts": counts}
        else:
            scorer["histogram"] = _histogram_outside(con, eid, scorer)
        low, high = scorer["threshold_min"], scorer["threshold_max"]
        if scorer["n"] and (low is not None or high is not None):
            passed = con.execute(
                "SELECT count(*) FROM scores WHERE experiment_id = ? AND scorer_id = ?"
                " AND (? IS NULL OR score >= ?) AND (? IS NULL OR score <= ?)",
                [eid, scorer["scorer_id"], low, low, high, high],
            ).fetchone()
            scorer["pass_rate"] = (passed[0] if passed else 0) / scorer["n"]
    return found


def _histogram_outside(
    con: duckdb.DuckDBPyConnection, eid: str, scorer: dict[str, Any]
) -> dict[str, Any]:
    """Bins over the scores' own range, for a scorer whose scores leave [0, 1]."""
    lo = min(scorer["min"], 0.0)
    hi = scorer["max"] if scorer["max"] > lo else lo + 1.0
    # In halves: the range of scores near the float limit (-1e308 to 1e308) is beyond it.
    found = con.execute(
        "SELECT least(CAST(floor((score / 2 - ?) / ? * ?) AS INTEGER), ?), count(*)"
        " FROM scores WHERE experiment_id = ? AND scorer_id = ? GROUP BY ALL",
        [lo / 2, hi / 2 - lo / 2, BINS, BINS - 1, eid, scorer["scorer_id"]],
    ).fetchall()
    counts = [0] * BINS
    for index, count in found:
        counts[index] += count
    return {"lo": lo, "hi": hi, "counts": counts}


def _failure_groups(con: duckdb.DuckDBPyConnection, eid: str) -> list[dict[str, Any]]:
    """The run's failures as distinct errors (scorer, type, step, message pattern) with counts
    and one example, largest first; target failures under ``(target)``."""
    found = rows(
        con,
        """
        SELECT scorer_id, error_name, failed_step, error_message, count(*) AS n,
               min(item_id) AS item_id
        FROM scorer_errors WHERE experiment_id = ? GROUP BY ALL
        UNION ALL
        SELECT '(target)', error->>'$.name', NULL, error->>'$.message', count(*), min(item_id)
        FROM experiment_items WHERE experiment_id = ? AND error IS NOT NULL GROUP BY ALL
        ORDER BY n DESC LIMIT 5000
        """,
        [eid, eid],
    )
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in found:
        message = row["error_message"] or ""
        key = (row["scorer_id"], row["error_name"], row["failed_step"], error_pattern(message))
        group = groups.get(key)
        if group is None:
            groups[key] = {
                "scorer_id": key[0],
                "error_name": key[1],
                "failed_step": key[2],
                "pattern": key[3],
                "count": row["n"],
                "example_item_id": row["item_id"],
                "example_message": message,
            }
        else:
            group["count"] += row["n"]
    return sorted(groups.values(), key=lambda g: -g["count"])[:100]


def item(store: Source, ref: str, item_id: str, *, baseline: str | None = None) -> dict[str, Any]:
    """One item of one run: its row, each scorer's score or error, every judge execution, and
    the same item in ``baseline`` (a run id) when given.

    Raises:
        StoreError: No run has this id.
    """
    with reading(store) as con:
        run = find_run(con, ref, name_of(store))
        base = find_run(con, baseline, name_of(store)) if baseline else None
        found = _item_in(con, run["id"], item_id)
        judged = rows(
            con,
            "SELECT j.* EXCLUDE (experiment_id, run_id, item_id) FROM judge_executions j"
            " LEFT JOIN experiment_scorers es ON es.experiment_id = j.experiment_id"
            " AND es.scorer_id = j.scorer_id"
            " WHERE j.experiment_id = ? AND j.item_id = ?"
            " ORDER BY es.position, list_position(['preprocess', 'analyze', 'generate_score',"
            " 'generate_reason'], j.step), j.execution_index",
            [run["id"], item_id],
        )
        before = _item_in(con, base["id"], item_id) if base else None
    return {"run": run, "baseline": base, "item": found, "before": before, "judge": judged}


def _item_in(con: duckdb.DuckDBPyConnection, eid: str, item_id: str) -> dict[str, Any] | None:
    """The item's row and per scorer (in the run's order) its score row or error row."""
    head = rows(
        con,
        "SELECT * EXCLUDE (experiment_id) FROM experiment_items"
        " WHERE experiment_id = ? AND item_id = ? ORDER BY completed_at DESC LIMIT 1",
        [eid, item_id],
    )
    if not head:
        return None
    # A reason cut at the judge's token limit: its generate_reason reply (the pair's own, not
    # a repeat's) was flagged; a store older than the flag (read, not migrated) flags none.
    cut = (
        "EXISTS (SELECT 1 FROM judge_executions j WHERE j.experiment_id = s.experiment_id"
        " AND j.run_id = s.run_id AND j.item_id = s.item_id AND j.scorer_id = s.scorer_id"
        " AND j.step = 'generate_reason' AND coalesce(j.repeat_index, 0) = 0 AND j.truncated)"
        if schema_version(con) >= TRUNCATED_SINCE
        else "false"
    )
    scorers = rows(
        con,
        f"SELECT es.scorer_id, s.score, s.reason, {cut} AS reason_truncated,"
        " s.preprocess_step_result,"
        " s.analyze_step_result, s.preprocess_prompt, s.analyze_prompt,"
        " s.generate_score_prompt, s.generate_reason_prompt, s.duration_ms,"
        " e.failed_step, e.completed_steps, e.error_name, e.error_message"
        " FROM experiment_scorers es"
        " LEFT JOIN scores s ON s.experiment_id = es.experiment_id"
        " AND s.scorer_id = es.scorer_id AND s.item_id = ?"
        " LEFT JOIN scorer_errors e ON e.experiment_id = es.experiment_id"
        " AND e.scorer_id = es.scorer_id AND e.item_id = ?"
        " WHERE es.experiment_id = ? ORDER BY es.position",
        [item_id, item_id, eid],
    )
    by_scorer = {s["scorer_id"]: s for s in scorers}
    return {**head[0], "scorers": scorers, "by_scorer": by_scorer}


def metadata_keys(con: duckdb.DuckDBPyConnection, eid: str) -> list[str]:
    """The metadata keys of a run's first items: what the slice filter can name."""
    found = con.execute(
        "SELECT DISTINCT unnest(json_keys(metadata)) FROM (SELECT metadata FROM"
        " experiment_items WHERE experiment_id = ? AND json_type(metadata) = 'OBJECT'"
        " LIMIT 1000) ORDER BY 1",
        [eid],
    ).fetchall()
    return [row[0] for row in found]

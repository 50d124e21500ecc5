"""What the viewer's pages read from the store: every query parameterised, one short read-only
connection per page.

DuckDB lets one process write a file or several read it, never both, and a run opens the store
only for the moment of each flush. So the viewer never holds the store open between requests:
each page opens it read-only, reads, and closes it (see docs/pages/design/viewer-stack.md).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb

from evalkit.report import error_pattern
from evalkit.store import connection, list_experiments, read_experiment

#: How long a page waits for a run's flush to release the store, in seconds.
LOCK_TIMEOUT = 20.0

#: Bins of a score distribution.
BINS = 10


@contextmanager
def reading(store: str | os.PathLike[str]) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the store for one page, closed when the page is read."""
    with connection(store, read_only=True, lock_timeout=LOCK_TIMEOUT) as con:
        yield con


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    """``sql``'s result as dicts."""
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def experiments(
    store: str | os.PathLike[str], *, name: str = "", status: str = ""
) -> dict[str, Any]:
    """The runs of the store (newest first), filtered by a name substring and a status, with
    each run's mean per scorer and, per run name, the means over its runs (oldest first).

    Returns:
        ``runs`` (dicts with ``means``: scorer id → mean), ``trends`` (run name → scorer id →
        list of ``(run id, mean)``), ``statuses`` (every status in the store) and ``names``.
    """
    table = list_experiments(store).to_pylist()
    statuses = sorted({r["status"] for r in table})
    names = sorted({r["name"] for r in table})
    needle = name.strip().lower()
    runs = [
        r
        for r in table
        if (not needle or needle in r["name"].lower()) and (not status or r["status"] == status)
    ]
    means: dict[str, dict[str, float]] = defaultdict(dict)
    order: dict[str, list[str]] = defaultdict(list)
    if runs:
        ids = [r["id"] for r in runs]
        with reading(store) as con:
            for row in rows(
                con,
                "SELECT es.experiment_id, es.scorer_id, m.mean FROM experiment_scorers es"
                " LEFT JOIN (SELECT experiment_id, scorer_id, avg(score) AS mean FROM scores"
                " WHERE list_contains(?, experiment_id) GROUP BY ALL) m"
                " USING (experiment_id, scorer_id)"
                " WHERE list_contains(?, es.experiment_id) ORDER BY es.position",
                [ids, ids],
            ):
                order[row["experiment_id"]].append(row["scorer_id"])
                if row["mean"] is not None:
                    means[row["experiment_id"]][row["scorer_id"]] = row["mean"]
    trends: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    previous: dict[str, str] = {}
    for run in reversed(runs):  # oldest first
        run["previous"] = previous.get(run["name"])
        previous[run["name"]] = run["id"]
        run["scorers"] = order.get(run["id"], [])
        run["means"] = means.get(run["id"], {})
        for scorer_id, mean in run["means"].items():
            trends[run["name"]][scorer_id].append((run["id"], mean))
    return {
        "runs": runs,
        "trends": {k: dict(v) for k, v in trends.items()},
        "statuses": statuses,
        "names": names,
    }


def experiment(store: str | os.PathLike[str], ref: str) -> dict[str, Any]:
    """One run: its row, scorers with their summary, coverage, distributions, failure groups,
    and the other runs of its name (to compare with).

    Raises:
        StoreError: No run has this id (or id prefix).
    """
    run = read_experiment(store, ref)
    eid = run["id"]
    with reading(store) as con:
        scorers = rows(
            con,
            "SELECT es.scorer_id, es.scorer_name, es.description, es.threshold_min,"
            " es.threshold_max, es.higher_is_better, s.n, s.errors, s.mean, s.stddev,"
            " s.ci95_low, s.ci95_high, s.min, s.max, s.pass_rate, s.error_rate"
            " FROM experiment_scorers es LEFT JOIN scorer_summary s"
            " ON s.experiment_id = es.experiment_id AND s.scorer_id = es.scorer_id"
            " WHERE es.experiment_id = ? ORDER BY es.position",
            [eid],
        )
        coverage = rows(
            con,
            "SELECT count(*) AS processed, count(*) FILTER (WHERE error IS NOT NULL)"
            " AS target_failed, count(*) FILTER (WHERE status = 'success') AS items_succeeded"
            " FROM experiment_items WHERE experiment_id = ?",
            [eid],
        )[0]
        histograms = _histograms(con, eid)
        groups = _failure_groups(con, eid)
        siblings = rows(
            con,
            "SELECT id, status, started_at FROM experiments WHERE name = ? AND id <> ?"
            " ORDER BY started_at DESC LIMIT 50",
            [run["name"], eid],
        )
    for scorer in scorers:
        scorer["histogram"] = histograms.get(scorer["scorer_id"])
    return {
        "run": run,
        "scorers": scorers,
        "coverage": coverage,
        "failure_groups": groups,
        "siblings": siblings,
        # Per slice and scorer: n, mean and the change against a baseline. Filled by the
        # slices of issue 16 (item 2) once the store can compute them; None shows no section.
        "slices": None,
    }


def _histograms(con: duckdb.DuckDBPyConnection, eid: str) -> dict[str, dict[str, Any]]:
    """Per scorer, :data:`BINS` equal bins over [0, 1] (or the scores' own range when they
    leave it) with their counts."""
    found = rows(
        con,
        f"""
        WITH s AS (SELECT scorer_id, score FROM scores WHERE experiment_id = ?),
        r AS (SELECT scorer_id, least(min(score), 0.0) AS lo,
                     CASE WHEN max(score) <= 1.0 THEN 1.0
                          WHEN max(score) = least(min(score), 0.0) THEN max(score) + 1
                          ELSE max(score) END AS hi
              FROM s GROUP BY ALL)
        SELECT scorer_id, lo, hi,
               least(CAST(floor((score - lo) / (hi - lo) * {BINS}) AS INTEGER), {BINS - 1})
                   AS bin,
               count(*) AS n
        FROM s JOIN r USING (scorer_id) GROUP BY ALL
        """,
        [eid],
    )
    out: dict[str, dict[str, Any]] = {}
    for row in found:
        entry = out.setdefault(
            row["scorer_id"], {"lo": row["lo"], "hi": row["hi"], "counts": [0] * BINS}
        )
        entry["counts"][row["bin"]] += row["n"]
    return out


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


def item(
    store: str | os.PathLike[str], ref: str, item_id: str, *, baseline: str | None = None
) -> dict[str, Any]:
    """One item of one run: its row, each scorer's score or error, every judge execution, and
    the same item in ``baseline`` (a run id) when given.

    Raises:
        StoreError: No run has this id.
    """
    run = read_experiment(store, ref)
    base = read_experiment(store, baseline) if baseline else None
    with reading(store) as con:
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
    scorers = rows(
        con,
        "SELECT es.scorer_id, s.score, s.reason, s.preprocess_step_result,"
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

"""The run list's page: the store's runs filtered, a page at a time, each with its scorers'
means, the trend of each run name of the page, and the baseline each run is compared with
(``_baselines.py``). Its queries run on the page's read-only connection
(``_queries.reading``), over the runs as ``_run_rows.py`` reads them, and read the page's runs
(or one pass over the runs' narrow columns), never every run's rows. See
docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import duckdb

from evalkit.view._baselines import compare_with
from evalkit.view._queries import Source, has_table, name_of, reading, rows
from evalkit.view._run_rows import RunRows, run_rows

#: Runs a page of the list shows.
PAGE_SIZE = 50
#: Most runs of one name a trend chart draws: the newest of them up to the page's newest.
TREND_RUNS = 50
#: Most run names the name box suggests (a store may hold thousands).
MAX_NAMES = 1000


def _means(
    con: duckdb.DuckDBPyConnection, ids: list[str]
) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """Per run, its scorer ids in their order, and the mean of each scorer that has scores."""
    order: dict[str, list[str]] = defaultdict(list)
    means: dict[str, dict[str, float]] = defaultdict(dict)
    if not ids:
        return order, means
    # Joined with the ids as a table: list_contains() per row was 20 times slower.
    found = rows(
        con,
        "WITH i AS (SELECT unnest(?::VARCHAR[]) AS experiment_id)"
        " SELECT es.experiment_id, es.scorer_id, m.mean FROM experiment_scorers es JOIN i"
        " USING (experiment_id) LEFT JOIN (SELECT experiment_id, scorer_id, avg(score) AS mean"
        " FROM scores JOIN i USING (experiment_id) GROUP BY ALL) m"
        " USING (experiment_id, scorer_id) ORDER BY es.position",
        [ids],
    )
    for row in found:
        order[row["experiment_id"]].append(row["scorer_id"])
        if row["mean"] is not None:
            means[row["experiment_id"]][row["scorer_id"]] = row["mean"]
    return order, means


def _charted(
    con: duckdb.DuckDBPyConnection, runs: RunRows, listed: list[dict[str, Any]]
) -> list[tuple[str, str, str | None]]:
    """``(id, name, verdict)`` of the runs the page's trend charts draw, oldest first: per
    run name of the page, the newest `TREND_RUNS` runs of that name matching the
    filters, from the page's newest run of it back."""
    newest: dict[str, str] = {}
    for run in listed:  # newest first
        newest.setdefault(run["name"], run["id"])
    if not newest:
        return []
    # Each run's rank among its name's listed runs (1: newest); a chart draws ranks k to
    # k + TREND_RUNS - 1 from the page's newest run of its name, rank k.
    found = con.execute(
        f"""
        WITH {runs.cte},
        f AS (
            SELECT r.id, r.name, r.verdict, r.started_at,
                row_number() OVER (PARTITION BY r.name ORDER BY r.started_at DESC, r.id) AS k
            FROM runs r WHERE list_contains(?, r.name) AND {runs.where("r")}
        ),
        n AS (SELECT f.name, f.k FROM f JOIN (SELECT unnest(?::VARCHAR[]) AS id) USING (id))
        SELECT f.id, f.name, f.verdict FROM f JOIN n ON f.name = n.name
            AND f.k BETWEEN n.k AND n.k + ? - 1
        ORDER BY f.started_at, f.id DESC
        """,
        [*runs.params, list(newest), *runs.where_params, list(newest.values()), TREND_RUNS],
    ).fetchall()
    return [(i, n, v) for i, n, v in found]


def experiments(
    store: Source, *, name: str = "", status: str = "", failed: bool = False, page: int = 1
) -> dict[str, Any]:
    """One page of the store's runs (newest first, `PAGE_SIZE` a page), filtered by a
    name substring, a status and whether the run's verdict failed, with each listed run's mean
    per scorer and the baseline to compare it with (`compare_with`), and per run name
    of the page its trend (`_trends`). A page past the last shows the last.

    Every query reads the page's runs, or one pass over the runs' narrow columns: the page
    costs about the same in a store of twenty thousand runs as in one of twenty
    (``tests/benchmarks/bench_view_runs.py``).

    Returns:
        ``runs`` (dicts with ``means``: scorer id → mean, ``verdict``: ``passed``,
        ``failed`` or None when not judged, and ``compare_with``), ``trends`` (run name →
        scorer id → list of ``(run id, mean)``), ``failed_runs`` (ids of the listed and
        charted runs whose verdict failed), ``statuses`` (every status in the store),
        ``names`` (the first `MAX_NAMES` run names), ``total`` (runs matching the
        filters), ``page``, ``pages`` and ``page_size``.
    """
    empty: dict[str, Any] = {"runs": [], "trends": {}, "failed_runs": [], "statuses": [],
                             "names": [], "total": 0, "page": 1, "pages": 1,
                             "page_size": PAGE_SIZE}  # fmt: skip
    with reading(store) as con:
        if not has_table(con, "experiments"):  # a store whose creation was cut short
            return empty
        runs = run_rows(con, name=name, status=status, failed=failed)
        statuses = [r[0] for r in con.execute(
            f"WITH {runs.cte} SELECT DISTINCT status FROM runs ORDER BY 1", runs.params
        ).fetchall()]  # fmt: skip
        names = [r[0] for r in con.execute(
            "SELECT DISTINCT name FROM experiments ORDER BY 1 LIMIT ?", [MAX_NAMES]
        ).fetchall()]  # fmt: skip
        counted = con.execute(
            f"WITH {runs.cte} SELECT count(*) FROM runs r WHERE {runs.where('r')}",
            [*runs.params, *runs.where_params],
        ).fetchone()
        total = int(counted[0]) if counted else 0
        pages = max(math.ceil(total / PAGE_SIZE), 1)
        page = min(max(page, 1), pages)  # past the last page: the last page
        listed = rows(
            con,
            f"WITH {runs.cte} SELECT r.* EXCLUDE (writer_pid, writer_host),"
            " r.baseline_id IN (SELECT id FROM experiments) AS baseline_kept"
            f" FROM runs r WHERE {runs.where('r')} ORDER BY r.started_at DESC, r.id"
            " LIMIT ? OFFSET ?",
            [*runs.params, *runs.where_params, PAGE_SIZE, (page - 1) * PAGE_SIZE],
        )
        charted = _charted(con, runs, listed)
        # The page's runs are among the charted ones: one query for every mean shown.
        order, means = _means(con, [i for i, _, _ in charted])
        compare_with(con, name_of(store), runs, listed)
    for run in listed:
        run["scorers"] = order.get(run["id"], [])
        run["means"] = means.get(run["id"], {})
    trends: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for run_id, run_name, _ in charted:  # oldest first
        for scorer_id in order.get(run_id, []):
            mean = means.get(run_id, {}).get(scorer_id)
            if mean is not None:
                trends[run_name][scorer_id].append((run_id, mean))
    return {
        "runs": listed,
        "trends": {k: dict(v) for k, v in trends.items()},
        "failed_runs": [i for i, _, verdict in charted if verdict == "failed"],
        "statuses": statuses,
        "names": names,
        "total": total,
        "page": page,
        "pages": pages,
        "page_size": PAGE_SIZE,
    }

"""The run list's page: the store's runs filtered, each with its scorers' means, the trend of
each run name, and the baseline each run is compared with (its stored baseline, else the run
``latest`` chooses for it). Its queries run on the page's read-only connection
(``_queries.reading``). See docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any

import duckdb

from evalkit.experiment_file import RegressionSection
from evalkit.store import BaselinePin, effective_status
from evalkit.view._queries import Source, has_table, name_of, reading, rows

#: Runs a page of the list shows.
PAGE_SIZE = 50
#: Most runs of one name a trend chart draws: the newest of them up to the page's newest.
TREND_RUNS = 50
#: Most run names the name box suggests (a store may hold thousands).
MAX_NAMES = 1000

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
class _Runs:
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


def _runs(con: duckdb.DuckDBPyConnection, *, name: str, status: str, failed: bool) -> _Runs:
    """The ``runs`` clause (:class:`_Runs`) of the store behind ``con``."""
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
    return _Runs(cte, [gone], name.strip().lower(), status, failed)


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
    con: duckdb.DuckDBPyConnection, runs: _Runs, listed: list[dict[str, Any]]
) -> list[tuple[str, str, str | None]]:
    """``(id, name, verdict)`` of the runs the page's trend charts draw, oldest first: per
    run name of the page, the newest :data:`TREND_RUNS` runs of that name matching the
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
    """One page of the store's runs (newest first, :data:`PAGE_SIZE` a page), filtered by a
    name substring, a status and whether the run's verdict failed, with each listed run's mean
    per scorer and the baseline to compare it with (:func:`compare_with`), and per run name
    of the page its trend (:func:`_trends`). A page past the last shows the last.

    Every query reads the page's runs, or one pass over the runs' narrow columns: the page
    costs about the same in a store of twenty thousand runs as in one of twenty
    (``tests/benchmarks/bench_view_runs.py``).

    Returns:
        ``runs`` (dicts with ``means``: scorer id → mean, ``verdict``: ``passed``,
        ``failed`` or None when not judged, and ``compare_with``), ``trends`` (run name →
        scorer id → list of ``(run id, mean)``), ``failed_runs`` (ids of the listed and
        charted runs whose verdict failed), ``statuses`` (every status in the store),
        ``names`` (the first :data:`MAX_NAMES` run names), ``total`` (runs matching the
        filters), ``page``, ``pages`` and ``page_size``.
    """
    empty: dict[str, Any] = {"runs": [], "trends": {}, "failed_runs": [], "statuses": [],
                             "names": [], "total": 0, "page": 1, "pages": 1,
                             "page_size": PAGE_SIZE}  # fmt: skip
    with reading(store) as con:
        if not has_table(con, "experiments"):  # a store whose creation was cut short
            return empty
        runs = _runs(con, name=name, status=status, failed=failed)
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


#: The share of a run's items a baseline on another dataset must hold: ``[regression]``'s
#: default, as ``evalkit diff latest RUN`` takes it.
MIN_PAIRED = RegressionSection().min_paired

# Whether two runs pair, by (store, baseline, candidate, the candidate's status and counts):
# a baseline is a complete run, whose items no longer change.
_PAIRED: OrderedDict[tuple[Any, ...], bool] = OrderedDict()
_PAIRED_KEPT = 4096
_PAIRED_LOCK = threading.Lock()


#: Options of each run fetched at once while choosing its baseline: the first usually pairs.
_OPTIONS_FIRST = 4
#: What makes a run a baseline whatever it is compared with (``evalkit.compare.not_eligible``).
_ELIGIBLE = "{a}status IN ('completed', 'completed_with_errors') AND NOT {a}partial"


def compare_with(
    con: duckdb.DuckDBPyConnection, where: str, runs: _Runs, listed: list[dict[str, Any]]
) -> None:
    """Set each run of ``listed`` (rows of ``runs``, with ``baseline_kept``: whether its
    stored baseline is still in the store) its ``compare_with``: the baseline the run list's
    link compares it with (``id``, ``reason``: why that run, ``stored``), or None.

    The baseline its verdict was judged against, as stored (``baseline_id``,
    ``baseline_reason``); else, for a run judged against none (a first night, a run of
    ``run_evals``, a store from before verdicts were kept), the run ``latest`` chooses for it
    among the runs started before it (a baseline is an earlier night): the newest complete,
    full run of its name whose verdict did not fail and that pairs with it, or with a pin in
    force the pinned run unless a run started after the pin passed. The choice is made among
    every run of the store, so it does not depend on the list's filters.

    This mirrors :func:`evalkit.compare.baseline_candidates` and
    :func:`~evalkit.compare.choose_baseline` (``tests/view/test_app.py`` checks they agree)
    on the page's own connection: those open the store again, and a process that opens the
    file again while it holds it drops its file lock (POSIX locks are per process), so a run
    could write under the viewer's feet. It costs one query for the first few options of
    every run of the page (more only for a run none of them pairs with), one for the pins,
    and a count of the paired items only for an option whose dataset differs, once (kept).
    """
    pins = _pins(con)
    choose: dict[str, dict[str, Any]] = {}
    for run in listed:
        run["compare_with"] = None
        if run.pop("baseline_kept", None):
            run["compare_with"] = {
                "id": run["baseline_id"],
                "reason": run["baseline_reason"],
                "stored": True,
            }
        else:
            choose[run["id"]] = run
    pinned_ids = {name: pin.experiment_id for name, pin in pins.items() if pin.experiment_id}
    pinned = _pinned(con, runs, [pinned_ids[r["name"]] for r in choose.values()
                                 if r["name"] in pinned_ids])  # fmt: skip
    first, last = 1, _OPTIONS_FIRST
    while choose:
        options = _options(con, runs, list(choose), first, last)
        for run_id, run in list(choose.items()):
            found = options.get(run_id, [])
            exhausted = len(found) <= last - first
            pin = pins.get(run["name"])
            pin_id = pinned_ids.get(run["name"], "")
            if exhausted and _before(pinned.get(pin_id), run):
                found.append(pinned[pin_id])  # the pinned run comes last
            for option in found:
                if _pairs(con, where, option, run):
                    run["compare_with"] = {
                        "id": option["id"],
                        "reason": _reason(option, pin),
                        "stored": False,
                    }
                    break
            if run["compare_with"] is not None or exhausted:
                del choose[run_id]
        first, last = last + 1, last * 4


def _options(
    con: duckdb.DuckDBPyConnection, runs: _Runs, ids: list[str], first: int, last: int
) -> dict[str, list[dict[str, Any]]]:
    """Per run of ``ids``, its options ``first`` to ``last`` (1-based, in order) among the
    baselines ``latest`` takes before a pinned run: the complete, full runs of its name
    started before it, newest first, whose verdict did not fail; with a pin in force, those
    that passed and started after the pin (the pinned run itself is :func:`_pinned`'s)."""
    pins = (
        "SELECT experiment_name, experiment_id, created_at FROM baseline_pins QUALIFY"
        " row_number() OVER (PARTITION BY experiment_name ORDER BY created_at DESC) = 1"
        if has_table(con, "baseline_pins")
        else "SELECT NULL::VARCHAR AS experiment_name, NULL::VARCHAR AS experiment_id,"
        " NULL::TIMESTAMP AS created_at WHERE false"
    )
    # Per name, each run's count k of the options at or before it in the list's order: the
    # options of a run whose count is k are those counted k + first to k + last. An equality
    # join on (name, count): a join on "started before" took 0.1 s at 20,000 runs.
    found = rows(
        con,
        f"""
        WITH {runs.cte}, pins AS ({pins}),
        c AS (SELECT unnest(?::VARCHAR[]) AS id),
        x AS (
            SELECT r.id, r.name, r.dataset_fingerprint, r.verdict,
                {_ELIGIBLE.format(a="r.")} AND CASE WHEN p.experiment_id IS NULL
                    THEN r.verdict IS DISTINCT FROM 'failed'
                    ELSE r.verdict = 'passed' AND r.started_at > p.created_at
                        AND r.id <> p.experiment_id END AS option,
                sum(option::INTEGER) OVER (PARTITION BY r.name
                    ORDER BY r.started_at DESC, r.id ROWS UNBOUNDED PRECEDING) AS k
            FROM runs r LEFT JOIN pins p ON p.experiment_name = r.name
            WHERE r.name IN (SELECT name FROM runs JOIN c USING (id))
        ),
        wanted AS (
            SELECT x.id AS for_id, x.name, x.k + t.d AS k FROM x JOIN c USING (id),
                range(?, ? + 1) t(d)
        )
        SELECT w.for_id, x.id, x.dataset_fingerprint, x.verdict FROM wanted w
        JOIN x ON x.name = w.name AND x.k = w.k AND x.option
        ORDER BY w.for_id, x.k
        """,
        [*runs.params, ids, first, last],
    )
    options: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in found:
        options[row.pop("for_id")].append(row)
    return options


def _pinned(
    con: duckdb.DuckDBPyConnection, runs: _Runs, ids: list[str]
) -> dict[str, dict[str, Any]]:
    """The pinned runs of ``ids`` that can be a baseline (complete, full), by id."""
    if not ids:
        return {}
    found = rows(
        con,
        f"WITH {runs.cte} SELECT id, name, started_at, dataset_fingerprint, verdict FROM runs r"
        f" WHERE list_contains(?, id) AND {_ELIGIBLE.format(a='r.')}",
        [*runs.params, sorted(set(ids))],
    )
    return {row["id"]: row for row in found}


def _before(option: dict[str, Any] | None, run: dict[str, Any]) -> bool:
    """Whether ``option`` comes after ``run`` in the list's order (started before it)."""
    if option is None or option["name"] != run["name"]:
        return False
    return (option["started_at"], run["id"]) < (run["started_at"], option["id"])


def _reason(option: dict[str, Any], pin: BaselinePin | None) -> str:
    """Why ``latest`` takes ``option`` (:func:`evalkit.compare.baseline_candidates`'s words)."""
    if pin is None:
        if option["verdict"] == "passed":
            return "newest passing run"
        return "newest run stored before verdicts were kept"
    if option["id"] == pin.experiment_id:
        return pin.reason
    return f"newest passing run since {pin.experiment_id} was pinned"


def _pins(con: duckdb.DuckDBPyConnection) -> dict[str, BaselinePin]:
    """The pin in force per run name (its newest row, unless that unpinned it)."""
    if not has_table(con, "baseline_pins"):
        return {}
    found = con.execute(
        "SELECT experiment_name, experiment_id, pinned_by, note, created_at FROM baseline_pins"
        " QUALIFY row_number() OVER (PARTITION BY experiment_name ORDER BY created_at DESC) = 1"
    ).fetchall()
    return {row[0]: BaselinePin(*row) for row in found if row[1] is not None}


def _pairs(
    con: duckdb.DuckDBPyConnection, where: str, base: dict[str, Any], run: dict[str, Any]
) -> bool:
    """Whether ``base`` pairs with ``run`` (:func:`evalkit.compare.pairs_with`'s rule)."""
    fingerprint = base.get("dataset_fingerprint")
    if fingerprint is not None and fingerprint == run.get("dataset_fingerprint"):
        return True
    key = (where, base["id"], run["id"], run["status"], run["succeeded_count"],
           run["failed_count"])  # fmt: skip
    with _PAIRED_LOCK:
        if key in _PAIRED:
            _PAIRED.move_to_end(key)
            return _PAIRED[key]
    found = con.execute(
        "SELECT count(*), count(b.item_id) FROM experiment_items c"
        " LEFT JOIN (SELECT DISTINCT item_id FROM experiment_items WHERE experiment_id = ?)"
        " b USING (item_id) WHERE c.experiment_id = ?",
        [base["id"], run["id"]],
    ).fetchone()
    total, paired = (int(found[0]), int(found[1])) if found else (0, 0)
    pairs = total > 0 and paired / total >= MIN_PAIRED
    with _PAIRED_LOCK:
        _PAIRED[key] = pairs
        while len(_PAIRED) > _PAIRED_KEPT:
            _PAIRED.popitem(last=False)
    return pairs

"""The run list's page: the store's runs filtered, each with its scorers' means, the trend of
each run name, and the baseline each run is compared with (its stored baseline, else the run
``latest`` chooses for it). Its queries run on the page's read-only connection
(``_queries.reading``). See docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from typing import Any

import duckdb

from evalkit.compare import not_eligible
from evalkit.experiment_file import RegressionSection
from evalkit.store import BaselinePin
from evalkit.view._queries import Source, all_runs, has_table, name_of, reading, rows


def _means(
    con: duckdb.DuckDBPyConnection, ids: list[str]
) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """Per run, its scorer ids in their order, and the mean of each scorer that has scores."""
    order: dict[str, list[str]] = defaultdict(list)
    means: dict[str, dict[str, float]] = defaultdict(dict)
    if not ids:
        return order, means
    found = rows(
        con,
        "SELECT es.experiment_id, es.scorer_id, m.mean FROM experiment_scorers es"
        " LEFT JOIN (SELECT experiment_id, scorer_id, avg(score) AS mean FROM scores"
        " WHERE list_contains(?, experiment_id) GROUP BY ALL) m USING (experiment_id, scorer_id)"
        " WHERE list_contains(?, es.experiment_id) ORDER BY es.position",
        [ids, ids],
    )
    for row in found:
        order[row["experiment_id"]].append(row["scorer_id"])
        if row["mean"] is not None:
            means[row["experiment_id"]][row["scorer_id"]] = row["mean"]
    return order, means


def experiments(
    store: Source, *, name: str = "", status: str = "", failed: bool = False
) -> dict[str, Any]:
    """The runs of the store (newest first), filtered by a name substring, a status and
    whether the run's verdict failed, with each run's mean per scorer, the baseline to compare
    it with (:func:`compare_with`) and, per run name, the means over its runs (oldest first).

    Returns:
        ``runs`` (dicts with ``means``: scorer id → mean, ``verdict``: ``passed``,
        ``failed`` or None when not judged, and ``compare_with``), ``trends`` (run name →
        scorer id → list of ``(run id, mean)``), ``failed_runs`` (ids of the listed runs whose
        verdict failed), ``statuses`` (every status in the store) and ``names``.
    """
    with reading(store) as con:
        table = all_runs(con)
        statuses = sorted({r["status"] for r in table})
        names = sorted({r["name"] for r in table})
        needle = name.strip().lower()
        runs = [
            r
            for r in table
            if (not needle or needle in r["name"].lower())
            and (not status or r["status"] == status)
            and (not failed or r["verdict"] == "failed")
        ]
        order, means = _means(con, [r["id"] for r in runs])
        compare_with(con, name_of(store), table, runs)
    trends: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for run in reversed(runs):  # oldest first
        run["scorers"] = order.get(run["id"], [])
        run["means"] = means.get(run["id"], {})
        for scorer_id, mean in run["means"].items():
            trends[run["name"]][scorer_id].append((run["id"], mean))
    return {
        "runs": runs,
        "trends": {k: dict(v) for k, v in trends.items()},
        "failed_runs": [r["id"] for r in runs if r["verdict"] == "failed"],
        "statuses": statuses,
        "names": names,
    }


#: The share of a run's items a baseline on another dataset must hold: ``[regression]``'s
#: default, as ``evalkit diff latest RUN`` takes it.
MIN_PAIRED = RegressionSection().min_paired

# Whether two runs pair, by (store, baseline, candidate, the candidate's status and counts):
# a baseline is a complete run, whose items no longer change.
_PAIRED: OrderedDict[tuple[Any, ...], bool] = OrderedDict()
_PAIRED_KEPT = 4096
_PAIRED_LOCK = threading.Lock()


def compare_with(
    con: duckdb.DuckDBPyConnection,
    where: str,
    table: list[dict[str, Any]],
    runs: list[dict[str, Any]],
) -> None:
    """Set each run of ``runs`` its ``compare_with``: the baseline the run list's link
    compares it with (``id``, ``reason``: why that run, ``stored``), or None.

    The baseline its verdict was judged against, as stored (``baseline_id``,
    ``baseline_reason``); else, for a run judged against none (a first night, a run of
    ``run_evals``, a store from before verdicts were kept), the run ``latest`` chooses for it
    among the runs started before it (a baseline is an earlier night): the newest complete,
    full run of its name whose verdict did not fail and that pairs with it, or with a pin in
    force the pinned run unless a run started after the pin passed. ``table`` is every run of
    the store (newest first), so the choice does not depend on the list's filters.

    This mirrors :func:`evalkit.compare.baseline_candidates` and
    :func:`~evalkit.compare.choose_baseline` (``tests/view/test_app.py`` checks they agree)
    on the page's own connection: those open the store again, and a process that opens the
    file again while it holds it drops its file lock (POSIX locks are per process), so a run
    could write under the viewer's feet. It costs one query for the pins, and a count of the
    paired items only for a run whose chosen run's dataset differs, once (kept).
    """
    position = {run["id"]: index for index, run in enumerate(table)}
    pins = _pins(con)
    for run in runs:
        if run["baseline_id"] in position:
            run["compare_with"] = {
                "id": run["baseline_id"],
                "reason": run["baseline_reason"],
                "stored": True,
            }
            continue
        here = position[run["id"]]
        earlier = [
            r for r in table[here + 1 :] if r["name"] == run["name"] and not_eligible(r) is None
        ]
        run["compare_with"] = None
        for option, reason in _latest(earlier, pins.get(run["name"])):
            if _pairs(con, where, option, run):
                run["compare_with"] = {"id": option["id"], "reason": reason, "stored": False}
                break


def _pins(con: duckdb.DuckDBPyConnection) -> dict[str, BaselinePin]:
    """The pin in force per run name (its newest row, unless that unpinned it)."""
    if not has_table(con, "baseline_pins"):
        return {}
    found = con.execute(
        "SELECT experiment_name, experiment_id, pinned_by, note, created_at FROM baseline_pins"
        " QUALIFY row_number() OVER (PARTITION BY experiment_name ORDER BY created_at DESC) = 1"
    ).fetchall()
    return {row[0]: BaselinePin(*row) for row in found if row[1] is not None}


def _latest(
    runs: list[dict[str, Any]], pin: BaselinePin | None
) -> list[tuple[dict[str, Any], str]]:
    """The options ``latest`` has among ``runs`` (eligible, newest first), with why."""
    if pin is None:
        return [
            (r, "newest passing run" if r["verdict"] == "passed"
             else "newest run stored before verdicts were kept")
            for r in runs if r["verdict"] != "failed"
        ]  # fmt: skip
    newer = [
        (r, f"newest passing run since {pin.experiment_id} was pinned")
        for r in runs
        if r["verdict"] == "passed"
        and r["id"] != pin.experiment_id
        and r["started_at"] > pin.created_at
    ]
    return newer + [(r, pin.reason) for r in runs if r["id"] == pin.experiment_id]


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

"""The baseline each run of the run list links to (*compare with baseline*): its stored one,
else the run ``latest`` chooses for it, read on the page's own connection. See
``_runs_page.py``, `compare_with` and docs/pages/design/viewer-stack.md.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from typing import Any

import duckdb

from evalkit._defaults import DEFAULT_MIN_PAIRED
from evalkit.store import BaselinePin
from evalkit.view._queries import has_table, rows
from evalkit.view._run_rows import RunRows

#: The share of a run's items a baseline on another dataset must hold: ``[regression]``'s
#: default, as ``evalkit diff latest RUN`` takes it.
MIN_PAIRED = DEFAULT_MIN_PAIRED

# Whether two runs pair, by (store, baseline, candidate, the candidate's status and counts):
# a baseline is a complete run, whose items no longer change.
_PAIRED: OrderedDict[tuple[Any, ...], bool] = OrderedDict()
_PAIRED_KEPT = 4096
_PAIRED_LOCK = threading.Lock()


#: Options of each run fetched at once while choosing its baseline: the first usually pairs.
_OPTIONS_FIRST = 4
#: What makes a run a baseline whatever it is compared with (compare/_baseline.py not_eligible).
_ELIGIBLE = "{a}status IN ('completed', 'completed_with_errors') AND NOT {a}partial"


def compare_with(
    con: duckdb.DuckDBPyConnection, where: str, runs: RunRows, listed: list[dict[str, Any]]
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

    This mirrors [`evalkit.compare.baseline_candidates`][evalkit.compare.baseline_candidates] and
    [`choose_baseline`][evalkit.compare.choose_baseline] (``tests/view/test_app.py`` checks they
    agree) on the page's own connection: those open the store again, and a process that opens the
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
    con: duckdb.DuckDBPyConnection, runs: RunRows, ids: list[str], first: int, last: int
) -> dict[str, list[dict[str, Any]]]:
    """Per run of ``ids``, its options ``first`` to ``last`` (1-based, in order) among the
    baselines ``latest`` takes before a pinned run: the complete, full runs of its name
    started before it, newest first, whose verdict did not fail; with a pin in force, those
    that passed and started after the pin (the pinned run itself is `_pinned`'s)."""
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
    con: duckdb.DuckDBPyConnection, runs: RunRows, ids: list[str]
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
    """Why ``latest`` takes ``option``
    ([`evalkit.compare.baseline_candidates`][evalkit.compare.baseline_candidates]'s words)."""
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
    """Whether ``base`` pairs with ``run`` (the rule of ``pairs_with``, compare/_baseline.py)."""
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

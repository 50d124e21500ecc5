"""Verdicts and baseline pins in a DuckDB file and in a DuckLake store (issue 29, items 1-2):
recorded, replaced when a run is judged again, taken along by ``copy_experiments`` and by a
merge of one slice, and recorded in a lake while other processes write to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit import run_evals
from evalkit._extensions import ducklake_missing
from evalkit.errors import ConfigError
from evalkit.store import (
    connection,
    copy_experiments,
    pin_history,
    read_gates,
    read_pin,
    unpin_baseline,
)
from evalkit.store._pins import pin_baseline
from evalkit.store._verdicts import GateRecord, StoredVerdict, record_verdict
from tests.store.lake_writer import rows, scorers
from tests.store.test_ducklake import writer

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

GATES = [
    GateRecord("length", False, ("Δ -0.100 beyond max_drop 0",), mean=0.3, baseline_mean=0.4,
               delta=-0.1, p_value=0.01, regression="regressed"),
    GateRecord("even", True, mean=0.5, threshold_min=0.4, error_rate=0.0, max_error_rate=0.05),
]  # fmt: skip


def _kinds(tmp_path: Path) -> dict[str, str]:
    return {
        "file": str(tmp_path / "evalkit.duckdb"),
        "lake": f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}",
    }


def _head(store: str, experiment_id: str) -> tuple[Any, ...]:
    with connection(store, read_only=True) as con:
        found = con.execute(
            "SELECT verdict, baseline_id, baseline_reason FROM experiments WHERE id = ?",
            [experiment_id],
        ).fetchall()
    return tuple(found[0])


@pytest.mark.parametrize("kind", ["file", "lake"])
async def test_a_verdict_is_recorded_and_replaced(tmp_path: Path, kind: str) -> None:
    store = _kinds(tmp_path)[kind]
    base = await run_evals(rows(10), scorers(0.0), store=store, experiment="n", progress=False)
    run = await run_evals(rows(10), scorers(0.0), store=store, experiment="n", progress=False)
    assert _head(store, run.experiment_id) == ("passed", None, None)  # its own gates

    record_verdict(store, run.experiment_id, "failed", GATES, baseline_id=base.experiment_id,
                   baseline_reason="newest passing run")  # fmt: skip
    assert _head(store, run.experiment_id) == ("failed", base.experiment_id, "newest passing run")
    gates = read_gates(store, run.experiment_id)
    assert [(g["scorer_id"], g["passed"], g["regression"], g["baseline_id"]) for g in gates] == [
        ("even", True, None, None),
        ("length", False, "regressed", base.experiment_id),
    ]
    assert gates[1]["reasons"] == ["Δ -0.100 beyond max_drop 0"]
    assert (gates[1]["baseline_mean"], gates[1]["delta"], gates[1]["p_value"]) == (0.4, -0.1, 0.01)

    record_verdict(store, run.experiment_id, None)  # judged again: nothing could run
    assert _head(store, run.experiment_id) == (None, None, None)
    assert read_gates(store, run.experiment_id) == []
    assert _head(store, base.experiment_id) == ("passed", None, None)  # untouched
    with pytest.raises(ValueError, match="'passed', 'failed' or None"):
        record_verdict(store, run.experiment_id, "green")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["file", "lake"])
async def test_pins_are_rows_and_the_newest_is_in_force(tmp_path: Path, kind: str) -> None:
    store = _kinds(tmp_path)[kind]
    run = await run_evals(rows(5), scorers(0.0), store=store, experiment="n", progress=False)
    assert read_pin(store, "n") is None
    with pytest.raises(ConfigError, match="no baseline is pinned for experiment 'n'"):
        unpin_baseline(store, "n")
    pin = pin_baseline(store, run.experiment_id, by="alice", note="v2 is the new normal")
    assert pin.reason == "pinned by alice: v2 is the new normal"
    assert read_pin(store, "n") == pin
    assert read_pin(store, "other") is None
    unpin_baseline(store, "n", by="bob")
    assert read_pin(store, "n") is None
    history = pin_history(store, "n")
    assert [(p.experiment_id, p.pinned_by) for p in history] == [
        (None, "bob"), (run.experiment_id, "alice")
    ]  # fmt: skip


@pytest.mark.parametrize("direction", ["file to lake", "lake to file"])
async def test_copy_takes_verdicts_gates_and_pins(tmp_path: Path, direction: str) -> None:
    kinds = _kinds(tmp_path)
    source, destination = (
        (kinds["file"], kinds["lake"]) if direction == "file to lake" else
        (kinds["lake"], kinds["file"])
    )  # fmt: skip
    base = await run_evals(rows(10), scorers(0.0), store=source, experiment="n", progress=False)
    run = await run_evals(rows(10), scorers(0.0), store=source, experiment="n", progress=False)
    record_verdict(source, run.experiment_id, "failed", GATES, baseline_id=base.experiment_id,
                   baseline_reason="newest passing run")  # fmt: skip
    pin_baseline(source, run.experiment_id, by="alice", note="accepted")

    done = copy_experiments(source, destination)
    assert done.rows["scorer_gates"] == 4
    assert done.rows["baseline_pins"] == 1
    assert _head(destination, run.experiment_id) == _head(source, run.experiment_id)
    assert read_gates(destination, run.experiment_id) == read_gates(source, run.experiment_id)
    assert read_pin(destination, "n") == read_pin(source, "n")
    again = copy_experiments(source, destination)  # nothing twice, pins neither
    assert "baseline_pins" not in again.rows
    assert len(pin_history(destination, "n")) == 1


def test_a_verdict_is_recorded_while_other_processes_write_the_lake(tmp_path: Path) -> None:
    lake = _kinds(tmp_path)["lake"]
    first = writer(lake, "judged", 20)
    out, err = first.communicate(timeout=240)
    assert first.returncode == 0, err[-2000:]
    judged = out.split()[0]
    procs = [writer(lake, f"busy{n}", 150) for n in range(2)]
    try:
        for n in range(10):
            verdict: StoredVerdict = "failed" if n % 2 else "passed"
            record_verdict(lake, judged, verdict, GATES, baseline_reason=f"round {n}")
            assert _head(lake, judged) == (verdict, None, f"round {n}")
    finally:
        outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert len(read_gates(lake, judged)) == 2

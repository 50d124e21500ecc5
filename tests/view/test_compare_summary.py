"""The compare page's summary (`evalkit/view/_compare.py`): computed after the store is
released, and kept for as long as the two runs' rows do not change, whatever else is written
to the store (review of issue 34's viewer change: any write to the file, another run's flush
included, threw every kept summary away, and a lake's never was kept)."""

from __future__ import annotations

from pathlib import Path

from evalkit import create_scorer, run_evals
from evalkit.view import _compare
from evalkit.view._compare import Params, page


async def test_the_summary_is_kept_while_the_two_runs_do_not_change(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    rows = [{"input": f"q{i}", "output": "a"} for i in range(30)]
    half = create_scorer("Half", id="half").generate_score(lambda run: float(run.input < "q2"))
    one = create_scorer("Half", id="half").generate_score(lambda run: 1.0)
    base = await run_evals(rows, [half], store=store, progress=False, experiment="e")
    cand = await run_evals(rows, [one], store=store, progress=False, experiment="e")
    _compare._SUMMARIES.clear()
    params = Params(baseline=base.experiment_id, candidate=cand.experiment_id)
    first = page(store, params)["summary"]
    assert [(r["scorer_id"], r["n"]) for r in first] == [("half", 30)]
    await run_evals(rows, [one], store=store, progress=False, experiment="other")
    again = page(store, params)["summary"]
    assert again is first  # another run's write did not throw it away
    assert sum(1 for key in _compare._SUMMARIES if key[0] == str(store)) == 1

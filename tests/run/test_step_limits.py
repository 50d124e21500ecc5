"""Sync scorer steps cannot stall a run: past its scorer's step_timeout a step fails, the run
goes on; Ctrl-C stops a stuck step; a catastrophic regex in regex_match ends in bounded time.

Each stuck run is a subprocess with a timeout, so a regression fails the test instead of
hanging the suite. The bounds are generous (a loaded machine), never timed assertions.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import StepTimeoutError, create_scorer, run_evals, run_evals_sync

ROOT = Path(__file__).parents[2]


def query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


def outcomes(store: Path) -> dict[str, tuple[str, float | None, str | None]]:
    """Per item id: the experiment item's status, its score, its scorer error's message."""
    rows = query(
        store,
        "SELECT i.item_id, i.status, s.score, e.error_message FROM experiment_items i"
        " LEFT JOIN scores s USING (experiment_id, item_id)"
        " LEFT JOIN scorer_errors e USING (experiment_id, item_id)",
    )
    return {item: (status, score, error) for item, status, score, error in rows}


def run_child(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


CATASTROPHIC = {
    # The two of issue 15, then one the regex engine's own safeguards do not catch.
    "nested-plus": ("a" * 40 + "!", r"(a+)+$"),
    "word-star": ("supercalifragilisticexpialidocious" + "!", r"^(\w+\s?)*$"),
    "alternation": ("a" * 40 + "!", r"(a|aa)+$"),
}
ORDINARY = {
    "hit": ("The capital of France is Paris.", r"\bParis\b"),
    "miss": ("The capital of France is Lyon.", r"\bParis\b"),
    "unicode": ("Zürich", r"^\w+$"),
}


def test_catastrophic_regexes_end_in_bounded_time_and_the_other_items_are_scored(
    tmp_path: Path,
) -> None:
    data, store = tmp_path / "regexes.parquet", tmp_path / "evalkit.duckdb"
    rows = [
        {"id": key, "input": "q", "output": output, "ground_truth": pattern}
        for key, (output, pattern) in {**ORDINARY, **CATASTROPHIC}.items()
    ]
    pq.write_table(pa.Table.from_pylist(rows), data)
    child = run_child(
        """
        import sys
        from evalkit import run_evals_sync
        from evalkit.scorers import regex_match

        run_evals_sync(sys.argv[1], [regex_match()], store=sys.argv[2], progress=False,
                       max_error_rate=1.0)
        """,
        str(data),
        str(store),
    )
    assert child.returncode == 0, child.stderr
    found = outcomes(store)
    assert query(store, "SELECT status FROM experiments") == [("completed_with_errors",)]
    assert {key: found[key][:2] for key in ORDINARY} == {
        "hit": ("success", 1.0),
        "miss": ("success", 0.0),
        "unicode": ("success", 1.0),
    }
    for key in CATASTROPHIC:
        status, score, error = found[key]
        # Scored (the engine saw through it) or failed on its own time limit, never hung.
        assert (status, score) == ("success", 0.0) or (
            status == "failed" and "took longer than 1 s to match" in (error or "")
        ), (key, found[key])
    status, _, error = found["alternation"]
    assert status == "failed"
    assert "the regular expression '(a|aa)+$' took longer than 1 s to match" in (error or "")


_STUCK = """
    import sys, time
    from evalkit import create_scorer, run_evals_sync

    how = sys.argv[1]
    # The limit when given, else the default (60 s).
    limits = {"step_timeout": float(sys.argv[3])} if len(sys.argv) > 3 else {}

    def score(run):
        if run.output != "stuck":
            return 1.0
        print("stuck", flush=True)
        if how == "sleep":
            time.sleep(3600)
        if how == "bare":
            for _ in range(3):  # a bare except swallows the stop: it comes again each second
                try:
                    while True:
                        sum(range(1000))
                except BaseException:
                    pass
            return 1.0  # the step ended, but late: the pair fails all the same
        while True:
            try:
                sum(range(1000))  # pure Python, never returns
            except Exception:
                pass  # a step that swallows every Exception is stopped all the same

    scorer = create_scorer("Stuck", **limits).generate_score(score)
    rows = [{"id": str(i), "input": "q", "output": "stuck" if i == 2 else "ok"} for i in range(6)]
    run_evals_sync(rows, [scorer], store=sys.argv[2], progress=False, max_error_rate=1.0,
                   concurrency=1)
"""


@pytest.mark.parametrize("how", ["sleep", "loop", "bare"])
def test_a_sync_step_past_its_limit_fails_and_the_run_goes_on(tmp_path: Path, how: str) -> None:
    store = tmp_path / "evalkit.duckdb"
    # 1 s: far above what a loaded machine needs to return 1.0 from the other items' steps.
    child = run_child(_STUCK, how, str(store), "1")
    assert child.returncode == 0, child.stderr
    found = outcomes(store)
    assert found.pop("2") == (
        "failed",
        None,
        "Scorer 'Stuck' failed at generate_score: "
        "step generate_score of scorer 'Stuck' took longer than 1 s",
    )
    assert found == {str(i): ("success", 1.0, None) for i in (0, 1, 3, 4, 5)}
    assert query(store, "SELECT status FROM experiments") == [("completed_with_errors",)]
    [(step, name, cause)] = query(
        store, "SELECT failed_step, error_name, error->>'$.cause' FROM scorer_errors"
    )
    assert (step, name, cause) == ("generate_score", "ScorerRunError", "StepTimeoutError")


@pytest.mark.parametrize("how", ["sleep", "loop"])
def test_ctrl_c_stops_a_stuck_sync_step_at_once(tmp_path: Path, how: str) -> None:
    store = tmp_path / "evalkit.duckdb"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_STUCK), how, str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "stuck\n"
        child.send_signal(signal.SIGINT)
        # The step's limit is 60 s: ending well before it means Ctrl-C stopped the step.
        _, err = child.communicate(timeout=40)
    finally:
        child.kill()  # a child still stuck (the bug) must not outlive the test
        child.wait()
    assert child.returncode != 0
    assert "RunInterrupted: experiment" in err  # evalkit.run.RunInterrupted: a KeyboardInterrupt
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("cancelled", 2)]
    # The interrupted item is not recorded (a resume scores it), the finished ones are.
    assert outcomes(store) == {"0": ("success", 1.0, None), "1": ("success", 1.0, None)}


def test_a_run_off_the_main_thread_fails_a_late_step_when_it_returns() -> None:
    def slow(run: Any) -> float:
        if run.output == "slow":
            time.sleep(1.5)  # late however fast the machine; the others' 1 s is far above
        return 1.0  # what a loaded machine needs to return at once

    scorer = create_scorer("Slow", step_timeout=1.0).generate_score(slow)
    rows = [{"id": str(i), "input": "q", "output": "slow" if i == 1 else "ok"} for i in range(3)]
    results: list[Any] = []
    thread = threading.Thread(
        target=lambda: results.append(
            run_evals_sync(rows, [scorer], store=None, progress=False, max_error_rate=1.0)
        )
    )
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    statuses = {
        item.item.id: (item.status, item.outcomes[0].error and item.outcomes[0].error.message)
        for item in results[0].items
    }
    assert statuses == {
        "0": ("success", None),
        "1": (
            "failed",
            "Scorer 'Slow' failed at generate_score: "
            "step generate_score of scorer 'Slow' took longer than 1 s",
        ),
        "2": ("success", None),
    }


def test_the_run_gives_back_the_signal_handlers_it_took() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGUSR2)
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    run_evals_sync([{"input": "q", "output": "a"}], [scorer], store=None, progress=False)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGUSR2)) == before


def test_a_step_timeout_error_names_the_step_the_scorer_and_the_limit() -> None:
    error = StepTimeoutError("Quality", "analyze", 2.5)
    assert str(error) == "step analyze of scorer 'Quality' took longer than 2.5 s"
    assert isinstance(error, TimeoutError)
    assert error.to_dict() == {
        "name": "StepTimeoutError",
        "message": str(error),
        "step": "analyze",
        "seconds": 2.5,
    }


def test_two_runs_in_one_event_loop_each_fail_their_late_step() -> None:
    # Both runs' watchdogs share the main thread's handlers, which are given back at the end.
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGUSR2)

    def slow(run: Any) -> float:
        if run.output == "slow":
            time.sleep(1.5)  # late however fast the machine; the others' 1 s is far above
        return 1.0  # what a loaded machine needs to return at once

    scorer = create_scorer("Slow", step_timeout=1.0).generate_score(slow)
    rows = [{"id": str(i), "input": "q", "output": "slow" if i == 1 else "ok"} for i in range(3)]

    async def await_run(rows: list[dict[str, Any]], scorer: Any) -> Any:
        return await run_evals(rows, [scorer], store=None, progress=False, max_error_rate=1.0)

    results: list[Any] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def one() -> None:
                results.append(await await_run(rows, scorer))

            tg.start_soon(one)
            tg.start_soon(one)

    anyio.run(main)
    for result in results:
        failed = {item.item.id: item.outcomes[0].error for item in result.items}
        assert failed["0"] is None
        assert failed["2"] is None
        assert failed["1"] is not None
        assert failed["1"].message.endswith(
            "step generate_score of scorer 'Slow' took longer than 1 s"
        )
    assert len(results) == 2
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGUSR2)) == before

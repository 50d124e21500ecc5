from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import duckdb
import pytest

from evalkit import ItemResult, create_scorer, run_evals
from tests.run.conftest import exact_scorer


def query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


async def test_cancellation_keeps_scored_rows_and_marks_the_run(store: Path) -> None:
    async def app(question: str) -> str:
        await anyio.sleep(0.001)
        return question

    rows = [{"input": f"q{i}", "groundTruth": f"q{i}"} for i in range(200)]
    finished: list[str] = []

    with anyio.CancelScope() as scope:

        def stop_after_five(result: ItemResult) -> None:
            finished.append(result.item.id)
            if len(finished) == 5:
                scope.cancel()

        await run_evals(
            rows,
            [exact_scorer()],
            target=app,
            store=store,
            concurrency=4,
            progress=False,
            on_item_complete=stop_after_five,
        )
    assert scope.cancelled_caught
    assert 5 <= len(finished) < 200

    (experiment,) = query(
        store,
        "SELECT status, succeeded_count, completed_at IS NOT NULL, dataset_fingerprint"
        " FROM experiments",
    )
    assert experiment == ("cancelled", len(finished), True, None)
    stored = {r[0] for r in query(store, "SELECT item_id FROM scores")}
    assert stored == set(finished)
    assert query(store, "SELECT count(*) FROM experiment_items") == [(len(finished),)]


async def test_an_item_finishing_after_the_cancellation_has_its_callback_before_it_is_stored(
    store: Path,
) -> None:
    rows = [{"id": f"q{i}", "input": f"q{i}", "groundTruth": f"q{i}"} for i in range(20)]
    finished: list[str] = []

    with anyio.CancelScope() as scope:

        async def app(question: str) -> str:
            await anyio.lowlevel.checkpoint()
            if question == "q2":
                scope.cancel()  # after the item's last wait: it finishes, then the run stops
            return question

        await run_evals(
            rows,
            [exact_scorer()],
            target=app,
            store=store,
            concurrency=1,
            progress=False,
            flush_interval=1e-9,  # a write is due as each item finishes
            on_item_complete=lambda result: finished.append(result.item.id),
        )
    assert scope.cancelled_caught
    assert finished == ["q0", "q1", "q2"]
    assert {r[0] for r in query(store, "SELECT item_id FROM scores")} == set(finished)
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("cancelled", 3)]


async def test_fatal_error_marks_the_run_failed_and_propagates(store: Path) -> None:
    def explode(result: ItemResult) -> None:
        if result.item.index == 3:
            raise LookupError("callback broke")

    rows = [{"input": f"q{i}", "output": "a"} for i in range(50)]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    with pytest.raises(LookupError, match="callback broke"):
        await run_evals(
            rows, [scorer], store=store, progress=False, concurrency=1, on_item_complete=explode
        )
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("failed", 4)]
    assert query(store, "SELECT count(*) FROM scores") == [(4,)]


_SCRIPT = textwrap.dedent(
    """
    import json
    import sys

    import anyio

    from evalkit import create_scorer, run_evals_sync

    async def app(question):
        await anyio.sleep(0.02)
        return question

    called = []

    def done(result):
        called.append(result.item.id)
        print("done", result.item.id, flush=True)

    rows = [{"input": f"q{i}"} for i in range(1000)]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    try:
        run_evals_sync(rows, [scorer], target=app, store=sys.argv[1], concurrency=2,
                       progress=False, on_item_complete=done)
    except KeyboardInterrupt as stop:  # evalkit.run.RunInterrupted: the run as it stopped
        kept = [r.item.id for r in stop.result.items]
        print("stopped", json.dumps({"callbacks": called, "result": kept}), flush=True)
        raise
    """
)


def test_ctrl_c_stops_cleanly_and_keeps_what_was_scored(store: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert child.stdout is not None
    seen = [child.stdout.readline() for _ in range(4)]
    child.send_signal(signal.SIGINT)
    rest, err = child.communicate(timeout=60)
    # communicate() reads the pipe itself: the "done" lines readline() read ahead are not in
    # `rest`, so what the run did is taken from the line the script prints as it stops.
    (stopped,) = [line for line in rest.splitlines() if line.startswith("stopped ")]
    kept = json.loads(stopped.removeprefix("stopped "))
    called = kept["callbacks"]
    assert child.returncode != 0
    assert "RunInterrupted: experiment" in err  # a KeyboardInterrupt saying how to resume
    assert "resume it with resume=" in err
    assert {line.split()[1] for line in seen} <= set(called)
    assert 4 <= len(called) < 1000
    assert sorted(kept["result"]) == sorted(called)
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [
        ("cancelled", len(called))
    ]
    assert {r[0] for r in query(store, "SELECT item_id FROM scores")} == set(called)


_FINISHING = textwrap.dedent(
    """
    import json
    import sys

    from evalkit import create_scorer, run_evals_sync

    def app(question):  # sync: runs in a worker thread, which a cancellation waits for
        if question == "q2":
            print("waiting", flush=True)
            sys.stdin.readline()  # the test sends SIGINT, then a line
        return question

    called = []
    rows = [{"id": f"q{i}", "input": f"q{i}"} for i in range(50)]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    try:
        run_evals_sync(rows, [scorer], target=app, store=sys.argv[1], concurrency=1,
                       progress=False, flush_interval=1e-9,  # a write due at every item
                       on_item_complete=lambda result: called.append(result.item.id))
    except KeyboardInterrupt as stop:
        print(json.dumps({"callbacks": called, "result": [r.item.id for r in stop.result.items]}))
    """
)


def test_a_ctrl_c_while_an_item_finishes_keeps_it_with_its_callback(store: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _FINISHING, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "waiting\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, err
    # q2's target was running when the Ctrl-C came: the item finishes, then the run stops.
    assert json.loads(out) == {"callbacks": ["q0", "q1", "q2"], "result": ["q0", "q1", "q2"]}
    assert {r[0] for r in query(store, "SELECT item_id FROM scores")} == {"q0", "q1", "q2"}
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("cancelled", 3)]


_STOPPED = textwrap.dedent(
    """
    import sys

    from evalkit import create_scorer, run_evals_sync

    ROWS = int(sys.argv[2])
    finished = []

    def done(result):
        finished.append(result.item.id)
        if len(finished) == int(sys.argv[3]):
            print("waiting", flush=True)
            sys.stdin.readline()  # the test sends SIGINT, then a line

    rows = [{"input": f"q{i}", "output": "a"} for i in range(ROWS)]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    try:
        result = run_evals_sync(rows, [scorer], store=sys.argv[1], concurrency=1,
                                progress=False, on_item_complete=done)
    except KeyboardInterrupt as stop:  # evalkit.run.RunInterrupted: the run as it stopped
        print("interrupted", flush=True)
        result = stop.result
    print(result.status, result.summary.processed, len(result.items), flush=True)
    """
)


def stop_at(store: Path, rows: int, at: int) -> tuple[list[str], str]:
    """Run ``_STOPPED``: a Ctrl-C while the callback of the ``at``-th finished item runs."""
    child = subprocess.Popen(
        [sys.executable, "-c", _STOPPED, str(store), str(rows), str(at)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert child.stdout is not None
    assert child.stdin is not None
    assert child.stdout.readline() == "waiting\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, err
    return out.split(), err


def test_a_ctrl_c_before_the_last_item_raises_run_interrupted_with_the_partial_run(
    store: Path,
) -> None:
    out, _ = stop_at(store, rows=50, at=3)
    assert out[:2] == ["interrupted", "cancelled"]
    processed, kept = int(out[2]), int(out[3])
    assert 3 <= processed < 50
    assert kept == processed
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [
        ("cancelled", processed)
    ]


def test_a_ctrl_c_after_the_last_item_was_scored_lets_the_run_finish(store: Path) -> None:
    out, err = stop_at(store, rows=5, at=5)
    assert out == ["completed", "5", "5"]
    assert "evalkit: Ctrl-C after every item was scored: the run is finished" in err
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("completed", 5)]


async def test_a_cancellation_as_the_last_batch_is_handed_over_still_writes_it(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of the one-write end of a run: the last batch is kept by the writer and written
    with the run's end, and a cancellation arriving between the two (delivered at the end's
    write, which was not shielded) left the run `running` with none of its 40 rows. The
    cancellation is injected at that moment by wrapping the writer's hand-over."""
    from evalkit.store._writer import StoreWriter

    keep = StoreWriter.keep
    scope = anyio.CancelScope()

    def keep_then_cancel(self: StoreWriter, batch: Any) -> None:
        keep(self, batch)
        anyio.from_thread.run_sync(scope.cancel)

    monkeypatch.setattr(StoreWriter, "keep", keep_then_cancel)
    rows = [{"input": f"q{i}", "output": "a"} for i in range(40)]
    scorer = create_scorer("One", id="one").generate_score(lambda run: 1.0)
    with scope:
        await run_evals(rows, [scorer], store=store, progress=False, flush_interval=1000)
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("completed", 40)]
    assert query(store, "SELECT count(*) FROM scores") == [(40,)]

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import OpenAITarget, Scorer, create_scorer, run_evals
from evalkit.errors import ConfigError, StoreError
from evalkit.store import latest_resumable, list_experiments, read_experiment
from evalkit.testing import FakeOpenAIServer

ROWS = [
    {"id": f"r{i}", "input": f"q{i}", "output": str(i), "groundTruth": str(i)} for i in range(40)
]


class Switch:
    """A scorer pair whose failures and calls the test controls."""

    def __init__(self) -> None:
        self.failing: set[str] = set()
        self.calls: list[tuple[str, str]] = []

    def scorer(self, sid: str, *, metadata: dict[str, Any] | None = None) -> Scorer:
        def score(run: Any) -> float:
            self.calls.append((run.input, sid))
            if run.input in self.failing:
                raise RuntimeError(f"{sid} failed on {run.input}")
            return float(len(run.input) + len(sid))

        builder = create_scorer(sid.title(), id=sid, metadata=metadata)
        return builder.generate_score(score)


def pairs(store: Path, table: str, experiment_id: str) -> list[tuple[str, str]]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            f"SELECT item_id, scorer_id FROM {table} WHERE experiment_id = ? ORDER BY ALL",
            [experiment_id],
        ).fetchall()
    return [(str(a), str(b)) for a, b in rows]


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert done.returncode == 0
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def simulate_kill(store: Path, experiment_id: str, keep: int) -> None:
    """Leave the experiment as a SIGKILL would: ``running``, by a dead process, items lost."""
    with duckdb.connect(str(store)) as con:
        lost = [f"r{i}" for i in range(keep, len(ROWS))]
        for table in ("experiment_items", "scores", "scorer_errors"):
            con.execute(
                f"DELETE FROM {table} WHERE experiment_id = ? AND list_contains(?, item_id)",
                [experiment_id, lost],
            )
        con.execute(
            "UPDATE experiments SET status = 'running', completed_at = NULL, writer_pid = ?"
            " WHERE id = ?",
            [dead_pid(), experiment_id],
        )


async def test_interrupted_run_is_detected_and_resumed_without_rerunning(store: Path) -> None:
    switch = Switch()
    scorers = [switch.scorer("a"), switch.scorer("b")]
    first = await run_evals(ROWS, scorers, store=store, experiment="nightly", progress=False)
    simulate_kill(store, first.experiment_id, keep=15)
    assert list_experiments(store)["status"].to_pylist() == ["interrupted"]
    assert read_experiment(store, first.experiment_id)["status"] == "interrupted"
    assert latest_resumable(store, name="nightly") == first.experiment_id

    switch.calls.clear()
    again = await run_evals(
        ROWS, scorers, store=store, experiment="nightly", progress=False,
        resume=first.experiment_id,
    )  # fmt: skip
    assert again.experiment_id == first.experiment_id
    assert again.status == "completed"
    assert sorted({q for q, _ in switch.calls}) == sorted(f"q{i}" for i in range(15, 40))
    expected = sorted((f"r{i}", s) for i in range(40) for s in "ab")
    assert pairs(store, "scores", first.experiment_id) == expected
    row = read_experiment(store, first.experiment_id)
    assert (row["status"], row["succeeded_count"], row["failed_count"]) == ("completed", 40, 0)
    assert row["dataset_fingerprint"] == first.dataset_fingerprint
    assert len(list_experiments(store)) == 1


async def test_resume_runs_failed_pairs_once_and_replaces_their_errors(store: Path) -> None:
    switch = Switch()
    switch.failing = {"q3", "q7"}
    scorers = [switch.scorer("a"), switch.scorer("b")]
    first = await run_evals(ROWS, scorers, store=store, progress=False)
    assert first.status == "completed_with_errors"
    assert len(pairs(store, "scorer_errors", first.experiment_id)) == 4
    with pytest.raises(ConfigError, match="completed_with_errors: nothing to resume"):
        await run_evals(ROWS, scorers, store=store, progress=False, resume=first.experiment_id)

    switch.failing = {"q7"}
    switch.calls.clear()
    again = await run_evals(
        ROWS, scorers, store=store, progress=False, resume=first.experiment_id, retry_errors=True
    )
    assert sorted(switch.calls) == [("q3", "a"), ("q3", "b"), ("q7", "a"), ("q7", "b")]
    assert again.status == "completed_with_errors"
    assert pairs(store, "scorer_errors", first.experiment_id) == [("r7", "a"), ("r7", "b")]
    assert len(pairs(store, "scores", first.experiment_id)) == 78
    row = read_experiment(store, first.experiment_id)
    assert (row["succeeded_count"], row["failed_count"]) == (39, 1)

    switch.failing = set()
    final = await run_evals(
        ROWS, scorers, store=store, progress=False, resume=first.experiment_id, retry_errors=True
    )
    assert final.status == "completed"
    assert pairs(store, "scorer_errors", first.experiment_id) == []
    assert len(set(pairs(store, "scores", first.experiment_id))) == 80
    assert len(pairs(store, "scores", first.experiment_id)) == 80


async def test_retry_errors_leaves_never_evaluated_items(store: Path) -> None:
    switch = Switch()
    switch.failing = {"q2"}
    scorers = [switch.scorer("a")]
    first = await run_evals(ROWS, scorers, store=store, progress=False)
    simulate_kill(store, first.experiment_id, keep=10)
    switch.failing = set()
    switch.calls.clear()
    again = await run_evals(
        ROWS, scorers, store=store, progress=False, resume=first.experiment_id, retry_errors=True
    )
    assert switch.calls == [("q2", "a")]
    assert again.status == "interrupted"
    assert read_experiment(store, first.experiment_id)["status"] == "interrupted"
    final = await run_evals(ROWS, scorers, store=store, progress=False, resume=first.experiment_id)
    assert final.status == "completed"
    assert len(pairs(store, "scores", first.experiment_id)) == 40


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("scorer", "scorer 'c' added"),
        ("metadata", "scorer 'a' metadata"),
        ("data", "dataset"),
    ],
)
async def test_fingerprint_mismatch_refuses_unless_forced(
    store: Path, change: str, message: str
) -> None:
    switch = Switch()
    first = await run_evals(ROWS, [switch.scorer("a")], store=store, progress=False)
    simulate_kill(store, first.experiment_id, keep=5)
    rows, scorers = ROWS, [switch.scorer("a")]
    if change == "scorer":
        scorers = [switch.scorer("a"), switch.scorer("c")]
    elif change == "metadata":
        scorers = [switch.scorer("a", metadata={"version": 2})]
    else:
        rows = ROWS[:-1]
    with pytest.raises(ConfigError, match="refusing to resume") as caught:
        await run_evals(rows, scorers, store=store, progress=False, resume=first.experiment_id)
    assert message in str(caught.value)
    assert read_experiment(store, first.experiment_id)["status"] == "interrupted"
    forced = await run_evals(
        rows, scorers, store=store, progress=False, resume=first.experiment_id, force=True
    )
    assert forced.experiment_id == first.experiment_id
    assert forced.status == "completed"


async def test_content_fingerprint_is_compared_when_recorded(store: Path) -> None:
    switch = Switch()
    first = await run_evals(ROWS, [switch.scorer("a")], store=store, progress=False)
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE experiments SET status = 'failed'")
    changed = [{**r, "output": "x"} if r["id"] == "r0" else r for r in ROWS]
    with pytest.raises(ConfigError, match="dataset content fingerprint"):
        await run_evals(changed, [switch.scorer("a")], store=store, resume=first.experiment_id)


async def test_a_live_running_experiment_is_not_resumed(store: Path) -> None:
    switch = Switch()
    first = await run_evals(ROWS, [switch.scorer("a")], store=store, progress=False)
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE experiments SET status = 'running'")  # by this live process
    assert list_experiments(store)["status"].to_pylist() == ["running"]
    with pytest.raises(ConfigError, match="still running"):
        await run_evals(ROWS, [switch.scorer("a")], store=store, resume=first.experiment_id)
    with pytest.raises(ConfigError, match="still running"):
        await run_evals(
            ROWS, [switch.scorer("a")], store=store, resume=first.experiment_id, force=True
        )


async def test_force_takes_over_a_running_row_of_another_host(store: Path) -> None:
    switch = Switch()
    first = await run_evals(ROWS, [switch.scorer("a")], store=store, progress=False)
    simulate_kill(store, first.experiment_id, keep=20)
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE experiments SET writer_host = 'elsewhere'")
    assert list_experiments(store)["status"].to_pylist() == ["running"]
    with pytest.raises(ConfigError, match="still running"):
        await run_evals(ROWS, [switch.scorer("a")], store=store, resume=first.experiment_id)
    taken = await run_evals(
        ROWS, [switch.scorer("a")], store=store, progress=False, resume=first.experiment_id,
        force=True,
    )  # fmt: skip
    assert taken.status == "completed"
    assert len(pairs(store, "scores", first.experiment_id)) == 40


@pytest.mark.parametrize(
    "options",
    [{"retry_errors": True}, {"force": True}, {"resume": "abc", "store": None}],
)
async def test_resume_options_are_checked(store: Path, options: dict[str, Any]) -> None:
    switch = Switch()
    with pytest.raises(ConfigError):
        await run_evals(ROWS, [switch.scorer("a")], progress=False, **{"store": store, **options})


async def test_resuming_an_unknown_experiment_fails(store: Path) -> None:
    switch = Switch()
    await run_evals(ROWS, [switch.scorer("a")], store=store, progress=False)
    with pytest.raises(StoreError, match="no experiment with id 'nope'"):
        await run_evals(ROWS, [switch.scorer("a")], store=store, resume="nope")
    with pytest.raises(StoreError, match="no run named 'other' to resume"):
        latest_resumable(store, name="other")


async def test_a_target_that_moved_resumes_with_a_note(store: Path, judge_key: str) -> None:
    def target(server: FakeOpenAIServer, model: str = "app-model") -> OpenAITarget:
        return OpenAITarget(model, base_url=server.base_url, api_key_env=judge_key, max_retries=0)

    rows = [{k: v for k, v in row.items() if k != "output"} for row in ROWS]
    switch = Switch()
    async with FakeOpenAIServer() as before, FakeOpenAIServer() as after:
        first = await run_evals(rows, [switch.scorer("a")], target=target(before), store=store,
                                progress=False)  # fmt: skip
        simulate_kill(store, first.experiment_id, keep=5)
        with pytest.raises(ConfigError) as caught:  # another model: that changes results
            await run_evals(rows, [switch.scorer("a")], target=target(after, "other-model"),
                            store=store, progress=False, resume=first.experiment_id)  # fmt: skip
        assert "target model: 'app-model' -> 'other-model'" in str(caught.value)
        assert "base_url" not in str(caught.value)
        with pytest.warns(RuntimeWarning) as noted:
            resumed = await run_evals(rows, [switch.scorer("a")], target=target(after),
                                      store=store, progress=False,
                                      resume=first.experiment_id)  # fmt: skip
        assert after.stats.completions == len(ROWS) - 5
    assert [str(w.message) for w in noted] == [
        f"evalkit: target moved: {before.base_url} -> {after.base_url};"
        f" resuming {first.experiment_id}"
    ]
    assert resumed.status == "completed"

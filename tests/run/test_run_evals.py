from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from evalkit import (
    ConfigError,
    DatasetError,
    ExperimentResult,
    ItemResult,
    create_scorer,
    load_dataset,
    run_evals,
    run_evals_sync,
)
from tests.run.conftest import QA, exact_scorer, flaky_scorer


def query(store: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


async def test_scores_a_parquet_dataset_into_the_store(qa_path: Path, store: Path) -> None:
    result = await run_evals(
        qa_path, [exact_scorer()], store=store, experiment="nightly-qa", progress=False
    )
    assert result.status == "completed"
    assert result.name == "nightly-qa"
    assert result.scores == {"exact": pytest.approx(4 / 6)}
    assert result.summary.total_items == 6
    assert (result.summary.succeeded, result.summary.failed) == (6, 0)
    assert result.dataset == str(qa_path)
    assert result.dataset_fingerprint == load_dataset(qa_path).fingerprint()
    assert len(result.items) == 6
    assert [r.item.index for r in result.items] == list(range(6))

    (experiment,) = query(
        store,
        "SELECT id, name, status, total_items, succeeded_count, failed_count, dataset,"
        " dataset_fingerprint, completed_at IS NOT NULL FROM experiments",
    )
    assert experiment == (
        result.experiment_id, "nightly-qa", "completed", 6, 6, 0, str(qa_path),
        result.dataset_fingerprint, True,
    )  # fmt: skip
    rows = query(
        store,
        "SELECT item_id, score, source, output->>'$', input->>'$', run_id FROM scores"
        " ORDER BY item_id",
    )
    by_id = {r.item.id: r for r in result.items}
    assert len(rows) == 6
    for item_id, score, source, output, text, run_id in rows:
        kept = by_id[item_id]
        assert score == (1.0 if kept.item.output == kept.item.ground_truth else 0.0)
        assert (source, output, text) == ("dataset", kept.item.output, kept.item.input)
        assert run_id == kept.run_id == kept.outcomes[0].result.run_id  # type: ignore[union-attr]


async def test_failing_scorer_keeps_recovered_score_in_memory_only(
    qa_path: Path, store: Path
) -> None:
    result = await run_evals(qa_path, [exact_scorer(), flaky_scorer()], store=store, progress=False)
    assert result.status == "completed_with_errors"

    flaky = result.results_for("flaky")
    failed = [o for o in flaky if o.status == "failed"]
    assert len(failed) == 2
    for outcome in failed:
        assert outcome.score == 0.5  # recovered from ScorerRunError.result.score
        assert outcome.failed_step == "generate_reason"
        assert outcome.completed_steps == ("generate_score",)
        assert outcome.error is not None
        assert outcome.error.message == "Scorer 'Flaky' failed at generate_reason: reason exploded"
        assert outcome.error.cause == "RuntimeError"
        assert "reason exploded" in (outcome.error.traceback or "")
        assert outcome.result is not None
        assert outcome.result.score == 0.5
    # The mean counts successful scores only: four 1.0s, not the two recovered 0.5s.
    assert result.scores["flaky"] == 1.0
    assert result.summary.scorers["flaky"].failed == 2
    assert result.summary.scorers["flaky"].succeeded == 4
    # The other scorer is unaffected on every item.
    assert all(o.status == "success" for o in result.results_for("exact"))
    assert result.summary.scorers["exact"].succeeded == 6

    failed_ids = sorted(o.item_id for o in failed)
    stored = query(store, "SELECT item_id FROM scores WHERE scorer_id = 'flaky' ORDER BY 1")
    assert len(stored) == 4
    assert not set(failed_ids) & {r[0] for r in stored}
    assert query(store, "SELECT count(*) FROM scores WHERE scorer_id = 'exact'") == [(6,)]
    errors = query(
        store,
        "SELECT item_id, failed_step, completed_steps, error_message, error->>'$.cause'"
        " FROM scorer_errors ORDER BY item_id",
    )
    assert [e[0] for e in errors] == failed_ids
    for _, step, completed, message, cause in errors:
        assert (step, json.loads(completed), cause) == (
            "generate_reason",
            ["generate_score"],
            "RuntimeError",
        )
        assert "reason exploded" in message
    columns = [c[0] for c in query(store, "DESCRIBE scorer_errors")]
    assert "score" not in columns
    assert query(store, "SELECT succeeded_count, failed_count FROM experiments") == [(4, 2)]


async def test_target_failure_fails_that_item_only(tmp_path: Path, store: Path) -> None:
    def app(question: str) -> str:
        if "France" in question:
            raise ConnectionError("application timed out")
        return question.upper()

    rows = [{"input": r["input"], "groundTruth": r["groundTruth"]} for r in QA]
    scorer = create_scorer("Shouting").generate_score(lambda run: float(run.output.isupper()))
    result = await run_evals(rows, [scorer], target=app, store=store, progress=False)
    assert result.status == "completed_with_errors"
    assert result.summary.target_failed == 1
    failed = [r for r in result.items if r.status == "failed"]
    assert len(failed) == 1
    (bad,) = failed
    assert bad.item.input == "Capital of France?"
    assert bad.outcomes == ()
    assert bad.output is None
    assert bad.error is not None
    assert (bad.error.name, bad.error.message) == ("ConnectionError", "application timed out")
    assert result.scores == {"shouting": 1.0}
    assert all(r.source == "target" for r in result.items)
    assert result.summary.scorers["shouting"].succeeded == 5

    items = query(
        store,
        "SELECT status, output->>'$', error->>'$.name', error->>'$.message', source"
        " FROM experiment_items ORDER BY item_index",
    )
    assert items[1] == ("failed", None, "ConnectionError", "application timed out", "target")
    assert items[0] == ("success", "WHAT IS 2+2?", None, None, "target")
    assert query(store, "SELECT count(*), min(source) FROM scores") == [(5, "target")]


async def test_concurrency_bounds_items_in_flight() -> None:
    in_flight = max_in_flight = 0
    three_in = anyio.Event()

    async def app(question: str) -> str:
        # The first items wait until three are in flight (so the bound is reached whatever the
        # machine's speed); a fourth at once would show the bound broken.
        nonlocal in_flight, max_in_flight
        in_flight += 1
        max_in_flight = max(max_in_flight, in_flight)
        if in_flight == 3:
            three_in.set()
        with anyio.fail_after(60):
            await three_in.wait()
        await anyio.sleep(0)
        in_flight -= 1
        return question

    rows = [{"input": f"q{i}"} for i in range(20)]
    scorer = create_scorer("Echo").generate_score(lambda run: 1.0)
    result = await run_evals(rows, [scorer], target=app, concurrency=3, store=None, progress=False)
    assert result.summary.processed == 20
    assert max_in_flight == 3


async def test_waiting_scorers_of_one_item_run_concurrently() -> None:
    from tests.doubles import ScriptedJudgeStep

    in_flight = max_in_flight = 0
    all_in = anyio.Event()

    def observe(run: Any) -> bool:
        nonlocal in_flight, max_in_flight
        in_flight += 1
        max_in_flight = max(max_in_flight, in_flight)
        if in_flight == 3:
            all_in.set()
        return False

    async def leave(results: Any) -> float:
        nonlocal in_flight
        # Each scorer stays in until all three are: run one after another, the first would
        # wait here in vain (and fail) however fast the machine.
        with anyio.fail_after(60):
            await all_in.wait()
        in_flight -= 1
        return 1.0

    scorers = [
        create_scorer(f"Judged {k}")
        .preprocess(ScriptedJudgeStep({"ok": True}, fails=observe))
        .generate_score(leave)
        for k in range(3)
    ]
    result = await run_evals(
        [{"input": "q", "output": "a"}], scorers, store=None, concurrency=1, progress=False
    )
    assert result.status == "completed"
    assert max_in_flight == 3


async def test_missing_output_column_without_target_is_a_clear_error(store: Path) -> None:
    with pytest.raises(DatasetError, match="no output column and no target") as info:
        await run_evals([{"input": "q"}], [exact_scorer()], store=store, progress=False)
    assert info.value.column == "output"
    assert not store.exists()


async def test_store_none_keeps_everything_in_memory(tmp_path: Path) -> None:
    result = await run_evals(QA, [exact_scorer()], store=None, progress=False)
    assert result.store is None
    assert result.status == "completed"
    assert list(tmp_path.iterdir()) == []


async def test_every_scorer_failing_everywhere_is_a_failed_run() -> None:
    broken = create_scorer("Broken").generate_score(lambda run: float("nan"))
    result = await run_evals(QA, [broken], store=None, progress=False)
    assert result.status == "failed"
    assert result.scores == {"broken": None}
    assert all(o.failed_step == "generate_score" for o in result.results_for("broken"))


async def test_keep_results_false_keeps_summaries(store: Path) -> None:
    result = await run_evals(
        QA, [exact_scorer(), flaky_scorer()], store=store, progress=False, keep_results=False
    )
    assert result.items == ()
    assert result.scores == {"exact": pytest.approx(4 / 6), "flaky": 1.0}
    assert result.summary.scorers["flaky"].failed == 2
    with pytest.raises(ConfigError, match="keep_results=False"):
        result.results_for("exact")
    with pytest.raises(ConfigError, match="keep_results=False"):
        result.to_pandas()
    assert query(store, "SELECT count(*) FROM scores") == [(10,)]


async def test_on_item_complete_sync_and_async() -> None:
    seen: list[str] = []

    async def record(result: ItemResult) -> None:
        await anyio.sleep(0)
        seen.append(result.item.id)

    result = await run_evals(
        QA, [exact_scorer()], store=None, progress=False, on_item_complete=record
    )
    assert sorted(seen) == sorted(r.item.id for r in result.items)
    count = 0

    def tally(result: ItemResult) -> None:
        nonlocal count
        count += 1

    await run_evals(QA, [exact_scorer()], store=None, progress=False, on_item_complete=tally)
    assert count == 6


async def test_limit_evaluates_the_first_rows(store: Path) -> None:
    result = await run_evals(QA, [exact_scorer()], store=store, progress=False, limit=2)
    assert [r.item.index for r in result.items] == [0, 1]
    assert result.summary.total_items == 2
    assert query(store, "SELECT total_items, succeeded_count FROM experiments") == [(2, 2)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"limit": -1}, "limit"),
        ({"executor": "process", "workers": 1025}, "workers = 1025 is above the ceiling of 1024"),
        ({"flush_interval": 0}, "flush_interval"),
        ({"thresholds": {"nope": 0.5}}, "no scorer with id 'nope'"),
    ],
)
async def test_invalid_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        await run_evals(QA, [exact_scorer()], store=None, progress=False, **options)


async def test_invalid_scorers() -> None:
    with pytest.raises(ConfigError, match="non-empty"):
        await run_evals(QA, [], store=None)
    with pytest.raises(ConfigError, match="no generate_score"):
        await run_evals(QA, [create_scorer("Empty")], store=None)
    with pytest.raises(ConfigError, match="two scorers have the id 'exact'"):
        await run_evals(QA, [exact_scorer(), exact_scorer()], store=None)
    with pytest.raises(ConfigError, match="not a Scorer"):
        await run_evals(QA, [lambda run: 1.0], store=None)  # type: ignore[list-item]


async def test_data_and_target_of_no_accepted_kind_are_refused() -> None:
    # data and target are typed (DatasetLike, TargetLike), so a type checker refuses these too:
    # with either annotation back to Any, mypy reports the ignores below as unused.
    scorers = [exact_scorer()]
    with pytest.raises(ConfigError, match="data must be a path"):
        await run_evals(42, scorers, store=None, progress=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="target must be None, a callable or a Target, not int"):
        await run_evals(QA, scorers, target=42, store=None, progress=False)  # type: ignore[arg-type]


def test_run_evals_sync(store: Path) -> None:
    result = run_evals_sync(QA, [exact_scorer()], store=store, progress=False)
    assert isinstance(result, ExperimentResult)
    assert result.scores == {"exact": pytest.approx(4 / 6)}
    assert query(store, "SELECT status FROM experiments") == [("completed",)]


async def test_run_evals_sync_inside_a_loop_is_refused() -> None:
    with pytest.raises(ConfigError, match="inside an event loop"):
        run_evals_sync(QA, [exact_scorer()], store=None, progress=False)


async def test_progress_bar_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    await run_evals(QA, [exact_scorer(), flaky_scorer()], store=None, experiment="bar")
    err = capsys.readouterr().err
    assert "bar" in err
    assert "6/6" in err
    assert "failures=2" in err


async def test_repr_is_compact() -> None:
    result = await run_evals(QA, [exact_scorer()], store=None, progress=False)
    text = repr(result)
    assert text.startswith(f"ExperimentResult(experiment_id={result.experiment_id!r}")
    assert "items=6" in text
    assert "Jupiter" not in text


async def test_empty_dataset_completes_with_nothing(tmp_path: Path, store: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "empty.parquet"
    pq.write_table(pa.schema([("input", pa.string()), ("output", pa.string())]).empty_table(), path)
    result = await run_evals(path, [exact_scorer()], store=store, progress=False)
    assert (result.status, result.summary.processed, result.scores) == (
        "completed",
        0,
        {"exact": None},
    )
    assert query(store, "SELECT status, total_items FROM experiments") == [("completed", 0)]


async def test_garbage_collector_state_is_restored() -> None:
    import gc

    before = gc.get_freeze_count()
    seen: list[int] = []
    await run_evals(
        [{"input": str(i), "output": "x"} for i in range(10_050)],
        [exact_scorer()],
        store=None,
        progress=False,
        on_item_complete=lambda r: seen.append(gc.get_freeze_count()),
    )
    assert max(seen) > before  # results were frozen during the run
    assert gc.get_freeze_count() == before


@pytest.mark.parametrize("sharding", [{}, {"shard": "0/1"}])
async def test_workers_never_outnumber_the_items(
    qa_path: Path, store: Path, sharding: dict[str, Any]
) -> None:
    # Every worker is a task of the run's event loop: a scorer sees how many exist. With
    # concurrency far above the 6 rows, at most 6 workers (plus the ticker) may be started.
    tasks: list[int] = []

    async def count_tasks(run: Any) -> float:
        import asyncio

        tasks.append(len(asyncio.all_tasks()))
        return 1.0

    scorer = create_scorer("Tasks").generate_score(count_tasks)
    result = await run_evals(
        qa_path, [scorer], store=store, concurrency=10_000, progress=False, **sharding
    )
    assert result.summary.processed == 6
    assert len(tasks) == 6
    assert max(tasks) <= 6 + 4  # the workers, the ticker, the test's own task and the loop's

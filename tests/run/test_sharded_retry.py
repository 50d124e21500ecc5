"""A sharded experiment's retry_errors pass: the failed pairs inside its finished shards run
again (on their stored outputs, the scored pairs untouched) under any executor, the shards'
summaries follow, and what cannot be retried is refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import duckdb
import pyarrow.parquet as pq
import pytest

from evalkit import Scorer, create_scorer
from evalkit.errors import ConfigError
from evalkit.run import run_evals
from evalkit.run._summary import SummaryBuilder

from .test_sharded import ROWS, crash_after, data, scores_of, table

__all__ = ["data"]  # the fixture, imported


class RetryOptions(TypedDict):
    """The options every refused retry below passes to ``run_evals``."""

    resume: str
    retry_errors: bool
    progress: bool


def flaky_scorers(flag: Path, seen: Path) -> list[Scorer]:
    """An exact-match scorer and one that fails on inputs ending in 7 while ``flag`` exists;
    both note in ``seen`` each (scorer, input) they run on (workers append to the file)."""

    def note(scorer: str, run: Any) -> None:
        with open(seen, "a") as f:
            f.write(f"{scorer}|{run.input}\n")

    def exact(run: Any) -> float:
        note("exact", run)
        return 1.0 if run.output == run.ground_truth else 0.0

    def flaky(run: Any) -> float:
        note("flaky", run)
        if flag.exists() and run.input.endswith("7"):
            raise ValueError(f"upstream down: {run.input}")
        return len(run.output) / 10

    return [
        create_scorer("Exact", id="exact").generate_score(exact),
        create_scorer("Flaky", id="flaky").generate_score(flaky),
    ]


def ran(seen: Path) -> list[str]:
    return sorted(seen.read_text().splitlines()) if seen.exists() else []


SEVENS = sorted(f"flaky|question {i}" for i in range(ROWS) if str(i).endswith("7"))


@pytest.mark.parametrize("options", [{"shard": "0/1"}, {"executor": "process", "workers": 2}])
async def test_retry_errors_reruns_only_the_failed_pairs_of_a_sharded_run(
    data: Path, tmp_path: Path, options: dict[str, Any]
) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    clean = tmp_path / "clean.duckdb"
    await run_evals(data, flaky_scorers(flag, tmp_path / "x.txt"), store=clean, progress=False)
    store = tmp_path / "s.duckdb"
    flag.touch()
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, progress=False, **options)
    assert first.status == "completed_with_errors"
    assert table(store, "SELECT count(*) FROM scorer_errors") == [(len(SEVENS),)]

    flag.unlink()  # the upstream is back
    seen.unlink()
    retried = await run_evals(
        data, flaky_scorers(flag, seen), store=store, resume=first.experiment_id,
        retry_errors=True, progress=False, **options,
    )  # fmt: skip
    assert ran(seen) == SEVENS  # the failed pairs only: no scored pair, no other item
    assert retried.experiment_id == first.experiment_id
    assert retried.status == "completed"
    assert retried.summary.processed == ROWS
    assert retried.summary.failed == 0
    assert retried.summary.scorers["flaky"].n == ROWS
    assert scores_of(store) == scores_of(clean)
    assert table(store, "SELECT count(*) FROM scorer_errors") == [(0,)]
    assert table(store, "SELECT count(*), count(DISTINCT item_id) FROM experiment_items") == [
        (ROWS, ROWS)
    ]
    assert table(store, "SELECT status, succeeded_count, failed_count FROM experiments") == [
        ("completed", ROWS, 0)
    ]
    # Each retried shard's stored summary is what its rows now hold: merged, they are the
    # whole experiment (a later sharded resume sums them).
    merged = SummaryBuilder(["exact", "flaky"], ROWS)
    for (state,) in table(store, "SELECT summary FROM shards_done"):
        merged.merge(state)
    summary = merged.build()
    assert (summary.processed, summary.succeeded, summary.failed) == (ROWS, ROWS, 0)
    assert summary.scorers["flaky"].n == ROWS
    assert summary.scorers["flaky"].mean == pytest.approx(retried.summary.scorers["flaky"].mean)
    assert summary.scorers["flaky"].stddev == pytest.approx(retried.summary.scorers["flaky"].stddev)


async def test_pairs_that_fail_again_stay_failed_once(data: Path, tmp_path: Path) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    flag.touch()
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1",
                            progress=False)  # fmt: skip
    before = scores_of(store)
    again = await run_evals(
        data, flaky_scorers(flag, seen), store=store, resume=first.experiment_id,
        retry_errors=True, shard="0/1", progress=False,
    )  # fmt: skip
    assert again.status == "completed_with_errors"
    assert scores_of(store) == before
    # One failure per pair, the newest: the older rows were replaced, not added to.
    assert table(store, "SELECT count(*), count(DISTINCT item_id) FROM scorer_errors") == [
        (len(SEVENS), len(SEVENS))
    ]
    assert table(store, "SELECT failed_count FROM experiments") == [(len(SEVENS),)]


async def test_retry_errors_of_an_interrupted_run_leaves_unfinished_shards(
    data: Path, tmp_path: Path
) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    flag.touch()
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1",
                            progress=False)  # fmt: skip
    crash_after(store, 2)  # shards 2-5 (rows 80-239) never got recorded
    flag.unlink()
    seen.unlink()
    retried = await run_evals(
        data, flaky_scorers(flag, seen), store=store, resume=first.experiment_id,
        retry_errors=True, shard="0/1", progress=False,
    )  # fmt: skip
    assert ran(seen) == [s for s in SEVENS if int(s.rsplit(" ", 1)[1]) < 80]
    assert retried.status == "interrupted"  # items never evaluated stay so
    # A plain resume then runs the unfinished shards, and the summaries add up.
    seen.unlink()
    finished = await run_evals(data, flaky_scorers(flag, seen), store=store,
                               resume=first.experiment_id, shard="0/1", progress=False)  # fmt: skip
    assert len(ran(seen)) == 2 * (ROWS - 80)
    assert finished.status == "completed"
    assert finished.summary.processed == ROWS
    assert finished.summary.failed == 0


async def test_what_a_sharded_retry_cannot_do_is_refused_before_writing(
    data: Path, tmp_path: Path
) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1",
                            progress=False)  # fmt: skip
    ident = first.experiment_id
    retry: RetryOptions = {"resume": ident, "retry_errors": True, "progress": False}
    with pytest.raises(ConfigError, match="is completed: nothing to resume"):
        await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1", **retry)
    crash_after(store, 3)
    with pytest.raises(ConfigError, match="no failed pair in a finished shard: nothing to retry"):
        await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1", **retry)
    with pytest.raises(ConfigError, match="ran slice 0/1: resume it with shard='0/1'"):
        await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/2",
                        executor="process", **retry)  # fmt: skip
    with duckdb.connect(str(store)) as con:
        (config,) = con.execute("SELECT config FROM experiments").fetchone()  # type: ignore[misc]
    assert json.loads(config)["executor"] == "local"
    assert table(store, "SELECT count(*) FROM shards_done") == [(3,)]  # nothing ran


@pytest.mark.parametrize("retry_errors", [False, True])
async def test_a_dataset_rewritten_with_other_row_groups_is_not_resumed_by_index(
    data: Path, tmp_path: Path, retry_errors: bool
) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    flag.touch()
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1",
                            progress=False)  # fmt: skip
    if not retry_errors:
        crash_after(store, 2)
    # The same rows (so the same fingerprint), cut into row groups of 30 instead of 40.
    rows = pq.read_table(data / "a.parquet")
    pq.write_table(rows, data / "a.parquet", row_group_size=30)
    before = table(store, "SELECT * FROM shards_done ORDER BY shard_index")
    with pytest.raises(ConfigError, match=r"row groups changed since it ran \(finished shard 0"):
        await run_evals(
            data, flaky_scorers(flag, seen), store=store, resume=first.experiment_id,
            retry_errors=retry_errors, shard="0/1", force=True, progress=False,
        )  # fmt: skip
    assert table(store, "SELECT * FROM shards_done ORDER BY shard_index") == before


async def test_a_completed_sharded_run_has_nothing_to_retry_in_any_mode(
    data: Path, tmp_path: Path
) -> None:
    flag, seen = tmp_path / "flag", tmp_path / "seen.txt"
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, flaky_scorers(flag, seen), store=store, shard="0/1",
                            progress=False)  # fmt: skip
    # Without shard=, the hint to use it would only lead to "nothing to resume".
    with pytest.raises(ConfigError, match="is completed: nothing to resume"):
        await run_evals(data, flaky_scorers(flag, seen), store=store,
                        resume=first.experiment_id, retry_errors=True, progress=False)  # fmt: skip


async def test_a_retried_shard_of_huge_scores_keeps_their_mean_and_spread(
    data: Path, tmp_path: Path
) -> None:
    # The retried shard's summary is recomputed in SQL: ±1e308 made var_samp refuse ("out of
    # range") and the sum overflow (issue 30, item 4); now it is the run's own summary.
    flag = tmp_path / "flag"

    def huge(run: Any) -> float:
        if flag.exists() and run.input.endswith("7"):
            raise ValueError(f"upstream down: {run.input}")
        return 1e308 if int(run.input.split()[-1]) % 2 else -1e308

    scorer = [create_scorer("Huge", id="huge").generate_score(huge)]
    store = tmp_path / "s.duckdb"
    flag.touch()
    first = await run_evals(data, scorer, store=store, shard="0/1", progress=False)
    assert first.status == "completed_with_errors"
    flag.unlink()
    retried = await run_evals(
        data, scorer, store=store, resume=first.experiment_id, retry_errors=True, shard="0/1",
        progress=False,
    )  # fmt: skip
    assert retried.status == "completed"
    merged = SummaryBuilder(["huge"], ROWS)
    for (state,) in table(store, "SELECT summary FROM shards_done"):
        merged.merge(state)
    summary = merged.build().scorers["huge"]
    # 120 odd and 120 even items: mean 0, sample spread 1e308 * sqrt(240 / 239).
    assert summary.n == ROWS
    assert summary.mean == pytest.approx(0.0, abs=1e308 * 1e-12)
    assert summary.stddev == pytest.approx(1e308 * (ROWS / (ROWS - 1)) ** 0.5, rel=1e-12)
    assert (summary.min, summary.max) == (-1e308, 1e308)

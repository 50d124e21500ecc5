"""Sharded runs: shards are row groups; executors local/process/ray give the same rows; a
dead worker's shard runs again; a resumed run skips finished shards; --shard slices merge
into one run; judge rate budgets are divided among workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import Judge, PromptStep, Scorer, create_scorer
from evalkit.cli import main
from evalkit.errors import ConfigError
from evalkit.run import run_evals
from evalkit.run._shards import parse_shard_spec, plan_shards, select_shards
from evalkit.store._merge import merge_stores
from evalkit.testing import FakeOpenAIServer

from ..judge.test_ratelimit import window_max

ROWS = 240
GROUP = 40


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rows = [
        {
            "input": f"question {i}",
            "groundTruth": f"answer {i}" if i % 3 else "other",
            "output": f"answer {i}",
        }
        for i in range(ROWS)
    ]
    folder = tmp_path / "data"
    folder.mkdir()
    # Two files of three row groups each: six shards.
    pq.write_table(pa.Table.from_pylist(rows[:120]), folder / "a.parquet", row_group_size=GROUP)
    pq.write_table(pa.Table.from_pylist(rows[120:]), folder / "b.parquet", row_group_size=GROUP)
    return folder


def scorers() -> list[Scorer]:
    exact = create_scorer("Exact", id="exact").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )

    def picky(run: Any) -> float:
        if run.input.endswith("7"):
            raise ValueError(f"no sevens: {run.input}")
        return len(run.output) / 10

    return [exact, create_scorer("Picky", id="picky").generate_score(picky)]


def table(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


def scores_of(store: Path, experiment_id: str | None = None) -> list[tuple[Any, ...]]:
    where = f"WHERE experiment_id = '{experiment_id}'" if experiment_id else ""
    # run ids end with the item index; their prefix is the experiment id.
    return table(
        store,
        "SELECT scorer_id, item_id, score, reason, split_part(run_id, '-', 2), input, output"
        f" FROM scores {where} ORDER BY scorer_id, item_id",
    )


def errors_of(store: Path) -> list[tuple[Any, ...]]:
    return table(
        store,
        "SELECT scorer_id, item_id, error_message FROM scorer_errors ORDER BY scorer_id, item_id",
    )


def test_shards_are_planned_from_row_groups_with_running_offsets(data: Path) -> None:
    shards = plan_shards(str(data))
    assert [(Path(s.file).name, s.row_group, s.offset, s.rows) for s in shards] == [
        ("a.parquet", 0, 0, 40), ("a.parquet", 1, 40, 40), ("a.parquet", 2, 80, 40),
        ("b.parquet", 0, 120, 40), ("b.parquet", 1, 160, 40), ("b.parquet", 2, 200, 40),
    ]  # fmt: skip
    limited = plan_shards(str(data), limit=90)
    assert [s.rows for s in limited] == [40, 40, 10]
    assert [s.index for s in select_shards(shards, (1, 4))] == [1, 5]


@pytest.mark.parametrize("spec", ["2/2", "x", "1/0", "-1/3"])
def test_bad_shard_specs_are_refused(spec: str) -> None:
    with pytest.raises(ConfigError, match="shard"):
        parse_shard_spec(spec)


@pytest.mark.parametrize("spec", ["1/7", "1/99999999999999999999"])
async def test_more_slices_than_row_groups_are_refused_before_storing(
    data: Path, tmp_path: Path, spec: str
) -> None:
    # 6 row groups: a 7th slice, or an absurd count, would be empty and "pass" with 0 items.
    store = tmp_path / "s.duckdb"
    with pytest.raises(ConfigError, match="the dataset has 6 row group"):
        await run_evals(data, scorers(), store=store, shard=spec, progress=False)
    assert not store.exists()


async def test_non_parquet_data_is_refused_for_a_sharded_run() -> None:
    with pytest.raises(ConfigError, match="Parquet file or folder path"):
        await run_evals([{"input": "q", "output": "a"}], scorers(), executor="process")


async def test_an_unshippable_scorer_is_named(data: Path, tmp_path: Path) -> None:
    import threading

    lock = threading.Lock()
    bad = create_scorer("Locked", id="locked").generate_score(
        lambda run: 1.0 if lock.acquire(blocking=False) else 0.0
    )
    with pytest.raises(ConfigError, match="scorer 'locked' cannot be shipped"):
        await run_evals(data, [bad], executor="process", store=tmp_path / "s.duckdb")


async def test_process_executor_matches_the_single_process_run(data: Path, tmp_path: Path) -> None:
    single, sharded = tmp_path / "single.duckdb", tmp_path / "sharded.duckdb"
    one = await run_evals(data, scorers(), store=single, progress=False)
    many = await run_evals(
        data, scorers(), store=sharded, executor="process", workers=2, progress=False
    )
    assert scores_of(sharded) == scores_of(single)
    assert len(scores_of(single)) == ROWS + ROWS - 24
    assert errors_of(sharded) == errors_of(single)
    assert many.summary.failed == one.summary.failed == 24
    assert many.summary.scorers["exact"].mean == pytest.approx(one.summary.scorers["exact"].mean)
    assert many.summary.scorers["picky"].stddev == pytest.approx(
        one.summary.scorers["picky"].stddev
    )
    assert table(sharded, "SELECT count(*) FROM shards_done") == [(6,)]
    assert table(sharded, "SELECT status, succeeded_count, failed_count FROM experiments") == [
        ("completed_with_errors", ROWS - 24, 24)
    ]


def dead_pid() -> int:
    """The id of a process that has exited (a killed run's writer)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def crash_after(store: Path, shards: int) -> None:
    """Make ``store``'s run look killed after its first ``shards`` shards were recorded."""
    first_row = shards * GROUP
    with duckdb.connect(str(store)) as con:
        con.execute("DELETE FROM shards_done WHERE shard_index >= ?", [shards])
        for name in ("scores", "scorer_errors", "experiment_items"):
            con.execute(
                f"DELETE FROM {name} WHERE CAST(split_part(run_id, '-', 2) AS INT) >= ?",
                [first_row],
            )
        con.execute("UPDATE experiments SET status = 'running', writer_pid = ?", [dead_pid()])


def counting_scorers(seen: Path) -> list[Scorer]:
    """``scorers()``, the first one noting each input it scores in ``seen``."""

    def counting(run: Any) -> float:
        with open(seen, "a") as f:
            f.write(f"{run.input}\n")
        return 1.0 if run.output == run.ground_truth else 0.0

    return [create_scorer("Exact", id="exact").generate_score(counting), scorers()[1]]


@pytest.mark.parametrize("options", [{"shard": "0/1"}, {"executor": "process", "workers": 2}])
async def test_a_resumed_run_skips_finished_shards(
    data: Path, tmp_path: Path, options: dict[str, Any]
) -> None:
    store = tmp_path / "s.duckdb"
    full = tmp_path / "full.duckdb"
    seen = tmp_path / "seen.txt"
    await run_evals(data, scorers(), store=full, progress=False)
    first = await run_evals(data, counting_scorers(seen), store=store, progress=False, **options)
    crash_after(store, 4)  # shards 4 and 5 (rows 160-239) never got recorded
    seen.unlink()
    resumed = await run_evals(
        data, counting_scorers(seen), store=store, resume=first.experiment_id, progress=False,
        **options,
    )  # fmt: skip
    evaluated = seen.read_text().split("\n")[:-1]
    assert sorted(evaluated) == sorted(f"question {i}" for i in range(160, 240))
    assert resumed.experiment_id == first.experiment_id
    assert resumed.status == "completed_with_errors"
    assert scores_of(store) == scores_of(full)
    assert resumed.summary.processed == ROWS
    assert table(store, "SELECT count(*) FROM shards_done") == [(6,)]
    assert table(store, "SELECT status, writer_pid FROM experiments") == [
        ("completed_with_errors", os.getpid())
    ]


async def test_each_recorded_shard_refreshes_the_runs_heartbeat(data: Path, tmp_path: Path) -> None:
    """A long sharded run must not look dead (and be taken over by a resume) between flushes."""
    store = tmp_path / "s.duckdb"
    await run_evals(data, scorers(), store=store, shard="0/1", progress=False)
    assert table(
        store,
        "SELECT e.heartbeat_at >= max(s.completed_at) FROM experiments e "
        "JOIN shards_done s ON s.experiment_id = e.id GROUP BY e.heartbeat_at",
    ) == [(True,)]


async def test_a_sharded_experiment_is_not_resumed_in_a_single_process(
    data: Path, tmp_path: Path
) -> None:
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, scorers(), store=store, executor="process", workers=2,
                            progress=False)  # fmt: skip
    crash_after(store, 2)
    with pytest.raises(ConfigError, match="was run sharded: resume it with executor='process'"):
        await run_evals(data, scorers(), store=store, resume=first.experiment_id, progress=False)
    with pytest.raises(
        ConfigError, match=r"re-run its failed pairs with executor='process', retry_errors=True"
    ):
        await run_evals(
            data, scorers(), store=store, resume=first.experiment_id, retry_errors=True,
            progress=False,
        )  # fmt: skip
    assert table(store, "SELECT count(*) FROM shards_done") == [(2,)]  # nothing ran
    assert table(store, "SELECT count(*) FROM experiment_items") == [(2 * GROUP,)]


async def test_a_single_process_experiment_is_not_resumed_sharded(
    data: Path, tmp_path: Path
) -> None:
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, scorers(), store=store, progress=False)
    with duckdb.connect(str(store)) as con:
        con.execute("UPDATE experiments SET status = 'cancelled'")
    with pytest.raises(ConfigError, match="was run in a single process: resume it without"):
        await run_evals(
            data, scorers(), store=store, resume=first.experiment_id, shard="0/1", progress=False
        )
    assert table(store, "SELECT count(*) FROM experiment_items") == [(ROWS,)]


async def test_a_slice_resumes_only_as_the_same_slice(data: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, scorers(), store=store, shard="0/2", progress=False)
    crash_after(store, 1)
    for other in ("1/2", None):
        with pytest.raises(ConfigError, match=r"ran slice 0/2: resume it with shard='0/2'"):
            await run_evals(
                data, scorers(), store=store, resume=first.experiment_id, shard=other,
                executor="local" if other else "process", progress=False,
            )  # fmt: skip
    resumed = await run_evals(
        data, scorers(), store=store, resume=first.experiment_id, shard="0/2", progress=False
    )
    assert resumed.summary.processed == ROWS // 2
    assert table(store, "SELECT list(shard_index ORDER BY shard_index) FROM shards_done") == [
        ([0, 2, 4],)
    ]


async def test_a_sharded_resume_checks_status_and_fingerprint(data: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    first = await run_evals(data, scorers(), store=store, shard="0/1", progress=False)
    ident = first.experiment_id
    with pytest.raises(ConfigError, match="completed_with_errors: nothing to resume"):
        await run_evals(data, scorers(), store=store, resume=ident, shard="0/1", progress=False)
    with duckdb.connect(str(store)) as con:  # a live writer: this process
        con.execute("UPDATE experiments SET status = 'running', writer_pid = ?", [os.getpid()])
    with pytest.raises(ConfigError, match="still running"):
        await run_evals(data, scorers(), store=store, resume=ident, shard="0/1", progress=False)
    crash_after(store, 3)
    exact, picky = scorers()
    versioned = create_scorer("Exact", id="exact", metadata={"version": 2}).generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )
    with pytest.raises(ConfigError, match="scorer 'exact' metadata"):
        await run_evals(data, [versioned, picky], store=store, resume=ident, shard="0/1",
                        progress=False)  # fmt: skip
    for fewer in (False, True):
        with pytest.raises(ConfigError, match="cannot change its scorers"):
            await run_evals(data, [exact], store=store, resume=ident, shard="0/1", force=fewer,
                            progress=False)  # fmt: skip
    resumed = await run_evals(data, [versioned, picky], store=store, resume=ident, shard="0/1",
                              force=True, progress=False)  # fmt: skip
    assert resumed.summary.processed == ROWS
    ((config,),) = table(store, "SELECT config FROM experiments")
    steps = {s["id"]: s["steps"] for s in json.loads(config)["scorers"]}
    # The forced pass's configuration replaced the stored one.
    assert "test_a_sharded_resume_checks" in steps["exact"]["generate_score"]["name"]
    assert json.loads(config)["executor"] == "local"
    assert table(store, "SELECT count(*) FROM shards_done") == [(6,)]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"on_item_complete": print}, "on_item_complete is not available"),
        (
            {"resume": "abc", "retry_errors": True, "regenerate": True},
            "a sharded run .* cannot regenerate them",
        ),
    ],
)
async def test_options_a_sharded_run_cannot_honour_are_refused(
    data: Path, tmp_path: Path, option: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        await run_evals(data, scorers(), store=tmp_path / "s.duckdb", shard="0/1",
                        progress=False, **option)  # fmt: skip
    assert not (tmp_path / "s.duckdb").exists()


async def test_shard_slices_merge_into_one_full_run(data: Path, tmp_path: Path) -> None:
    full = tmp_path / "full.duckdb"
    await run_evals(data, scorers(), store=full, progress=False)
    parts = [tmp_path / "part0.duckdb", tmp_path / "part1.duckdb"]
    for i, part in enumerate(parts):
        await run_evals(data, scorers(), store=part, shard=f"{i}/2", progress=False)
    assert len(scores_of(parts[0])) + len(scores_of(parts[1])) == len(scores_of(full))
    merged = tmp_path / "merged.duckdb"
    (new_id,) = merge_stores(parts, merged)
    assert scores_of(merged, new_id) == scores_of(full)
    assert errors_of(merged) == errors_of(full)
    assert table(merged, "SELECT count(*) FROM experiments") == [(1,)]
    assert table(merged, "SELECT total_items, succeeded_count, failed_count FROM experiments") == [
        (ROWS, ROWS - 24, 24)
    ]
    prefixes = table(merged, "SELECT DISTINCT split_part(run_id, '-', 1) FROM scores")
    assert prefixes == [(new_id,)]


def test_merge_command_reports_missing_slices(data: Path, tmp_path: Path, capsys: Any) -> None:
    import anyio

    part = tmp_path / "part0.duckdb"
    anyio.run(lambda: run_evals(data, scorers(), store=part, shard="0/3", progress=False))
    code = main(["merge", str(part), "--store", str(tmp_path / "m.duckdb")])
    assert code != 0
    assert "slices 1/3, 2/3 are missing" in capsys.readouterr().err


def exiting_scorer(marker: Path) -> Scorer:
    def die_once(run: Any) -> float:
        # The first worker to reach row 50 (inside shard 1) dies without a word.
        if run.input == "question 50" and not marker.exists():
            marker.write_text("died")
            os._exit(1)
        return 1.0 if run.output == run.ground_truth else 0.0

    return create_scorer("Exact", id="exact").generate_score(die_once)


def test_a_script_without_a_main_guard_is_told_so(data: Path, tmp_path: Path) -> None:
    script = tmp_path / "nightly.py"
    script.write_text(
        "from evalkit import create_scorer, run_evals_sync\n"
        "scorer = create_scorer('One', id='one').generate_score(lambda run: 1.0)\n"
        f"run_evals_sync({str(data)!r}, [scorer], store=None, executor='process', workers=1,"
        " progress=False)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode != 0
    assert "no shard finished" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr


async def test_a_killed_process_worker_is_retried(data: Path, tmp_path: Path) -> None:
    full, store = tmp_path / "full.duckdb", tmp_path / "s.duckdb"
    marker = tmp_path / "died"
    marker.write_text("not yet")  # the reference run in this process must not exit
    await run_evals(data, [exiting_scorer(marker)], store=full, progress=False)
    marker.unlink()
    result = await run_evals(
        data, [exiting_scorer(marker)], store=store, executor="process", workers=2,
        progress=False,
    )  # fmt: skip
    assert marker.read_text() == "died"
    assert scores_of(store) == scores_of(full)
    assert result.summary.processed == ROWS
    assert table(store, "SELECT count(*), count(DISTINCT shard_index) FROM shards_done") == [(6, 6)]


async def test_the_rate_budget_is_shared_by_two_workers(
    data: Path, tmp_path: Path, judge_key: str
) -> None:
    rpm = 1200  # 20 a second for the whole run, whatever the number of workers
    rate = rpm / 60
    async with FakeOpenAIServer() as server:
        judge = Judge(
            "fake-judge", "You grade.", base_url=server.base_url, api_key_env=judge_key,
            rpm=rpm, cache=False, max_retries=1, timeout=60.0,
        )  # fmt: skip
        scorer = create_scorer("Judged", id="judged", judge=judge).generate_score(
            PromptStep("score", lambda run: f"Rate the answer to {run.input}")
        )
        result = await run_evals(
            data, [scorer], store=tmp_path / "s.duckdb", executor="process", workers=2,
            limit=80, progress=False,
        )  # fmt: skip
        arrivals = sorted(server.arrivals)
    assert result.summary.failed == 0
    assert len(arrivals) == 80
    # Each worker may start with its own small burst; past that the sum keeps to the rpm.
    burst = 2 * max(1, int(rate / 2 * 0.25) + 1)
    for width in (1.0, 2.0):
        assert window_max(arrivals, width) <= burst + rate * (width + 0.1)

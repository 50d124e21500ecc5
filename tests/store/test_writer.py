from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import JudgeCost, JudgeUsage, create_scorer, run_evals
from evalkit.target import FunctionTarget
from tests.doubles import ScriptedJudgeStep

from .conftest import held_by_another_process

ROWS = [{"input": f"q{i}", "output": f"a{i}"} for i in range(4)]


def query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


async def test_judge_executions_of_successes_and_failures(store: Path) -> None:
    score_step = ScriptedJudgeStep(
        {"score": 0.75},
        usage=JudgeUsage(
            input_tokens=100, output_tokens=20, total_tokens=120, reasoning_tokens=5,
            cached_input_tokens=40, cache_creation_input_tokens=3,
        ),
        cost=JudgeCost(0.002, "USD", "openrouter"),
    )  # fmt: skip
    reason_step = ScriptedJudgeStep("because", fails=lambda run: run.input == "q2")
    scorer = (
        create_scorer("Judged", id="judged")
        .analyze(score_step)
        .generate_score(lambda results: results.analyze_step_result["score"])
        .generate_reason(reason_step)
    )
    result = await run_evals(ROWS, [scorer], store=store, progress=False)
    assert result.status == "completed_with_errors"
    (failed,) = [o for o in result.results_for("judged") if o.status == "failed"]
    assert failed.score == 0.75
    assert failed.result is not None
    assert failed.result.judge["generate_reason"].executions[0].status == "failed"

    rows = query(
        store,
        "SELECT item_id, scorer_status, step, execution_index, status, judge_model_id,"
        " judge_provider, input_tokens, output_tokens, total_tokens, reasoning_tokens,"
        " cached_input_tokens, cache_creation_input_tokens, cost_amount, cost_unit,"
        " cost_source, error_name, error_message, error_code, raw_output, output, prompt"
        " FROM judge_executions ORDER BY item_id, step",
    )
    assert len(rows) == 8  # 4 analyze + 4 generate_reason, one of them failed
    ids = {r.item.input: r.item.id for r in result.items}
    analyze = [r for r in rows if r[2] == "analyze"]
    assert {r[4] for r in analyze} == {"success"}
    assert analyze[0][5:16] == (
        "gpt-4o-mini", "openai", 100, 20, 120, 5, 40, 3, 0.002, "USD", "openrouter",
    )  # fmt: skip
    assert json.loads(analyze[0][20]) == {"score": 0.75}
    reason_failed = [r for r in rows if r[2] == "generate_reason" and r[4] == "failed"]
    assert len(reason_failed) == 1
    failed_row = reason_failed[0]
    assert failed_row[0] == ids["q2"]
    assert failed_row[1] == "failed"
    assert failed_row[7:16] == (None,) * 9  # no usage received, no cost
    assert failed_row[16:20] == ("JudgeError", "HTTP 502 from judge", "502", "<html>502</html>")
    assert failed_row[20] is None
    assert failed_row[21] == "generate_reason for Judged: q2"
    # The analyze execution of the failed run is stored too, from error.result.judge.
    assert [r[1] for r in analyze if r[0] == ids["q2"]] == ["failed"]
    prompts = query(
        store,
        f"SELECT analyze_prompt, generate_reason_prompt FROM scores WHERE item_id = '{ids['q1']}'",
    )
    assert prompts == [("analyze for Judged: q1", "generate_reason for Judged: q1")]


async def test_secrets_are_redacted_from_the_stored_config(store: Path) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"

    class App(FunctionTarget):
        def describe(self) -> dict[str, Any]:
            return {
                **super().describe(),
                "api_key": secret,
                "base_url": "https://user:hunter2@llm.example.com/v1",
                "api_key_env": "OPENAI_API_KEY",
                "max_tokens": 256,
            }

    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    result = await run_evals(
        [{"input": "q"}],
        [scorer],
        target=App(lambda q: q),
        store=store,
        progress=False,
        metadata={"owner": "qa-team", "token": "ghp_abcdefghijklmnopqrstuvwxyz", "note": secret},
    )
    ((config, metadata),) = query(store, "SELECT config, metadata FROM experiments")
    for text in (config, metadata, json.dumps(result.config)):
        assert secret not in text
        assert "hunter2" not in text
        assert "ghp_" not in text
    target = json.loads(config)["target"]
    assert target["api_key"] == "[REDACTED]"
    assert target["base_url"] == "https://user:[REDACTED]@llm.example.com/v1"
    assert (target["api_key_env"], target["max_tokens"]) == ("OPENAI_API_KEY", 256)
    stored_metadata = json.loads(metadata)
    assert stored_metadata == {"owner": "qa-team", "token": "[REDACTED]", "note": "[REDACTED]"}


async def test_config_describes_the_run(store: Path) -> None:
    def my_step(run: Any) -> float:
        return 1.0

    scorer = create_scorer("Mine", description="checks things").generate_score(my_step)
    await run_evals(
        [{"input": "q", "output": "a"}],
        [scorer],
        store=store,
        progress=False,
        concurrency=3,
        thresholds={"mine": 0.5},
    )
    ((config,),) = query(store, "SELECT config FROM experiments")
    data = json.loads(config)
    assert data["concurrency"] == 3
    assert data["target"] == {"type": "dataset"}
    assert data["thresholds"] == {"mine": {"min": 0.5}}
    (described,) = data["scorers"]
    assert (described["id"], described["description"]) == ("mine", "checks things")
    assert described["steps"]["generate_score"]["name"].endswith("<locals>.my_step")
    assert data["dataset"]["columns"] == {"input": "input", "output": "output"}
    assert query(
        store, "SELECT scorer_id, scorer_name, position, threshold_min FROM experiment_scorers"
    ) == [("mine", "Mine", 0, 0.5)]


@pytest.mark.parametrize("flush_interval", [0.001, 2.0])
async def test_flushes_write_whole_items(store: Path, flush_interval: float) -> None:
    rows = [{"input": f"q{i}", "output": "a"} for i in range(60)]
    scorers = [create_scorer(f"S{k}").generate_score(lambda run: 1.0) for k in range(3)]
    await run_evals(rows, scorers, store=store, progress=False, flush_interval=flush_interval)
    assert query(store, "SELECT count(*), count(DISTINCT item_id) FROM scores") == [(180, 60)]
    assert query(store, "SELECT count(*) FROM experiment_items") == [(60,)]
    assert query(store, "SELECT succeeded_count FROM experiments") == [(60,)]


_READER = """
import json, sys
from evalkit.store._connect import open_connection
con = open_connection(sys.argv[1], read_only=True, lock_timeout=20)
print(json.dumps(con.execute(
    "SELECT status, succeeded_count, (SELECT count(*) FROM scores) FROM experiments"
).fetchone()))
con.close()
"""


async def test_another_process_reads_a_running_experiment(store: Path) -> None:
    import subprocess
    import sys

    import anyio

    seen: list[str] = []

    async def app(question: str) -> str:
        await anyio.sleep(0.005)
        return question

    def peek(result: Any) -> None:
        if result.item.index == 60:
            reader = subprocess.run(
                [sys.executable, "-c", _READER, str(store)],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            )
            seen.append(reader.stdout.strip())

    rows = [{"input": f"q{i}"} for i in range(80)]
    scorer = create_scorer("One").generate_score(lambda run: 1.0)
    await run_evals(
        rows,
        [scorer],
        target=app,
        store=store,
        concurrency=1,
        progress=False,
        flush_interval=0.05,
        on_item_complete=peek,
    )
    (line,) = seen
    status, succeeded, scored = json.loads(line)
    assert status == "running"
    assert 0 < succeeded <= 61  # items 0..60 are done when item 60 is reported
    assert scored == succeeded
    assert query(store, "SELECT status, succeeded_count FROM experiments") == [("completed", 80)]


async def test_writes_through_a_connection_this_process_already_holds(store: Path) -> None:
    held = duckdb.connect(str(store))
    try:
        scorer = create_scorer("One").generate_score(lambda run: 1.0)
        result = await run_evals(ROWS, [scorer], store=store, progress=False)
        assert result.status == "completed"
        assert held.execute("SELECT count(*) FROM scores").fetchone() == (4,)
    finally:
        held.close()


def test_writer_memory_limit_grows_with_the_batch() -> None:
    from evalkit.store._writer import writer_config

    assert writer_config(0)["memory_limit"] == "256MB"
    assert writer_config(100 * 2**20)["memory_limit"] == "600MB"
    assert writer_config(0)["threads"] == "1"


_WRITER = """
import sys
from evalkit import create_scorer, run_evals_sync
rows = [{"input": f"q{i}", "output": f"a{i}"} for i in range(300)]
scorer = create_scorer("One", id="one").generate_score(lambda run: 1.0)
run_evals_sync(rows, [scorer], store=sys.argv[1], experiment=sys.argv[2], progress=False,
               flush_interval=0.01, concurrency=1)
"""


def test_two_processes_writing_one_store_take_turns(store: Path) -> None:
    # Each flush opens the file only for its transaction: two runs wait for each other's
    # lock and both land whole.
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(store), name])
        for name in ("first", "second")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert query(store, "SELECT name, status, succeeded_count FROM experiments ORDER BY name") == [
        ("first", "completed", 300),
        ("second", "completed", 300),
    ]
    assert query(
        store,
        "SELECT count(*), count(DISTINCT (experiment_id, item_id)) FROM scores",
    ) == [(600, 600)]


def test_a_writer_gives_up_on_a_store_held_open_by_another_process(store: Path) -> None:
    from evalkit import StoreError
    from evalkit.store._writer import ExperimentRecord, StoreWriter

    record = ExperimentRecord(
        "e1", "n", None, "<rows>", {}, None, 1, dt.datetime.now(dt.UTC), "test"
    )
    with (
        held_by_another_process(store),
        pytest.raises(StoreError, match=r"locked by another process \(waited 0\.3 s"),
    ):
        StoreWriter(store, lock_timeout=0.3).begin(record, [])
    StoreWriter(store, lock_timeout=60).begin(record, [])
    assert query(store, "SELECT id, status FROM experiments") == [("e1", "running")]


def _items(count: int, scorers: tuple[str, ...]) -> list[Any]:
    from evalkit.dataset import Item
    from evalkit.run import ItemResult, ScorerOutcome
    from evalkit.scorer import ScorerRunResult

    items = []
    for n in range(count):
        item = Item(f"q{n}", f"in {n}", f"out {n}", index=n)
        outcomes = tuple(
            ScorerOutcome.success(
                item.id,
                scorer,
                ScorerRunResult(f"r{n}", n % 2, None, item.input, f"out {n}", None, None),
                ("generate_score",),
                0.5,
            )
            for scorer in scorers
        )
        items.append(
            ItemResult(item, f"r{n}", "success", f"out {n}", "dataset", None, outcomes, 0, 1, 0)
        )
    return items


def test_a_flush_appends_small_row_groups(store: Path) -> None:
    # Each flush's checkpoint recompresses the partly filled last row group: the writer keeps
    # it small (WRITE_ROW_GROUP_SIZE) rather than DuckDB's 122,880 rows.
    from evalkit.run._rows import RowBuffer
    from evalkit.store._connect import WRITE_ROW_GROUP_SIZE
    from evalkit.store._writer import ExperimentRecord, ScorerRecord, StoreWriter

    scorers = ("a", "b")
    writer = StoreWriter(store)
    record = ExperimentRecord("e1", "n", None, "<rows>", {}, None, 1, dt.datetime.now(dt.UTC), "t")
    writer.begin(record, [ScorerRecord(s, s, "", i) for i, s in enumerate(scorers)])
    buffer = RowBuffer("e1", {s: s for s in scorers})
    for result in _items(WRITE_ROW_GROUP_SIZE // 2 + 100, scorers):
        buffer.add(result)
    writer.write(buffer)
    with duckdb.connect(str(store), read_only=True) as con:
        sizes = con.execute(
            "SELECT row_group_id, max(count) FROM pragma_storage_info('scores')"
            " GROUP BY row_group_id ORDER BY row_group_id"
        ).fetchall()
        assert con.execute("SELECT count(*) FROM scores").fetchall() == [
            (2 * (WRITE_ROW_GROUP_SIZE // 2 + 100),)
        ]
    assert [n for _, n in sizes] == [WRITE_ROW_GROUP_SIZE, 200]


class _ItemsBatch:
    """A batch built without the run: one ``experiment_items`` row as an Arrow table."""

    succeeded = 1
    failed = 0

    def tables(self) -> dict[str, Any]:
        import pyarrow as pa

        from evalkit.store._arrow import ARROW_SCHEMAS

        schema = ARROW_SCHEMAS["experiment_items"]
        row = {
            "experiment_id": "e1", "item_id": "q0", "item_index": 0, "run_id": "e1-0",
            "status": "success", "source": "dataset", "scorers_succeeded": 0,
            "scorers_failed": 0, "completed_at": dt.datetime(2024, 1, 1),
        }  # fmt: skip
        return {"experiment_items": pa.Table.from_pylist([row], schema=schema)}


def test_the_writer_takes_arrow_tables_from_any_batch(store: Path) -> None:
    from evalkit import StoreError
    from evalkit.store._writer import ExperimentRecord, StoreWriter

    writer = StoreWriter(store)
    with pytest.raises(StoreError, match=r"write\(\) called before begin\(\)"):
        writer.write(_ItemsBatch())
    record = ExperimentRecord("e1", "n", None, "<rows>", {}, None, 1, dt.datetime.now(dt.UTC), "t")
    writer.begin(record, [])
    writer.write(_ItemsBatch())
    assert query(store, "SELECT item_id, status, output FROM experiment_items") == [
        ("q0", "success", None)
    ]
    assert query(store, "SELECT succeeded_count, failed_count FROM experiments") == [(1, 0)]


def checkpoints(store: Path) -> int:
    """How many checkpoints the DuckDB file has been through: each of its two database headers
    (the blocks after the 4 KiB main header) starts, after its 8-byte checksum, with the
    iteration the checkpoint that wrote it reached."""
    head = store.read_bytes()[: 3 * 4096]
    return max(int.from_bytes(head[at + 8 : at + 16], "little") for at in (4096, 8192))


@pytest.mark.parametrize("flush_interval", [2.0, 0.001])
async def test_the_last_batch_and_the_verdict_are_written_with_the_outcome(
    store: Path, flush_interval: float
) -> None:
    """A run's last batch, its outcome and its verdict on its own gates share one open of
    the store and one checkpoint (issue 31 item 6: a small run wrote them in three, each
    closed by a checkpoint with its fsyncs, 15-40 ms each on the 2-core machine). Its rows,
    its end and its verdict are there as before."""
    rows = [{"input": f"q{i}", "output": "a" if i % 4 else "b"} for i in range(40)]
    scorer = create_scorer("One", id="one").generate_score(
        lambda run: 1.0 if run.output == "a" else 0.0
    )
    result = await run_evals(
        rows, [scorer], store=store, progress=False, flush_interval=flush_interval,
        thresholds={"one": 0.9},
    )  # fmt: skip
    assert query(
        store, "SELECT status, succeeded_count, failed_count, verdict FROM experiments"
    ) == [("completed", 40, 0, "failed")]
    assert query(store, "SELECT scorer_id, passed, mean, threshold_min FROM scorer_gates") == [
        ("one", False, 0.75, 0.9)
    ]
    assert query(store, "SELECT count(*) FROM scores") == [(40,)]
    if flush_interval == 2.0:
        # The new store with the run's row (begin); its rows with its outcome and verdict.
        assert checkpoints(store) == 2
    # A later run into the same store: the same two blocks, one checkpoint each.
    before = checkpoints(store)
    again = await run_evals(rows, [scorer], store=store, progress=False)
    assert again.status == "completed"
    assert result.experiment_id != again.experiment_id
    assert checkpoints(store) - before == 2
    assert query(store, f"SELECT verdict FROM experiments WHERE id = '{again.experiment_id}'") == [
        ("passed",)
    ]

"""The progress bar: one visible line whatever the experiment is called."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import create_scorer
from evalkit.run import run_evals
from evalkit.run._progress import Progress


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("nightly", "nightly"),
        ("red\x1b[31mrun", "red\\x1b[31mrun"),
        ("two\nlines\tand\u202eover", "two\\nlines\\tand\\u202eover"),
    ],
)
async def test_the_experiment_name_is_shown_on_one_visible_line(
    name: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = Progress(3, name=name, enabled=True)
    bar.item_done(False)
    bar.close()
    text = err.getvalue()
    assert shown in text
    assert "\x1b[31m" not in text
    assert "\n" not in text.strip("\r\n")


def test_the_bar_is_fed_from_a_thread_without_an_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A sharded run's driver counts finished shards' items in a worker thread: no event loop
    # runs there, so no rate limiter of this process can be shown (they live in the workers).
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = Progress(2, name="sharded", enabled=True)
    bar.item_done(True)
    bar.item_done(False)
    bar.close()
    assert "failures=1" in err.getvalue()
    assert "2/2" in err.getvalue()


async def test_a_sharded_run_shows_its_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"input": f"q{i}", "output": "a", "groundTruth": "a"} for i in range(20)]
    data = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data, row_group_size=5)
    exact = create_scorer("Exact", id="exact").generate_score(
        lambda run: float(run.output == run.ground_truth)
    )
    result = await run_evals(data, [exact], store=tmp_path / "s.duckdb", shard="0/1", progress=True)
    assert result.status == "completed"
    assert "20/20" in capsys.readouterr().err

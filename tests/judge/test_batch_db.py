"""The batch journal's tables in the judge cache file."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from evalkit import JudgeCache
from evalkit.judge import _batch_db


def test_the_journal_forgets_old_and_finished_batches(tmp_path: Path) -> None:
    path = tmp_path / "cache.duckdb"
    assert JudgeCache(path).batches() == []
    cache = JudgeCache(path)
    cache.open()
    now = time.time()
    with cache._connected() as con:
        for name, age in (("old", 31 * 86400), ("new", 60), ("done", 30)):
            _batch_db.record(
                con,
                batch_id=name,
                host="h",
                model="m",
                input_file_id=f"file-{name}",
                requests=[(name.encode() * 4, f"{name}-1"), (name.encode() * 5, f"{name}-2")],
                now=now - age,
            )
        _batch_db.set_status(con, "done", "completed", now)
        _batch_db.forget(con, ["done"])
        assert {r[1] for r in _batch_db.load(con, "h", "m")} == {"old", "new"}
    cache.close()
    cache.open()  # opening prunes batches older than 30 days
    with cache._connected() as con:
        assert [r[1:] for r in _batch_db.load(con, "h", "m")] == [
            ("new", "new-1", "submitted"),
            ("new", "new-2", "submitted"),
        ]
        assert _batch_db.load(con, "h", "other-model") == []
    cache.close()
    assert [b["batch_id"] for b in JudgeCache(path).batches()] == ["new"]


def test_the_journal_lists_its_batches_with_utc_times(tmp_path: Path) -> None:
    # DuckDB 1.5 hands a TIMESTAMPTZ to Python only with pytz installed, 2.0 in the session's
    # time zone: the listing gives aware UTC datetimes either way.
    path = tmp_path / "cache.duckdb"
    cache = JudgeCache(path)
    cache.open()
    now = time.time()
    with cache._connected() as con:
        _batch_db.record(
            con, batch_id="b", host="h", model="m", input_file_id="file-b",
            requests=[(b"b" * 4, "b-1")], now=now - 60,
        )  # fmt: skip
        _batch_db.set_status(con, "b", "completed", now)
    cache.close()
    [batch] = JudgeCache(path).batches()
    assert batch["created_at"] == datetime.fromtimestamp(round(now - 60, 6), UTC)
    assert batch["updated_at"] == datetime.fromtimestamp(round(now, 6), UTC)
    assert batch["created_at"].tzinfo is UTC

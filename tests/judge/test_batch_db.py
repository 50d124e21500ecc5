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
                endpoint="http://h:80",
                host="h",
                model="m",
                input_file_id=f"file-{name}",
                requests=[(name.encode() * 4, f"{name}-1"), (name.encode() * 5, f"{name}-2")],
                now=now - age,
            )
        _batch_db.set_status(con, "done", "completed", now)
        _batch_db.forget(con, ["done"])
        assert {r[1] for r in _batch_db.load(con, "http://h:80", "h", "m")} == {"old", "new"}
    cache.close()
    cache.open()  # opening prunes batches older than 30 days
    with cache._connected() as con:
        assert [r[1:] for r in _batch_db.load(con, "http://h:80", "h", "m")] == [
            ("new", "new-1", "submitted"),
            ("new", "new-2", "submitted"),
        ]
        assert _batch_db.load(con, "http://h:80", "h", "other-model") == []
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
            con, batch_id="b", endpoint="http://h:80", host="h", model="m", input_file_id="file-b",
            requests=[(b"b" * 4, "b-1")], now=now - 60,
        )  # fmt: skip
        _batch_db.set_status(con, "b", "completed", now)
    cache.close()
    [batch] = JudgeCache(path).batches()
    assert batch["created_at"] == datetime.fromtimestamp(round(now - 60, 6), UTC)
    assert batch["updated_at"] == datetime.fromtimestamp(round(now, 6), UTC)
    assert batch["created_at"].tzinfo is UTC


def test_two_endpoints_on_one_host_keep_their_own_batches(tmp_path: Path) -> None:
    # Keyed on the host alone, a run at one port read the batches of a server at another
    # (issue 29 item 7): the journal is keyed on the whole endpoint.
    path = tmp_path / "cache.duckdb"
    cache = JudgeCache(path)
    cache.open()
    endpoints = {
        "a": "http://127.0.0.1:8000/v1",
        "b": "http://127.0.0.1:8001/v1",
        "c": "http://127.0.0.1:8000/proxy/v1",
    }
    with cache._connected() as con:
        for name, endpoint in endpoints.items():
            _batch_db.record(
                con, batch_id=name, endpoint=endpoint, host="127.0.0.1", model="m",
                input_file_id=f"file-{name}", requests=[(name.encode() * 4, f"{name}-1")],
                now=time.time(),
            )  # fmt: skip
        for name, endpoint in endpoints.items():
            assert [r[1] for r in _batch_db.load(con, endpoint, "127.0.0.1", "m")] == [name]
    cache.close()
    listed = {b["batch_id"]: b["endpoint"] for b in JudgeCache(path).batches()}
    assert listed == endpoints


def test_a_journal_written_before_endpoints_were_kept_still_resumes(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "cache.duckdb"
    with duckdb.connect(str(path)) as con:  # the journal's tables as they were
        con.execute(_batch_db.SCHEMA.split("ALTER TABLE")[0])
        con.execute(
            "INSERT INTO judge_batches VALUES ('old', '127.0.0.1', 'm', 'file-old', 1,"
            " 'submitted', now(), now())"
        )
        con.execute("INSERT INTO judge_batch_requests VALUES ('old', 'hash', 'old-1')")
    cache = JudgeCache(path)
    cache.open()  # gains the endpoint column
    with cache._connected() as con:
        found = _batch_db.load(con, "http://127.0.0.1:8000/v1", "127.0.0.1", "m")
        assert [r[1:] for r in found] == [("old", "old-1", "submitted")]
        assert _batch_db.load(con, "http://10.0.0.1:8000/v1", "10.0.0.1", "m") == []
    cache.close()
    (batch,) = JudgeCache(path).batches()
    assert (batch["batch_id"], batch["endpoint"], batch["host"]) == ("old", None, "127.0.0.1")

"""``evalkit sql`` without ``--write`` reads the store's own tables and views, and nothing else:
no file written, read or attached, no extension installed or loaded, no setting changed back."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from evalkit.judge import JudgeCache, default_cache_path
from tests.cli.conftest import (
    Cli,
    run_cli,
    start_cli,
    wait_for,
    write_dataset,
    write_experiment,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stored run, a judge cache beside the store, another store and a private file."""
    folder = tmp_path_factory.mktemp("sql")
    write_dataset(folder / "data.parquet", wrong=6)
    write_experiment(folder)
    done = run_cli("run", "nightly.toml", "--no-progress", cwd=folder)
    assert done.code == 0, done.stderr
    shutil.copy(folder / "evalkit.duckdb", folder / "other.duckdb")
    cache = JudgeCache(default_cache_path(folder / "evalkit.duckdb"))
    cache.open()
    cache.put(b"step", b"prompt", "reply", attempt_count=1, model="m", host="h", step="analyze")
    cache.close()
    (folder / "private.csv").write_text("token\nsk-not-for-sql\n", encoding="utf-8")
    (folder / "home").mkdir()
    return folder


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a digest of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _sql(cli: Cli, folder: Path, *args: str) -> tuple[int, str, str]:
    # HOME is where DuckDB keeps extensions and persistent secrets: a folder the test sees.
    done = cli("sql", *args, cwd=folder, env_extra={"HOME": str(folder / "home")})
    return done.code, done.stdout, done.stderr


_CACHE = "evalkit-cache.duckdb"

ESCAPES = [
    "COPY (SELECT 1) TO 'written.csv'",
    "COPY scores TO 'written.parquet' (FORMAT parquet)",
    "COPY (SELECT 1) TO 'home/written.csv'",
    "EXPORT DATABASE 'exported'",
    "ATTACH 'other.duckdb' AS other; DELETE FROM other.scores",
    "ATTACH 'other.duckdb' AS other (READ_ONLY)",
    f"ATTACH '{_CACHE}' AS cache; DELETE FROM cache.judge_cache",
    "ATTACH 'fresh.duckdb' AS fresh",
    "ATTACH ':memory:' AS scratch",
    "INSTALL httpfs",
    "INSTALL spatial FROM community",
    "LOAD httpfs",
    "FORCE INSTALL json",
    "SELECT * FROM read_csv('private.csv')",
    "SELECT * FROM read_text('private.csv')",
    "SELECT * FROM 'data.parquet'",
    "SELECT * FROM glob('*')",
    "SELECT * FROM read_csv('https://example.invalid/x.csv')",
    "CREATE PERSISTENT SECRET s (TYPE http, BEARER_TOKEN 'k')",
    "SET enable_external_access = true; COPY (SELECT 1) TO 'written.csv'",
    "RESET enable_external_access; COPY (SELECT 1) TO 'written.csv'",
    "SET GLOBAL enable_external_access = true",
    "SET lock_configuration = false",
    "SET allowed_directories = ['/']; COPY (SELECT 1) TO 'written.csv'",
    "SET allowed_paths = ['private.csv']; SELECT * FROM read_csv('private.csv')",
    "SET autoinstall_known_extensions = true",
    "SET log_query_path = 'written.log'; SELECT 1",
    "DELETE FROM scores",
    "CREATE TABLE t AS SELECT 1",
    "DROP VIEW scorer_summary",
]


@pytest.mark.parametrize("query", ESCAPES)
def test_read_only_sql_refuses_every_escape(cli: Cli, folder: Path, query: str) -> None:
    before = _files(folder)
    code, stdout, stderr = _sql(cli, folder, query)
    assert code == 2, stdout + stderr
    assert "Traceback" not in stderr
    assert "read-only" in stderr, stderr  # says why, and what --write would do
    assert "sk-not-for-sql" not in stdout + stderr
    assert _files(folder) == before  # nothing written, the other stores untouched


def test_read_only_sql_reads_every_table_and_view_of_the_store(cli: Cli, folder: Path) -> None:
    before = _files(folder)
    code, stdout, stderr = _sql(
        cli,
        folder,
        "--format",
        "json",
        "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()"
        " WHERE NOT internal ORDER BY 1",
    )
    assert code == 0, stderr
    names = [row["table_name"] for row in json.loads(stdout)]
    assert {"experiments", "scores", "scorer_errors", "scorer_summary", "judge_usage"} <= set(names)
    for name in names:
        code, stdout, stderr = _sql(
            cli, folder, "--format", "csv", f'SELECT count(*) FROM "{name}"'
        )
        assert code == 0, (name, stderr)
    code, stdout, stderr = _sql(
        cli,
        folder,
        "--format",
        "csv",
        "CREATE TEMP TABLE means AS SELECT scorer_id, avg(score) AS mean FROM scores GROUP BY 1;"
        " CREATE TEMP MACRO pct(x) AS round(100 * x);"
        " SELECT scorer_id, pct(mean) AS pct, json_extract_string(config, '$.name') IS NULL AS j"
        " FROM means, experiments ORDER BY 1",
    )
    assert code == 0, stderr
    assert stdout.splitlines() == ["scorer_id,pct,j", "exact,90.0,True", "token_f1,90.0,True"]
    assert _files(folder) == before


@pytest.mark.parametrize("form", ["table", "csv", "json"])
def test_timestamps_with_time_zone_read_in_every_format(cli: Cli, folder: Path, form: str) -> None:
    # DuckDB before 2.0 turns a TIMESTAMPTZ into Python through pytz: without it every query
    # of experiments.started_at, now() or a lake's snapshots failed (the ducklake extra pins 1.5).
    code, stdout, stderr = _sql(
        cli, folder, "--format", form, "SELECT now() AS t, started_at FROM experiments"
    )
    assert code == 0, stderr
    assert "started_at" in stdout
    assert str(time.gmtime().tm_year) in stdout


def test_write_lifts_the_limits(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    done = cli("sql", "--write", "COPY (SELECT count(*) AS n FROM scores) TO 'n.csv'")
    assert done.code == 0, done.stderr
    assert (tmp_path / "n.csv").read_text().split() == ["n", "120"]


def test_sql_help_says_what_read_only_allows(cli: Cli) -> None:
    done = cli("sql", "--help")
    assert done.code == 0
    text = " ".join(done.stdout.split())
    for needle in ("read-only", "tables and views", "COPY", "ATTACH", "INSTALL", "--write"):
        assert needle in text, text


def _has_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                return True
        except OSError:
            continue  # closed meanwhile
    return False


def _cpu_ticks(pid: int) -> int:
    """CPU time (user + system, in clock ticks) spent so far by all threads of ``pid``."""
    ticks = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        ticks += int(fields[11]) + int(fields[12])
    return ticks


def test_ctrl_c_during_a_slow_query_is_an_interruption_not_a_traceback(folder: Path) -> None:
    # DuckDB answers a SIGINT that lands inside a query with RuntimeError("Query interrupted"),
    # not KeyboardInterrupt: the command line must still say "interrupted" and exit 130.
    slow = "SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3"
    proc = start_cli("sql", slow, cwd=folder)
    try:
        # The query runs for minutes; the signal must land inside it, not in the interpreter's
        # start-up (a fixed 2 s wait was shorter than a loaded machine's start-up): wait until
        # the process has the store open and has then spent 0.3 s of CPU, all of it querying.
        wait_for(lambda: _has_open(proc.pid, folder / "evalkit.duckdb"), "the store open", proc,
                 timeout=120)  # fmt: skip
        ticks = _cpu_ticks(proc.pid) + round(0.3 * os.sysconf("SC_CLK_TCK"))
        wait_for(lambda: _cpu_ticks(proc.pid) >= ticks, "0.3 s of querying", proc, timeout=120)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.strip() == "evalkit: interrupted", err

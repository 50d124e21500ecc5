"""A DuckLake store whose data path fills up or turns read-only under a run (issue 30, item 2).

The data path is a real small file system: a 1 MB tmpfs mounted on a folder of the test, filled
to the last byte by a ballast file (writes fail with ENOSPC, "No space left on device") or
remounted read-only (EROFS, "Read-only file system"); the ballast deleted or the mount made
writable again is the disk freed. Mounting needs root with CAP_SYS_ADMIN (a CI container's
root has it; the tests skip, saying so, elsewhere). Cheaper stand-ins were tried and dropped:
permission bits do not stop root, and RLIMIT_FSIZE fails every large file of the process, the
recovery folder's included, so it cannot tell a full data path from a full machine. No
evalkit code is patched. The catalog is a SQLite file beside the test's folder (its recovery
folder too), except where the recovery folder is to be on the full disk as well: there it is
a PostgreSQL server of the test's own, whose recovery folder is the run's working folder.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing, has_extension
from evalkit._proc import this_host
from evalkit.store import connection
from evalkit.store._lake import prepare_store
from evalkit.store._recovery import recovery_dir
from tests.cli.conftest import Cli, write_dataset
from tests.postgres import PostgresServer

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

ROWS = 1_500  # one flush of more than STAGE_MIN_ROWS: its tables are staged as Parquet files
STORE = "ducklake:sqlite:team/catalog.sqlite"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs mounted on ``tmp_path / "data"``, unmounted afterwards."""
    disk = tmp_path / "data"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def experiments(folder: Path, store: str = STORE) -> None:
    """Two experiments on a lake whose data path is ``folder / "data"``: ``first`` (a few
    rows, run first, so the lake's tables and folders exist) and ``big``."""
    write_dataset(folder / "small.parquet", rows=5)
    write_dataset(folder / "big.parquet", rows=ROWS)
    for name, data in (("first", "small.parquet"), ("big", "big.parquet")):
        (folder / f"{name}.toml").write_text(
            f"""
[experiment]
name = "{name}"
dataset = "{data}"
store = "{store}"
store_data_path = "data"
concurrency = 4

[[scorers]]
use = "exact_match"
""",
            encoding="utf-8",
        )


def lake_with_runs(folder: Path, cli: Cli, store: str = STORE) -> None:
    """:func:`experiments`, and ``first`` run."""
    experiments(folder, store)
    first = cli("run", "first.toml", "--no-progress", cwd=folder)
    assert first.code == 0, first.stderr


def fill(disk: Path) -> Path:
    """Write a ballast file until ``disk`` refuses another byte."""
    ballast = disk / "ballast"
    with ballast.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass
    return ballast


def staged_files(disk: Path) -> list[Path]:
    return sorted(disk.rglob("evalkit-*.parquet"))


def big_run(store: str) -> tuple[str, tuple[object, ...], tuple[object, ...]]:
    """The ``big`` experiment's id, (status, counts) and its scores (rows, items)."""
    with connection(store, read_only=True, private=True) as con:
        row = con.execute(
            "SELECT id, status, succeeded_count, failed_count FROM experiments WHERE name = 'big'"
        ).fetchone()
        assert row is not None
        scores = con.execute(
            "SELECT count(*), count(DISTINCT item_id) FROM scores WHERE experiment_id = ?",
            [row[0]],
        ).fetchone()
        assert scores is not None
    return row[0], tuple(row[1:]), tuple(scores)


def registered_files(store: str) -> set[str]:
    """The names of the data files the lake's catalog holds."""
    with connection(store, read_only=True, private=True) as con:
        paths = con.execute(
            "SELECT path FROM __ducklake_metadata_evalkit_lake.ducklake_data_file"
        ).fetchall()
    return {str(p[0]).rsplit("/", 1)[-1] for p in paths}


@pytest.mark.long(seconds=10)
def test_a_full_data_path_spills_the_rows_leaves_no_staged_files_and_resume_loads_them(
    tmp_path: Path, cli: Cli, cli_process: Cli, small_disk: Path
) -> None:
    lake_with_runs(tmp_path, cli)
    store = f"ducklake:sqlite:{tmp_path / 'team' / 'catalog.sqlite'}"
    recovery = recovery_dir(store)
    ballast = fill(small_disk)

    # In a process of its own: its run must read as interrupted once it has ended.
    done = cli_process("run", "big.toml", "--no-progress", "--lock-timeout", "1")
    assert done.code == 2, done.stderr
    # Each failed attempt's part-written Parquet file was deleted (2 MB were left before).
    assert staged_files(small_disk) == []
    assert "No space left on device" in done.stderr
    assert "cannot write the DuckLake store's data files there" in done.stderr
    assert str(small_disk) in done.stderr  # the data path named
    assert str(recovery) in done.stderr
    assert "Traceback" not in done.stderr
    assert list(recovery.glob("*/*.batch/scores.arrow")), "the rows were not spilled"

    experiment_id, status, _ = big_run(store)
    assert status[0] == "running"
    # A file a writer of the experiment left (killed as it wrote it): the resume deletes it.
    leftover = small_disk / "main" / "scores" / f"experiment_id={experiment_id}"
    ballast.unlink()  # the disk freed
    leftover.mkdir(parents=True, exist_ok=True)
    (leftover / "evalkit-0123456789abcdef0123456789abcdef.parquet").write_bytes(b"PAR1" * 64)

    resumed = cli("run", "big.toml", "--no-progress", "--resume")
    assert resumed.code == 0, resumed.stderr
    assert not recovery.exists()
    assert big_run(store)[1:] == (("completed", ROWS, 0), (ROWS, ROWS))
    known = registered_files(store)
    assert [f.name for f in staged_files(small_disk) if f.name not in known] == []


def test_a_read_only_data_path_is_named_with_its_cause_and_the_rows_are_kept(
    tmp_path: Path, cli: Cli, small_disk: Path
) -> None:
    experiments(tmp_path)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    # A new lake: its tables' folders cannot be made ("No such file or directory" before).
    new = cli("run", "first.toml", "--no-progress")
    assert new.code == 2, new.stderr
    assert "Read-only file system" in new.stderr
    assert "No such file or directory" not in new.stderr
    assert f"data path: {small_disk}" in new.stderr
    assert "Traceback" not in new.stderr

    # A lake made while it was writable: a flush's files cannot be written, its rows kept.
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    first = cli("run", "first.toml", "--no-progress")
    assert first.code == 0, first.stderr
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    recovery = recovery_dir(f"ducklake:sqlite:{tmp_path / 'team' / 'catalog.sqlite'}")
    done = cli("run", "big.toml", "--no-progress", "--lock-timeout", "1")
    assert done.code == 2, done.stderr
    assert "(Read-only file system)" in done.stderr
    assert str(small_disk) in done.stderr
    assert str(recovery) in done.stderr
    assert list(recovery.glob("*/*.batch/scores.arrow")), "the rows were not spilled"
    assert "Traceback" not in done.stderr
    assert staged_files(small_disk) == []


@pytest.mark.skipif(not has_extension("postgres_scanner"), reason="no postgres extension")
def test_rows_that_cannot_be_spilled_either_are_named_and_run_again_by_resume(
    cli: Cli, cli_process: Cli, small_disk: Path, postgres_own: PostgresServer
) -> None:
    # The run's folder is on the full disk: a PostgreSQL catalog's recovery folder is there.
    store = f"ducklake:postgres:{postgres_own.dsn}"
    prepare_store(store, data_path=small_disk / "data")
    lake_with_runs(small_disk, cli, store)
    ballast = fill(small_disk)

    done = cli_process("run", "big.toml", "--no-progress", "--lock-timeout", "1", cwd=small_disk)
    assert done.code == 2, done.stderr
    assert "could not be kept in" in done.stderr
    assert "No space left on device" in done.stderr
    assert "evalkit run --resume" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(small_disk.rglob("*.tmp")) == []  # no half-written batch
    assert staged_files(small_disk) == []

    ballast.unlink()
    resumed = cli("run", "big.toml", "--no-progress", "--resume", cwd=small_disk)
    assert resumed.code == 0, resumed.stderr
    assert big_run(store)[1:] == (("completed", ROWS, 0), (ROWS, ROWS))


@pytest.mark.parametrize("writer", ["dead here", "another host"])
def test_a_resume_deletes_the_staged_files_only_of_a_writer_known_to_be_gone(
    tmp_path: Path, cli: Cli, writer: str
) -> None:
    # A writer of another host cannot be checked: taken over with --force, it may still be
    # about to commit the files it staged, so they stay; a dead writer's files go.
    lake_with_runs(tmp_path, cli)
    store = f"ducklake:sqlite:{tmp_path / 'team' / 'catalog.sqlite'}"
    ended = subprocess.Popen(["true"])  # its pid: a writer of this host known to be gone
    ended.wait()
    host, pid = ("elsewhere", 4242) if writer == "another host" else (this_host(), ended.pid)
    with connection(store) as con:
        [(experiment_id,)] = con.execute(
            "SELECT id FROM experiments WHERE name = 'first'"
        ).fetchall()
        con.execute(
            "UPDATE experiments SET status = 'running', writer_host = ?, writer_pid = ?"
            " WHERE id = ?",
            [host, pid, experiment_id],
        )
    folder = tmp_path / "data" / "main" / "scores" / f"experiment_id={experiment_id}"
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder / "evalkit-0123456789abcdef0123456789abcdef.parquet"
    staged.write_bytes(b"PAR1" * 64)

    resumed = cli("run", "first.toml", "--no-progress", "--resume", experiment_id, "--force")
    assert resumed.code == 0, resumed.stderr
    assert staged.exists() == (writer == "another host")

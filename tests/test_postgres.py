"""The throwaway PostgreSQL server of ``tests/postgres.py`` serves as a DuckLake catalog: two
processes writing at once both land their rows."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.postgres import PostgresServer

# The extension packages (duckdb-extension-<package>) and the name DuckDB loads each under.
EXTENSIONS = {"ducklake": "ducklake", "postgres": "postgres_scanner"}

WRITER = """
import sys, duckdb
paths, dsn, data, writer, rows = sys.argv[1].split(","), sys.argv[2], sys.argv[3], sys.argv[4], \
    int(sys.argv[5])
con = duckdb.connect(config={"autoinstall_known_extensions": False,
                             "autoload_known_extensions": False})
for path in paths:
    con.execute(f"LOAD '{path}'")
con.execute(f"ATTACH 'ducklake:postgres:{dsn}' AS lake (DATA_PATH '{data}')")
print("ready", flush=True)
sys.stdin.readline()
for start in range(0, rows, 100):
    con.execute(
        "INSERT INTO lake.scores SELECT ?, i FROM range(?, ?) t(i)", [writer, start, start + 100]
    )
print("done", flush=True)
"""


def extension_files(folder: Path) -> list[Path]:
    """The extension files of the installed packages, named as DuckDB loads them; skips the
    test when a package for this DuckDB version is missing."""
    files = []
    for package, name in EXTENSIONS.items():
        try:
            module = importlib.import_module(f"duckdb_extension_{package}")
        except ImportError:
            pytest.skip(f"duckdb-extension-{package} is not installed (the ducklake extra)")
        found = list(
            Path(module.__path__[0]).glob(f"extensions/v{duckdb.__version__}/*.duckdb_extension")
        )
        if not found:
            pytest.skip(f"duckdb-extension-{package} has no build for DuckDB {duckdb.__version__}")
        files.append(folder / f"{name}.duckdb_extension")
        shutil.copyfile(found[0], files[-1])
    return files


def connect(files: list[Path]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for path in files:
        con.execute(f"LOAD '{path}'")
    return con


def test_ducklake_catalog_in_the_test_server_takes_two_writers_at_once(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    files = extension_files(tmp_path)
    data = tmp_path / "lake"
    assert "password" not in postgres.dsn
    with connect(files) as con:
        con.execute(f"ATTACH 'ducklake:postgres:{postgres.dsn}' AS lake (DATA_PATH '{data}')")
        con.execute("CREATE TABLE lake.scores (writer VARCHAR, n BIGINT)")
    rows = 2_000
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                ",".join(map(str, files)),
                postgres.dsn,
                str(data),
                name,
                str(rows),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for proc in writers:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "ready", proc.communicate(timeout=30)
    # Both attached: let them write at the same time.
    for proc in writers:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in writers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    with connect(files) as con:
        con.execute(
            f"ATTACH 'ducklake:postgres:{postgres.dsn}' AS lake (DATA_PATH '{data}', READ_ONLY)"
        )
        counts = con.execute(
            "SELECT writer, count(*), count(DISTINCT n) FROM lake.scores GROUP BY writer"
            " ORDER BY writer"
        ).fetchall()
        commits = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()
    assert counts == [("a", rows, rows), ("b", rows, rows)]
    # One snapshot a transaction: every insert of both writers was committed on its own.
    assert commits is not None
    assert commits[0] >= 2 * rows // 100


def test_the_test_server_takes_the_password_from_the_environment_only(
    postgres: PostgresServer,
) -> None:
    psql = shutil.which("psql") or str(postgres.bin_dir / "psql")
    asked = subprocess.run(
        [psql, postgres.dsn, "-tAc", "SELECT current_user, current_database()"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert asked.stdout.split() == [f"{postgres.user}|{postgres.dbname}"]
    refused = subprocess.run(
        [psql, postgres.dsn, "-w", "-tAc", "SELECT 1"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PGPASSWORD": "wrong"},
        check=False,
    )
    assert refused.returncode != 0
    assert "password authentication failed" in refused.stderr

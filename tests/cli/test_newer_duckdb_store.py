"""Every command that opens a store refuses one in a newer DuckDB's storage format with the
same clear error: both DuckDB releases and the command that fixes it, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.cli.conftest import Cli, run_cli_process
from tests.store.test_storage_version import STORE_DUCKDB_2_RUN, older_duckdb, unpack_store_duckdb_2

ROOT = Path(__file__).parents[2]
RUN = STORE_DUCKDB_2_RUN

pytestmark = older_duckdb

COMMANDS = {
    "run": ("run", str(ROOT / "experiments" / "quickstart.toml"), "--store", "evalkit.duckdb",
            "--no-progress", "--report-dir", "reports"),
    "experiments": ("experiments",),
    "show": ("show", RUN),
    "sql": ("sql", "SELECT count(*) FROM scores"),
    "sql --write": ("sql", "--write", "SELECT count(*) FROM scores"),
    "compare": ("compare", RUN, RUN),
    "diff": ("diff", RUN, RUN),
    "export": ("export", RUN, "--output", "run.csv"),
    "baseline": ("baseline", "pin", RUN),
    "store copy": ("store", "copy", "evalkit.duckdb", "copy.duckdb"),
}  # fmt: skip


def _assert_refused(code: int, stderr: str) -> None:
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert "evalkit.duckdb: cannot open the score store" in stderr
    assert "DuckDB 2.0's storage format" in stderr
    assert "created by DuckDB 2.0.1" in stderr
    assert f"installed DuckDB {duckdb.__version__}" in stderr
    assert "pip install 'duckdb>=2.0'" in stderr
    assert "evalkit store copy evalkit.duckdb NEW.duckdb" in stderr


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_command_refuses_a_store_of_a_newer_duckdb(
    cli: Cli, tmp_path: Path, command: tuple[str, ...]
) -> None:
    store = unpack_store_duckdb_2(tmp_path)
    before = store.read_bytes()
    done = cli(*command)
    _assert_refused(done.code, done.stderr)
    assert store.read_bytes() == before


def test_a_judge_cache_of_a_newer_duckdb_is_refused_naming_both(cli: Cli, tmp_path: Path) -> None:
    unpack_store_duckdb_2(tmp_path).rename(tmp_path / "cache.duckdb")
    done = cli("cache", "stats", "--cache", "cache.duckdb")
    assert done.code == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "judge cache cache.duckdb: cannot open it: it is in DuckDB 2.0's storage" in done.stderr
    assert f"installed DuckDB {duckdb.__version__} cannot read" in done.stderr
    assert "pip install 'duckdb>=2.0'" in done.stderr
    assert "store copy" not in done.stderr  # a cache holds no runs


def test_view_refuses_it_before_serving(tmp_path: Path) -> None:
    # A process: a viewer that started serving would not return.
    unpack_store_duckdb_2(tmp_path)
    done = run_cli_process("view", "--no-browser", "--port", "0", cwd=tmp_path)
    _assert_refused(done.code, done.stderr)
    assert "serving" not in done.stdout

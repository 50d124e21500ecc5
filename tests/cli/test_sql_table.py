"""``evalkit sql``'s table: values as their text (dates, UUIDs, JSON strings unquoted), and no
cell cut that the terminal has room for."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import tty
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, run_cli, write_dataset, write_experiment

ERROR = "RuntimeError: the judge at http://127.0.0.1:9/v1 refused the call: " + "x" * 110


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sql-table")
    write_dataset(folder / "data.parquet", rows=3)
    write_experiment(folder)
    done = run_cli("run", "nightly.toml", "--no-progress", cwd=folder)
    assert done.code == 0, done.stderr
    return folder


def test_the_table_prints_dates_uuids_and_json_strings_unquoted(cli: Cli, folder: Path) -> None:
    done = cli(
        "sql",
        "SELECT DATE '2026-01-02' AS day, TIME '10:11:12' AS at,"
        " UUID '6b7c0a52-8a5e-4e0f-9d3b-1f2e3d4c5b6a' AS u, 1.50::DECIMAL(4, 2) AS amount,"
        " input, ground_truth, 'say \"hi\"' AS said, '{\"a\": [1]}'::JSON AS nested"
        " FROM scores WHERE item_id = 'q001' AND scorer_id = 'exact'",
        cwd=folder,
    )
    assert done.code == 0, done.stderr
    row = done.stdout.splitlines()[2].split("  ")
    cells = [c.strip() for c in row if c.strip()]
    assert cells == [
        "2026-01-02",
        "10:11:12",
        "6b7c0a52-8a5e-4e0f-9d3b-1f2e3d4c5b6a",
        "1.50",
        "What is 1 + 1?",
        "2",
        'say "hi"',  # a string's own quotes are kept
        '{"a": [1]}',  # nested JSON stays JSON
    ]


def test_a_long_error_message_is_not_cut_into_a_pipe(cli: Cli, folder: Path) -> None:
    done = cli("sql", f"SELECT 'q001' AS item_id, '{ERROR}' AS error_message", cwd=folder)
    assert done.code == 0, done.stderr
    assert ERROR in done.stdout
    assert "…" not in done.stdout


def _on_a_terminal(args: list[str], cwd: Path, *, columns: int) -> str:
    """What the CLI showed on a pseudo-terminal ``columns`` wide."""
    leader, follower = os.openpty()
    tty.setraw(follower)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with subprocess.Popen(
        [sys.executable, "-m", "evalkit", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    ) as proc:
        os.close(follower)
        shown = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 120)
            assert ready, "the CLI wrote nothing for 120 s"
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the CLI has closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        assert proc.wait(timeout=120) == 0, shown
    os.close(leader)
    return shown.decode("utf-8")


def test_on_a_terminal_a_message_is_cut_only_when_the_terminal_has_no_room(folder: Path) -> None:
    query = f"SELECT 'q001' AS item_id, '{ERROR}' || chr(27) || '[2J' AS error_message"
    wide = _on_a_terminal(["sql", query], folder, columns=250)
    assert ERROR + "\\x1b[2J" in wide  # whole, and the escape still shown as an escape
    assert "\x1b" not in wide
    narrow = _on_a_terminal(["sql", query], folder, columns=80)
    lines = narrow.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[2].startswith("q001")
    assert lines[2].endswith("…")
    assert ERROR[:60] in lines[2]  # cut to the room there is, not to a fixed 60
    assert "\x1b" not in narrow

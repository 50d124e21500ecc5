"""``evalkit sql --format csv|json`` streams the result in batches: memory stays flat however
many rows the query gives (issue 30 item 8), and the text is what it was when the whole result
was fetched first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evalkit.cli._format import csv_text, json_text, records
from tests.cli.conftest import Cli

# Run in a process of its own: the command line under an address-space cap (0: none), then
# the process's peak virtual memory on stderr.
_CAPPED = """
import resource, runpy, sys
cap = int(sys.argv[1])
if cap:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
sys.argv = ["evalkit", *sys.argv[2:]]
try:
    runpy.run_module("evalkit", run_name="__main__")
finally:
    with open("/proc/self/status") as status:
        peak = next(line for line in status if line.startswith("VmPeak:"))
    print("peak_kb", peak.split()[1], file=sys.__stderr__)
"""

# 60 MB of text, four copies of which did not fit beside the imports.
_ROWS = 60_000
_LARGE = f"SELECT range AS n, repeat('x', 1000) AS text FROM range({_ROWS})"
_MB = 1 << 20


def _capped(folder: Path, cap: int, fmt: str, query: str) -> tuple[int, int, str]:
    """Run ``evalkit sql`` under ``cap`` bytes of address space; returns the exit code, the
    peak virtual memory (bytes) and what it printed (read through a pipe, not a file)."""
    # One malloc arena: glibc's per-thread arenas reserve 64 MB of address space each, which
    # is address space DuckDB's threads would take, not memory the command holds.
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _CAPPED, str(cap), "sql", "--format", fmt, query],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    peak = [line for line in done.stderr.splitlines() if line.startswith("peak_kb ")]
    assert peak, done.stderr[-2000:]
    return done.returncode, int(peak[-1].split()[1]) * 1024, done.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_large_result_prints_in_flat_memory(tmp_path: Path, fmt: str) -> None:
    # The cap is what a one-row query peaks at plus 150 MB: 60 MB of result fetched whole
    # (rows, then the text, then its encoding) needed about 250 MB more and failed.
    duckdb.connect(str(tmp_path / "evalkit.duckdb")).close()
    code, baseline, _ = _capped(tmp_path, 0, fmt, "SELECT 1 AS n")
    assert code == 0
    code, _, out = _capped(tmp_path, baseline + 150 * _MB, fmt, _LARGE)
    assert code == 0, out[-2000:]
    if fmt == "csv":
        lines = out.splitlines()
        assert lines[0] == "n,text"
        assert lines[1:] == [f"{n},{'x' * 1000}" for n in range(_ROWS)]
    else:
        assert json.loads(out) == [{"n": n, "text": "x" * 1000} for n in range(_ROWS)]


_MIXED = """
    SELECT range AS n, 'é' || chr(8238) || chr(1) || ',"q"' || chr(10) AS text,
           {'a': [1, NULL]} AS nested, '{"k": [1, 2]}'::JSON AS j, NULL AS none,
           1.5::DECIMAL(4, 2) AS d, DATE '2026-01-02' AS day, [] AS empty, MAP {'k': 1} AS m,
           'nan'::DOUBLE AS nan, 1e308 AS big
    FROM range(2500)
"""


@pytest.mark.parametrize(
    "query",
    [
        _MIXED,
        "SELECT 1 AS n WHERE false",
        "SELECT 1 AS n",
        "CREATE TEMP TABLE t (n INT)",
        'SELECT range AS "a\nb", 2 AS c FROM range(2)',
    ],
    ids=["mixed-2500-rows", "no-rows", "one-row", "no-columns", "a-newline-in-a-name"],
)
def test_the_text_is_what_fetching_the_whole_result_printed(
    cli: Cli, tmp_path: Path, query: str
) -> None:
    with duckdb.connect() as con:
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    duckdb.connect(str(tmp_path / "evalkit.duckdb")).close()
    done = cli("sql", "--format", "csv", query)
    assert done.code == 0, done.stderr
    assert done.stdout == csv_text(columns, rows)
    done = cli("sql", "--format", "json", query)
    assert done.code == 0, done.stderr
    assert done.stdout == json_text(records(columns, rows)) + "\n"

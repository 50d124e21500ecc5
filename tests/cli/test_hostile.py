"""Hostile content in a dataset (terminal escapes, NUL, bidi overrides) through the real CLI:
the run records it as data, and nothing the CLI prints or writes carries it raw."""

from __future__ import annotations

import csv
import io
import json
import os
import select
import subprocess
import sys
import tty
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from evalkit.judge import JudgeCache
from tests.cli.conftest import Cli, run_cli, write_dataset, write_experiment

HOSTILE = "\x1b[2J\x1b[31mpwned\x07 \u202etxt.exe\x00"
UNSAFE = ("\x1b", "\x07", "\u202e", "\x00")


def test_hostile_dataset_content_never_reaches_the_terminal_or_reports_raw(
    cli: Cli, tmp_path: Path
) -> None:
    pd.DataFrame(
        {
            "id": [f"id-{HOSTILE}", "plain"],
            "input": [HOSTILE, "q"],
            "groundTruth": ["a", "a"],
            "output": [HOSTILE, "a"],
        }
    ).to_parquet(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    outputs = [
        cli("run", "nightly.toml", "--no-progress"),
        cli("show", "latest"),
        cli("sql", "SELECT item_id, output, error_message FROM scores FULL JOIN scorer_errors "
            "USING (item_id, scorer_id)"),
        cli("sql", "SELECT * FROM experiment_items"),
    ]  # fmt: skip
    for done in outputs:
        assert "Traceback" not in done.stderr, done.stderr
        for ch in UNSAFE:
            assert ch not in done.stdout + done.stderr
    assert "\\x1b[2J" in outputs[3].stdout  # shown, as an escape
    reports = list((tmp_path / "reports").iterdir())
    assert {p.suffix for p in reports} >= {".html", ".md", ".xml"}
    for path in reports:
        text = path.read_text(encoding="utf-8")
        assert not any(ch in text for ch in UNSAFE), path
        if path.suffix == ".xml":
            ET.fromstring(text)


# -- Hostile names, descriptions and reasons: every terminal path ------------------------------

NAME = "evil<script>\x1b[31m"
DESCRIPTION = "\x1b[2J first line\nsecond \u202eline\x9b \u061c"
REASON = "\x1b[2J\x1b[31mPWNED\u202e"  # what a judge could write as its reason
SHOWN_UNSAFE = (*UNSAFE, "\x9b", "\u061c")

EVIL_SCORER = f"""
from evalkit import create_scorer

scorer = (
    create_scorer("Evil", id="evil")
    .generate_score(lambda: 1.0)
    .generate_reason(lambda: {REASON!r})
)
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with two stored runs of an experiment whose name, description and reasons
    are hostile (the tests only read it)."""
    folder = tmp_path_factory.mktemp("hostile")
    write_dataset(folder / "data.parquet", rows=5)
    (folder / "evil.py").write_text(EVIL_SCORER, encoding="utf-8")
    (folder / "evil.toml").write_text(
        f"""
[experiment]
name = {json.dumps(NAME)}
description = {json.dumps(DESCRIPTION)}
dataset = "data.parquet"
store = "evalkit.duckdb"

[[scorers]]
use = "exact_match"

[[scorers]]
use = "evil:scorer"
""",
        encoding="utf-8",
    )
    for extra in ([], ["--json"]):
        done = run_cli("run", "evil.toml", "--no-progress", *extra, cwd=folder)
        assert done.code == 0, done.stderr
        assert not [ch for ch in SHOWN_UNSAFE if ch in done.stdout + done.stderr], done.stdout
    return folder


_ROW = "SELECT name, description, reason FROM experiments JOIN scores"
_ROW += " ON scores.experiment_id = experiments.id WHERE scorer_id = 'evil' LIMIT 1"


def test_show_compare_experiments_and_tables_escape_hostile_names_and_reasons(
    cli: Cli, hostile: Path
) -> None:
    ids = [row["id"] for row in json.loads(cli("experiments", "--json", cwd=hostile).stdout)]
    outputs = {
        "show": cli("show", "latest", cwd=hostile),
        "show --json": cli("show", "latest", "--json", cwd=hostile),
        "compare": cli("compare", ids[1], ids[0], cwd=hostile),
        "compare --json": cli("compare", ids[1], ids[0], "--json", cwd=hostile),
        "experiments": cli("experiments", cwd=hostile),
        "experiments --json": cli("experiments", "--json", cwd=hostile),
        "sql": cli("sql", _ROW, cwd=hostile),
    }
    for command, done in outputs.items():
        assert done.code == 0, (command, done.stderr)
        shown = done.stdout + done.stderr
        assert not [ch for ch in SHOWN_UNSAFE if ch in shown], (command, shown)
    show = outputs["show"].stdout
    assert "evil<script>\\x1b[31m" in show
    assert "\\x1b[2J first line second \\u202eline\\x9b \\u061c" in show  # on one line
    assert "evil<script>\\x1b[31m" in outputs["compare"].stdout.splitlines()[0]
    assert "\\x1b[2J\\x1b[31mPWNED\\u202e" in outputs["sql"].stdout
    # JSON keeps the exact text: the escapes are JSON's own.
    assert json.loads(outputs["show --json"].stdout)["description"] == DESCRIPTION


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a pseudo-terminal; its code and what it showed."""
    leader, follower = os.openpty()
    tty.setraw(follower)  # no newline translation: the bytes read are the bytes written
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
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
        code = proc.wait(timeout=120)
    os.close(leader)
    return code, shown.decode("utf-8")


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_sql_escapes_hostile_text_on_a_terminal_in_every_format(hostile: Path, fmt: str) -> None:
    code, shown = _on_a_terminal(["sql", "--format", fmt, _ROW], hostile)
    assert code == 0, shown
    assert "PWNED" in shown
    assert not [ch for ch in SHOWN_UNSAFE if ch in shown], shown
    code, shown = _on_a_terminal(["show", "latest"], hostile)
    assert code == 0, shown
    assert "evil<script>\\x1b[31m" in shown
    assert not [ch for ch in SHOWN_UNSAFE if ch in shown], shown


def test_sql_csv_and_json_into_a_pipe_keep_the_exact_text(cli: Cli, hostile: Path) -> None:
    as_csv = cli("sql", "--format", "csv", _ROW, cwd=hostile)
    assert as_csv.code == 0, as_csv.stderr
    assert list(csv.reader(io.StringIO(as_csv.stdout))) == [
        ["name", "description", "reason"],
        [NAME, DESCRIPTION, REASON],
    ]
    as_json = cli("sql", "--format", "json", _ROW, cwd=hostile)
    assert as_json.code == 0, as_json.stderr
    # Unsafe characters are JSON escapes (\u001b, \u202e): the same value, safe to print.
    assert not [ch for ch in SHOWN_UNSAFE if ch in as_json.stdout], as_json.stdout
    assert json.loads(as_json.stdout) == [
        {"name": NAME, "description": DESCRIPTION, "reason": REASON}
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["sql", "SELECT CAST('\x1b[2J\u202e' AS INTEGER)"],  # DuckDB echoes the query
        ["show", "latest", "--store", "\x1b[2J\u202e.duckdb"],
        ["sql", "SELECT 1", "--store", "\x1b]0;title\x07.duckdb"],
    ],
)
def test_error_messages_escape_hostile_text(cli: Cli, hostile: Path, args: list[str]) -> None:
    done = cli(*args, cwd=hostile)
    assert done.code == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "\\x1b" in done.stderr
    assert not [ch for ch in SHOWN_UNSAFE if ch in done.stderr], done.stderr


def test_cache_stats_escape_a_hostile_judge_model(cli: Cli, tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "judge.cache.duckdb")
    cache.open()
    cache.put(b"s", b"p", "reply", attempt_count=1, model=REASON, host="h", step="analyze")
    cache.close()
    for args in ([], ["--json"]):
        done = cli("cache", "stats", "--cache", "judge.cache.duckdb", *args)
        assert done.code == 0, done.stderr
        assert "PWNED" in done.stdout
        assert not [ch for ch in SHOWN_UNSAFE if ch in done.stdout], done.stdout

"""Hostile content in a dataset (terminal escapes, NUL, bidi overrides) through the real CLI:
the run records it as data, and nothing the CLI prints or writes carries it raw."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from tests.cli.conftest import Cli, write_experiment

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

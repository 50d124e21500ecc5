"""``evalkit run`` on datasets in other formats, with ``[experiment.columns]`` and metadata."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.cli.conftest import Cli, write_experiment

ROWS = [
    {
        "key": f"q{i:02d}",
        "question": f"What is {i} + {i}?",
        "answer": f"{2 * i} units",
        "reply": f"{2 * i} units" if i % 4 else "no idea",
        "category": ["math", "geo"][i % 2],
        "lang": "en",
    }
    for i in range(20)
]

COLUMNS = """
[experiment.columns]
id = "key"
input = "question"
ground_truth = "answer"
output = "reply"
metadata = ["category", "lang"]
"""


def _write(folder: Path, kind: str) -> str:
    """The dataset in ``kind``'s format; returns the experiment file's dataset lines."""
    if kind == "csv":
        header = ",".join(ROWS[0])
        lines = "".join(",".join(row.values()) + "\n" for row in ROWS)
        (folder / "qa.csv").write_text(header + "\n" + lines, encoding="utf-8")
        return 'dataset = "qa.csv"'
    if kind == "jsonl":
        (folder / "qa.data").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
        return 'dataset = "qa.data"\nformat = "jsonl"'
    (folder / "rows.json").write_text(json.dumps(ROWS), encoding="utf-8")
    with duckdb.connect(str(folder / "qa.duckdb")) as con:
        con.execute(f"create table qa as select * from read_json('{folder / 'rows.json'}')")
    return 'dataset = "qa.duckdb"\nquery = "select * from qa order by key"'


@pytest.mark.parametrize("kind", ["csv", "jsonl", "query"])
def test_a_mapped_dataset_runs_and_stores_metadata(cli: Cli, tmp_path: Path, kind: str) -> None:
    lines = _write(tmp_path, kind)
    path = write_experiment(tmp_path, dataset="PLACEHOLDER")
    text = path.read_text().replace('dataset = "PLACEHOLDER"', lines)
    path.write_text(text.replace("concurrency = 4\n", "concurrency = 4\n" + COLUMNS, 1))
    done = cli("run", path.name, "--no-progress")
    assert done.code == 0, done.stderr
    assert "Traceback" not in done.stderr
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "select i.item_id, i.metadata->>'category', i.metadata->>'lang', s.score "
            "from experiment_items i join scores s using (experiment_id, item_id) "
            "where s.scorer_id = 'exact' order by i.item_id"
        ).fetchall()
    assert rows == [
        (r["key"], r["category"], "en", 1.0 if r["reply"] == r["answer"] else 0.0) for r in ROWS
    ]


def test_a_querys_relative_files_are_found_beside_the_experiment_file(
    cli: Cli, tmp_path: Path
) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "rows.json").write_text(json.dumps(ROWS), encoding="utf-8")
    path = write_experiment(folder, dataset="PLACEHOLDER")
    query = 'query = """\nselect * from read_json(\'rows.json\')\norder by key\n"""'
    text = path.read_text().replace('dataset = "PLACEHOLDER"', query)
    path.write_text(text.replace("concurrency = 4\n", "concurrency = 4\n" + COLUMNS, 1))
    done = cli("run", "exp/nightly.toml", "--no-progress", cwd=tmp_path)
    assert done.code == 0, done.stderr
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        (dataset,) = con.execute("select dataset from experiments").fetchall()[0]
        (items,) = con.execute("select count(*) from experiment_items").fetchall()[0]
    assert dataset == "select * from read_json('rows.json') order by key"
    assert items == len(ROWS)


def test_a_dataset_that_cannot_be_read_creates_no_run(cli: Cli, tmp_path: Path) -> None:
    # A cell past the type DuckDB inferred from the first 20,480 rows fails while the rows
    # stream: `evalkit run` used to leave an empty `failed` run in the store (issue 30).
    rows = "".join(f"q{i},{i},{i}\n" for i in range(25_000))
    (tmp_path / "late.csv").write_text("input,groundTruth,output\n" + rows + "qx,1,not a number\n")
    (tmp_path / "good.csv").write_text("input,groundTruth,output\nq,1,1\n")
    write_experiment(tmp_path, name="good", dataset="good.csv")
    assert cli("run", "good.toml", "--no-progress").code == 0
    write_experiment(tmp_path, name="late", dataset="late.csv")
    done = cli("run", "late.toml", "--no-progress")
    assert done.code == 2, done.stderr
    assert "late.csv, line 25002, column 'output'" in done.stderr
    assert "Traceback" not in done.stderr
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("select name, status from experiments").fetchall() == [
            ("good", "completed")
        ]

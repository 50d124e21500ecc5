"""Every dataset source: the same items give the same ids, scores and fingerprint in any format.

Parquet (file, folder, glob), CSV, TSV, JSON Lines, JSON, a DuckDB query (over files and over
a ``.duckdb`` file) and Hugging Face datasets (a ``save_to_disk`` folder and the object) hold
the same 1,000 QA rows here; each is read, evaluated into a real DuckDB store, and compared.
"""

from __future__ import annotations

import csv
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import ConfigError, DatasetError, create_scorer, run_evals_sync
from evalkit.dataset import DuckDBSource, load_dataset, open_source
from evalkit.dataset._open import FORMATS, format_of

COLUMNS = ("id", "input", "groundTruth", "output", "category", "lang")


def qa_rows(n: int = 1000) -> list[dict[str, str]]:
    """Short QA text; no empty cells and nothing that looks like a number or a date."""
    return [
        {
            "id": f"q-{i:04d}",
            "input": f'Question {i}: what is the capital of country {i}? (use "quotes", commas)',
            "groundTruth": f"City {i % 37}",
            "output": f"City {i % 37}" if i % 3 else f"The answer is city {i % 41}.",
            "category": ["geo", "math", "code"][i % 3],
            "lang": ["en", "fr"][i % 2],
        }
        for i in range(n)
    ]


def _csv(path: Path, rows: list[dict[str, str]], delimiter: str = ",") -> Path:
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


HF_REASON = "the optional 'datasets' library (evalkit-runner[hf]) is not installed"
# Imported by name: to mypy, `import datasets` is this repository's datasets/ folder of
# sample files (a namespace package), not Hugging Face's library that Python imports.
datasets: ModuleType | None
try:
    datasets = importlib.import_module("datasets")
except ImportError:  # the Hugging Face cases are left out; the other formats still run
    datasets = None


def _hf_saved(path: Path, rows: list[dict[str, str]]) -> Path:
    assert datasets is not None
    datasets.disable_progress_bars()
    datasets.Dataset.from_list(rows).save_to_disk(str(path))
    return path


def write_all(tmp_path: Path, rows: list[dict[str, str]]) -> dict[str, Callable[[], Any]]:
    """Each format's dataset, as a callable giving what ``load_dataset`` takes."""
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, tmp_path / "qa.parquet")
    (tmp_path / "parts").mkdir()
    for k in range(4):
        pq.write_table(table.slice(k * 250, 250), tmp_path / "parts" / f"part-{k}.parquet")
    _csv(tmp_path / "qa.csv", rows)
    _csv(tmp_path / "qa.tsv", rows, delimiter="\t")
    _jsonl(tmp_path / "qa.jsonl", rows)
    (tmp_path / "qa.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    db = tmp_path / "qa.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"create table qa as select * from read_parquet('{tmp_path / 'qa.parquet'}')")
    made: dict[str, Callable[[], Any]] = {
        "parquet": lambda: tmp_path / "qa.parquet",
        "parquet folder": lambda: tmp_path / "parts",
        "parquet glob": lambda: str(tmp_path / "parts" / "part-*.parquet"),
        "csv": lambda: tmp_path / "qa.csv",
        "tsv": lambda: tmp_path / "qa.tsv",
        "jsonl": lambda: tmp_path / "qa.jsonl",
        "json": lambda: tmp_path / "qa.json",
        "query": lambda: open_source(
            query=f"select * from read_parquet('{tmp_path / 'parts'}/*.parquet') order by id"
        ),
        "duckdb file": lambda: open_source(db, query="select * from qa"),
        "arrow": lambda: table,
        "list of dicts": lambda: rows,
    }
    if datasets is not None:
        hf = _hf_saved(tmp_path / "qa_hf", rows)
        made["hf folder"] = lambda: hf
        load_from_disk = datasets.load_from_disk
        made["hf object"] = lambda: load_from_disk(str(hf))
    return made


@pytest.fixture(scope="module")
def formats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[], Any]]:
    return write_all(tmp_path_factory.mktemp("formats"), qa_rows())


def contains() -> Any:
    return create_scorer("contains").generate_score(
        lambda run: 1.0 if run.ground_truth.lower() in run.output.lower() else 0.0
    )


def test_every_format_gives_the_same_items_and_fingerprint(
    formats: dict[str, Callable[[], Any]],
) -> None:
    rows = qa_rows()
    seen: dict[str, str] = {}
    for name, make in formats.items():
        dataset = load_dataset(make(), columns={"metadata": ["category", "lang"]})
        got = list(dataset)
        assert len(got) == dataset.num_rows == 1000, name
        assert [i.id for i in got] == [r["id"] for r in rows], name
        assert [i.input for i in got] == [r["input"] for r in rows], name
        assert [i.ground_truth for i in got] == [r["groundTruth"] for r in rows], name
        assert [i.metadata for i in got] == [
            {"category": r["category"], "lang": r["lang"]} for r in rows
        ], name
        assert all(i.extra is None for i in got), name
        seen[name] = dataset.fingerprint()
        # Stable: a second read, and a fresh load, give the same fingerprint.
        assert dataset.fingerprint() == seen[name], name
        assert (
            load_dataset(make(), columns={"metadata": ["category", "lang"]}).fingerprint()
            == (seen[name])
        ), name
    # Identical content gives an identical fingerprint whatever the format (it hashes values).
    assert len(set(seen.values())) == 1, seen


def test_every_format_stores_identical_scores(
    formats: dict[str, Callable[[], Any]], tmp_path: Path
) -> None:
    store = tmp_path / "scores.duckdb"
    runs: dict[str, str] = {}
    for name in ("parquet", "csv", "jsonl", "json", "query", "hf folder"):
        if name not in formats:
            continue  # see HF_REASON
        result = run_evals_sync(
            formats[name](),
            [contains()],
            store=store,
            experiment=f"fmt-{name}",
            progress=False,
            columns={"metadata": ["category", "lang"]},
        )
        assert result.status == "completed", name
        runs[name] = result.experiment_id
    with duckdb.connect(str(store), read_only=True) as con:
        stored = {
            name: con.execute(
                "select s.item_id, s.score, i.metadata->>'category' from scores s join "
                "experiment_items i on i.experiment_id = s.experiment_id and i.item_id = s.item_id "
                "where s.experiment_id = ? order by s.item_id",
                [run],
            ).fetchall()
            for name, run in runs.items()
        }
        by_category = con.execute(
            "select metadata->>'category', count(*) from experiment_items where experiment_id = ?"
            " group by 1 order by 1",
            [runs["csv"]],
        ).fetchall()
    first = stored["parquet"]
    assert len(first) == 1000
    assert {name: rows == first for name, rows in stored.items()} == dict.fromkeys(stored, True)
    assert by_category == [("code", 333), ("geo", 334), ("math", 333)]


def test_nested_json_values_arrive_as_written(tmp_path: Path) -> None:
    rows = [
        {
            "input": "book a table",
            "tools": [{"name": "book", "arguments": {"people": 2}}],
            "messages": [{"role": "user", "content": "hi"}],
            "score": 1,
            "mixed": 3,
        },
        {
            "input": "cancel",
            "tools": [],
            "messages": [{"role": "assistant", "content": "ok", "refusal": None}],
            "score": 0.5,
            "mixed": "three",
        },
    ]
    for path in (_jsonl(tmp_path / "n.jsonl", rows), tmp_path / "n.json"):
        if path.suffix == ".json":
            path.write_text(json.dumps(rows), encoding="utf-8")
        got = list(load_dataset(path))
        assert [dict(i.extra or {}) for i in got] == [
            {k: v for k, v in r.items() if k != "input"} for r in rows
        ], path


def test_json_text_that_looks_like_a_date_stays_text(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [{"input": "q", "when": "2024-01-31"}])
    assert next(iter(load_dataset(path))).extra == {"when": "2024-01-31"}


def test_csv_types_are_duckdbs_inference(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("input,n,ok,note\nq1,1,true,\nq2,2,false,x\n", encoding="utf-8")
    got = list(load_dataset(path))
    assert [dict(i.extra or {}) for i in got] == [
        {"n": 1, "ok": True, "note": None},
        {"n": 2, "ok": False, "note": "x"},
    ]


def test_format_is_explicit_or_by_suffix(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "rows.txt", [{"input": "q"}])
    assert format_of(data) == "parquet"
    with pytest.raises(DatasetError, match="cannot read as Parquet"):
        load_dataset(data)
    assert [i.input for i in load_dataset(data, format="jsonl")] == ["q"]
    assert format_of(tmp_path / "x.ndjson") == "jsonl"
    assert format_of(tmp_path / "x.TSV") == "tsv"
    with pytest.raises(ConfigError, match="format must be one of"):
        load_dataset(data, format="xlsx")
    assert "xlsx" not in FORMATS


def test_query_on_a_database_file_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "qa.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("create table qa as select 'q' as input")
    with pytest.raises(DatasetError) as info:
        load_dataset(db, query="delete from qa returning *")
    assert str(db) in str(info.value)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from qa").fetchall() == [(1,)]
    with pytest.raises(DatasetError, match="needs a query"):
        load_dataset(db)


def test_query_errors_name_the_query(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no_such_table") as info:
        load_dataset(None, query="select * from no_such_table")
    assert info.value.source == "select * from no_such_table"
    assert "\n" not in str(info.value)
    with pytest.raises(DatasetError, match="missing the required column"):
        load_dataset(None, query="select 1 as question")


def test_query_id_column_is_checked_for_repeats() -> None:
    with pytest.raises(DatasetError, match="'a' appears more than once"):
        load_dataset(None, query="select * from (values ('a', 'q1'), ('a', 'q2')) t(id, input)")
    with pytest.raises(DatasetError, match="id is null"):
        load_dataset(None, query="select * from (values (null, 'q1')) t(id, input)")


def test_hf_dataset_order_after_shuffle_is_kept(tmp_path: Path) -> None:
    if datasets is None:
        pytest.skip(HF_REASON)
    data = datasets.Dataset.from_list([{"input": f"q{i}"} for i in range(100)]).shuffle(seed=3)
    assert [i.input for i in load_dataset(data, batch_size=7)] == list(data["input"])


def test_hf_dataset_dict_folder_points_at_a_split(tmp_path: Path) -> None:
    if datasets is None:
        pytest.skip(HF_REASON)
    datasets.disable_progress_bars()
    split = datasets.Dataset.from_list([{"input": "q"}])
    datasets.DatasetDict({"train": split}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(DatasetError, match="one split's folder") as info:
        load_dataset(tmp_path / "dd")
    assert str(tmp_path / "dd" / "train") in str(info.value)
    assert [i.input for i in load_dataset(tmp_path / "dd" / "train")] == ["q"]


def test_a_source_object_is_read_through_the_protocol(tmp_path: Path) -> None:
    source = open_source(_csv(tmp_path / "qa.csv", qa_rows(5)))
    assert [i.id for i in load_dataset(source)] == [f"q-{i:04d}" for i in range(5)]


def test_metadata_columns_join_a_metadata_dict_and_are_checked() -> None:
    rows = [{"input": "q", "metadata": {"source": "web"}, "lang": "en", "other": 1}]
    item = next(iter(load_dataset(rows, columns={"metadata": ["lang"]})))
    assert item.metadata == {"source": "web", "lang": "en"}
    assert item.extra == {"other": 1}
    with pytest.raises(DatasetError, match="listed in 'metadata'") as info:
        load_dataset(rows, columns={"metadata": ["nope"]})
    assert info.value.column == "nope"
    with pytest.raises(DatasetError, match="also plays a role"):
        load_dataset(rows, columns={"metadata": ["input"]})
    with pytest.raises(ConfigError, match="non-empty list"):
        load_dataset(rows, columns={"metadata": []})
    with pytest.raises(DatasetError, match="not a dict"):
        list(
            load_dataset(
                [{"input": "q", "metadata": "x", "lang": "en"}], columns={"metadata": ["lang"]}
            )
        )


def test_query_never_installs_an_extension_from_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A remote file: httpfs comes from its installed package, never from DuckDB's repository.
    query = "select * from read_csv('http://127.0.0.1:9/x.csv')"
    # DuckDB installs an extension it fetches under ~/.duckdb/extensions: a home of its own
    # shows whether anything was fetched (it made the folder before failing, offline).
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(DatasetError) as caught:
        open_source(query=query).num_rows  # noqa: B018 (the count runs the query)
    assert "install" not in str(caught.value)
    assert query in str(caught.value)
    assert not (tmp_path / ".duckdb").exists()


def test_a_duckdb_source_never_installs_an_extension_from_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The base of the CSV, JSON and query sources, public on its own: its default connection
    # is offline too.
    select = "select * from read_csv('http://127.0.0.1:9/x.csv')"
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(DatasetError) as caught:
        DuckDBSource(select, select)
    assert "install" not in str(caught.value)
    assert not (tmp_path / ".duckdb").exists()

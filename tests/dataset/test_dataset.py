from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import ConfigError, DatasetError, Item, load_dataset

ROWS: list[dict[str, Any]] = [
    {"input": "What is 2+2?", "groundTruth": "4", "output": "4"},
    {"input": "Capital of France?", "groundTruth": "Paris", "output": "Lyon"},
    {"input": "Largest planet?", "groundTruth": "Jupiter", "output": "Jupiter"},
]


def write(path: Path, rows: list[dict[str, Any]] | pa.Table) -> Path:
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows)
    pq.write_table(table, path)
    return path


def items(data: Any, **options: Any) -> list[Item]:
    return list(load_dataset(data, **options))


@pytest.mark.parametrize("column", ["groundTruth", "ground_truth"])
def test_ground_truth_in_either_spelling(tmp_path: Path, column: str) -> None:
    rows = [{"input": r["input"], column: r["groundTruth"]} for r in ROWS]
    got = items(write(tmp_path / "qa.parquet", rows))
    assert [i.ground_truth for i in got] == ["4", "Paris", "Jupiter"]
    assert [i.input for i in got] == [r["input"] for r in ROWS]
    assert [i.index for i in got] == [0, 1, 2]


@pytest.mark.parametrize("column", ["requestContext", "request_context"])
def test_request_context_in_either_spelling(tmp_path: Path, column: str) -> None:
    path = write(tmp_path / "qa.parquet", [{"input": "q", column: {"user": "ada"}}])
    assert items(path)[0].request_context == {"user": "ada"}


def test_both_spellings_is_an_error_naming_the_column(tmp_path: Path) -> None:
    path = write(tmp_path / "qa.parquet", [{"input": "q", "groundTruth": "a", "ground_truth": "a"}])
    with pytest.raises(DatasetError, match="groundTruth") as info:
        load_dataset(path)
    assert info.value.source == str(path)
    assert info.value.column == "groundTruth"


def test_missing_input_names_file_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "qa.parquet", [{"question": "q", "groundTruth": "a"}])
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert (info.value.source, info.value.column) == (str(path), "input")
    assert "qa.parquet" in str(info.value)
    assert "'question'" in str(info.value)


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"this is not parquet at all")
    with pytest.raises(DatasetError, match=r"broken\.parquet") as info:
        load_dataset(path)
    assert info.value.source == str(path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(tmp_path / "nope.parquet")


def test_folder_reads_every_file_in_path_order(tmp_path: Path) -> None:
    write(tmp_path / "b.parquet", ROWS[2:])
    write(tmp_path / "a.parquet", ROWS[:2])
    (tmp_path / "notes.txt").write_text("ignored")
    dataset = load_dataset(tmp_path)
    assert dataset.num_rows == 3
    assert [i.input for i in dataset] == [r["input"] for r in ROWS]
    assert [i.index for i in dataset] == [0, 1, 2]


def test_folder_with_differing_columns_names_the_file(tmp_path: Path) -> None:
    write(tmp_path / "a.parquet", ROWS[:1])
    odd = write(tmp_path / "b.parquet", [{"input": "q", "groundTruth": "a"}])
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path)
    assert info.value.source == str(odd)
    assert info.value.column == "output"


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no \.parquet files"):
        load_dataset(tmp_path)


def test_dataframe_list_table_and_parquet_agree(tmp_path: Path) -> None:
    from_parquet = items(write(tmp_path / "qa.parquet", ROWS))
    from_frame = items(pd.DataFrame(ROWS))
    from_list = items(ROWS)
    from_table = items(pa.Table.from_pylist(ROWS))
    assert from_parquet == from_frame == from_list == from_table
    fingerprints = {
        load_dataset(d).fingerprint()
        for d in (tmp_path / "qa.parquet", pd.DataFrame(ROWS), ROWS, pa.Table.from_pylist(ROWS))
    }
    assert len(fingerprints) == 1


def test_ids_are_stable_across_runs_reorderings_and_outputs() -> None:
    first = {i.input: i.id for i in items(ROWS)}
    again = {i.input: i.id for i in items(ROWS)}
    reordered = {i.input: i.id for i in items(list(reversed(ROWS)))}
    new_outputs = {i.input: i.id for i in items([{**r, "output": "changed"} for r in ROWS])}
    assert first == again == reordered == new_outputs
    assert len(set(first.values())) == 3
    assert all(len(v) == 16 and int(v, 16) >= 0 for v in first.values())


def test_ids_change_with_input_or_ground_truth() -> None:
    base = items([{"input": "q", "groundTruth": "a"}])[0].id
    assert items([{"input": "q", "groundTruth": "b"}])[0].id != base
    assert items([{"input": "Q", "groundTruth": "a"}])[0].id != base


@pytest.mark.parametrize("batch_size", [1, 2, 1024])
def test_identical_rows_get_numbered_ids(batch_size: int) -> None:
    rows = [{"input": "q"}, {"input": "other"}, {"input": "q"}, {"input": "q"}]
    ids = [i.id for i in items(rows, batch_size=batch_size)]
    assert ids[2] == f"{ids[0]}-2"
    assert ids[3] == f"{ids[0]}-3"
    assert len(set(ids)) == 4


def test_id_column_is_used_and_checked(tmp_path: Path) -> None:
    got = items([{"id": 7, "input": "a"}, {"id": 8, "input": "a"}])
    assert [i.id for i in got] == ["7", "8"]
    path = write(tmp_path / "dup.parquet", [{"id": "x", "input": "a"}, {"id": "x", "input": "b"}])
    with pytest.raises(DatasetError, match="'x' appears more than once") as info:
        load_dataset(path)
    assert (info.value.source, info.value.column) == (str(path), "id")


def test_duplicate_id_across_folder_files_names_both(tmp_path: Path) -> None:
    write(tmp_path / "a.parquet", [{"id": "x", "input": "a"}])
    write(tmp_path / "b.parquet", [{"id": "x", "input": "b"}])
    with pytest.raises(DatasetError, match="more than once") as info:
        load_dataset(tmp_path)
    assert "a.parquet" in info.value.source
    assert "b.parquet" in info.value.source


@pytest.mark.parametrize(
    "data", [[{"id": None, "input": "a"}], pd.DataFrame({"id": [None], "input": ["a"]})]
)
def test_null_id_is_an_error(data: Any) -> None:
    with pytest.raises(DatasetError, match="null") as info:
        load_dataset(data)
    assert info.value.column == "id"


def test_nested_arrow_values_become_python_values(tmp_path: Path) -> None:
    table = pa.table(
        {
            "input": pa.array([{"question": "q", "tags": ["a", "b"]}]),
            "groundTruth": pa.array([[1, 2, 3]]),
            "metadata": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
        }
    )
    item = items(write(tmp_path / "nested.parquet", table))[0]
    assert item.input == {"question": "q", "tags": ["a", "b"]}
    assert item.ground_truth == [1, 2, 3]
    assert item.metadata == {"k": 1}


def test_json_text_becomes_python_values_but_output_stays_text() -> None:
    row = {
        "input": json.dumps({"question": "q"}),
        "groundTruth": "[1, 2]",
        "metadata": '{"split": "test"}',
        "requestContext": "42",
        "output": '{"answer": 1}',
    }
    item = items([row])[0]
    assert item.input == {"question": "q"}
    assert item.ground_truth == [1, 2]
    assert item.metadata == {"split": "test"}
    assert item.request_context == "42"
    assert item.output == '{"answer": 1}'
    assert items([{"input": "{not json"}])[0].input == "{not json"


def test_json_text_and_struct_give_the_same_id(tmp_path: Path) -> None:
    struct = items(write(tmp_path / "s.parquet", [{"input": {"b": 1, "a": 2}}]))[0]
    text = items([{"input": '{"a": 2, "b": 1}'}])[0]
    assert struct.input == text.input
    assert struct.id == text.id


def test_dataframe_missing_values_become_none() -> None:
    frame = pd.DataFrame({"input": ["a", "b"], "groundTruth": [1.5, float("nan")]})
    assert [i.ground_truth for i in items(frame)] == [1.5, None]


def test_other_columns_are_kept_as_extra() -> None:
    item = items([{"input": "q", "context": "doc", "lang": "en"}])[0]
    assert item.extra == {"context": "doc", "lang": "en"}
    assert items([{"input": "q"}])[0].extra is None


def test_columns_mapping() -> None:
    rows = [{"question": "q", "answer": "a", "input": "not me"}]
    item = items(rows, columns={"input": "question", "ground_truth": "answer"})[0]
    assert (item.input, item.ground_truth) == ("q", "a")
    assert item.extra == {"input": "not me"}
    with pytest.raises(ConfigError, match="unknown role 'inputs'"):
        load_dataset(rows, columns={"inputs": "question"})
    with pytest.raises(DatasetError) as info:
        load_dataset(rows, columns={"input": "prompt"})
    assert info.value.column == "prompt"


def test_batches_limit_and_fingerprint() -> None:
    rows = [{"input": f"q{i}"} for i in range(10)]
    dataset = load_dataset(rows, batch_size=3)
    reader = dataset.batches()
    assert [len(b) for b in reader] == [3, 3, 3, 1]
    assert reader.fingerprint == dataset.fingerprint()
    limited = dataset.batches(limit=4)
    assert [len(b) for b in limited] == [3, 1]
    assert limited.fingerprint is not None
    assert limited.fingerprint != reader.fingerprint


def test_fingerprint_sees_every_column() -> None:
    base = load_dataset(ROWS).fingerprint()
    changed_output = [dict(r) for r in ROWS]
    changed_output[1]["output"] = "Paris"
    assert load_dataset(changed_output).fingerprint() != base
    assert load_dataset(list(reversed(ROWS))).fingerprint() != base
    assert load_dataset(ROWS).fingerprint() == base


def test_rejects_unknown_data_types() -> None:
    with pytest.raises(ConfigError, match="data must be a path"):
        load_dataset(42)  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match="row 1 is a str"):
        load_dataset([{"input": "q"}, "oops"])  # type: ignore[list-item]


def test_empty_parquet_file(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.string()), ("input", pa.string())])
    path = write(tmp_path / "empty.parquet", schema.empty_table())
    dataset = load_dataset(path)
    assert (dataset.num_rows, list(dataset)) == (0, [])
    assert dataset.fingerprint() == load_dataset(schema.empty_table()).fingerprint()

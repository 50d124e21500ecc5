"""Malformed datasets: each gives a clear error naming the place, or is handled as documented.

docs/pages/reference/reliability.md, "Bad input", lists how each case is handled.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit import (
    ConfigError,
    DatasetError,
    EvalkitError,
    create_scorer,
    run_evals,
    run_evals_sync,
)
from evalkit.dataset import load_dataset


def read_all(data: Any, **options: Any) -> list[Any]:
    """Open ``data`` and read every row (ids, decoding and the fingerprint included)."""
    dataset = load_dataset(data, **options)
    items = list(dataset)
    assert dataset.fingerprint()
    return items


def good_table(rows: int = 20) -> pa.Table:
    return pa.table(
        {
            "id": [f"item-{i}" for i in range(rows)],
            "input": [f"question {i}" for i in range(rows)],
            "groundTruth": [f"answer {i}" for i in range(rows)],
            "output": [f"answer {i}" for i in range(rows)],
        }
    )


def write_parquet(path: Path, table: pa.Table | None = None) -> Path:
    pq.write_table(table if table is not None else good_table(), path)
    return path


# -- files that are not (whole) Parquet ---------------------------------------------------------


def _truncated(path: Path) -> None:
    data = write_parquet(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _footer_only_damaged(path: Path) -> None:
    data = bytearray(write_parquet(path).read_bytes())
    data[-12:-8] = b"\xff\xff\xff\x7f"  # the footer claims an impossible length
    path.write_bytes(bytes(data))


def _pages_damaged(path: Path) -> None:
    data = bytearray(write_parquet(path).read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = 0xAB
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("truncated", _truncated),
        ("footer damaged", _footer_only_damaged),
        ("pages damaged", _pages_damaged),
        ("empty file", lambda p: p.write_bytes(b"")),
        ("csv text", lambda p: p.write_text("input,groundTruth\nq,a\n")),
        ("json text", lambda p: p.write_text(json.dumps([{"input": "q"}]))),
        ("random bytes", lambda p: p.write_bytes(random.Random(1).randbytes(4096))),
        ("magic only", lambda p: p.write_bytes(b"PAR1PAR1")),
    ],
)
def test_a_file_that_is_not_parquet_names_the_file(tmp_path: Path, name: str, make: Any) -> None:
    path = tmp_path / "qa.parquet"
    make(path)
    with pytest.raises(DatasetError, match="cannot read") as info:
        read_all(path)
    assert str(path) in str(info.value)
    assert info.value.source == str(path)


def test_one_bad_file_in_a_folder_is_named(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet")
    bad = tmp_path / "b.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(DatasetError) as info:
        read_all(tmp_path)
    assert info.value.source == str(bad)


def test_a_folder_whose_files_disagree_on_columns_names_the_file_and_column(
    tmp_path: Path,
) -> None:
    write_parquet(tmp_path / "a.parquet")
    write_parquet(tmp_path / "b.parquet", good_table().drop_columns(["groundTruth"]))
    with pytest.raises(DatasetError, match="columns differ") as info:
        read_all(tmp_path)
    assert (info.value.source, info.value.column) == (str(tmp_path / "b.parquet"), "groundTruth")


@pytest.mark.parametrize(
    ("path", "problem"),
    [("missing.parquet", "no such file or folder"), ("empty-folder", "holds no .parquet")],
)
def test_a_missing_file_or_an_empty_folder_is_named(
    tmp_path: Path, path: str, problem: str
) -> None:
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises(DatasetError, match=problem) as info:
        read_all(tmp_path / path)
    assert str(tmp_path / path) in str(info.value)


# -- columns ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "column", "problem"),
    [
        ([{"question": "q"}], "input", "missing the required column (columns: 'question')"),
        ([{"input": "q", "groundTruth": 1, "ground_truth": 2}], "groundTruth", "keep one"),
        (pa.table({"text": ["q"]}), "input", "missing the required column"),
    ],
)
def test_a_missing_or_doubled_role_column_is_named(data: Any, column: str, problem: str) -> None:
    with pytest.raises(DatasetError) as info:
        read_all(data)
    assert info.value.column == column
    assert problem in str(info.value)


def test_a_column_mapping_to_a_missing_column_is_named(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "qa.parquet")
    with pytest.raises(DatasetError, match="no such column") as info:
        read_all(path, columns={"input": "question"})
    assert (info.value.source, info.value.column) == (str(path), "question")


def test_columns_that_are_not_a_mapping_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="columns"):
        read_all([{"q": "x"}], columns=["input"])


def test_two_columns_of_one_name_are_a_dataset_error() -> None:
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["input", "input"])
    with pytest.raises(DatasetError, match="input"):
        read_all(table)


# -- cell types ---------------------------------------------------------------------------------

ODD_CELLS = [
    ("int", pa.array([1, 2], pa.int64()), [1, 2]),
    ("float", pa.array([1.5, -0.0]), [1.5, -0.0]),
    ("bool", pa.array([True, False]), [True, False]),
    ("binary", pa.array([b"\xff\xfe", b"ok"], pa.binary()), [b"\xff\xfe", b"ok"]),
    ("list", pa.array([["a", "b"], []]), [["a", "b"], []]),
    ("struct", pa.array([{"a": 1, "b": [2]}, {"a": None, "b": None}]),
     [{"a": 1, "b": [2]}, {"a": None, "b": None}]),
    ("map", pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int64())), [{"k": 1}, {}]),
    ("dictionary", pa.array(["x", "x"]).dictionary_encode(), ["x", "x"]),
    ("null type", pa.nulls(2), [None, None]),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "array", "expected"), ODD_CELLS, ids=[c[0] for c in ODD_CELLS])
def test_cells_of_any_arrow_type_are_read_as_python_values(
    tmp_path: Path, kind: str, array: pa.Array, expected: list[Any]
) -> None:
    table = pa.table({"input": array, "groundTruth": array, "output": array})
    path = write_parquet(tmp_path / "qa.parquet", table)
    items = read_all(path)
    assert [item.input for item in items] == expected
    assert [item.ground_truth for item in items] == expected


def test_a_map_with_a_repeated_key_keeps_the_last_value_with_a_warning() -> None:
    cells = pa.array([[("k", 1.0), ("k", 2.0)]], pa.map_(pa.string(), pa.float64()))
    with pytest.warns(UserWarning, match="Encountered key 'k'"):
        (item,) = read_all(pa.table({"input": cells}))
    assert item.input == {"k": 2.0}


@pytest.mark.parametrize(
    ("cell", "read_as"),
    [
        (pa.array([1], pa.decimal128(5, 2)), "1.0"),
        (pa.array([0], pa.timestamp("s", tz="UTC")), "1970-01-01"),
        (pa.array([0], pa.date32()), "1970-01-01"),
    ],
)
async def test_decimal_and_time_cells_are_stored_as_json_text(
    tmp_path: Path, cell: pa.Array, read_as: str
) -> None:
    table = pa.table({"id": ["i"], "input": cell, "groundTruth": ["x"], "output": ["x"]})
    store = tmp_path / "s.duckdb"
    result = await run_evals(table, [same_text()], store=store, progress=False)
    assert result.summary.total_items == 1
    with duckdb.connect(str(store), read_only=True) as con:
        ((stored,),) = con.execute("SELECT input FROM scores").fetchall()
    assert read_as in stored


def same_text() -> Any:
    return create_scorer("same").generate_score(
        lambda run: float(str(run.output) == str(run.ground_truth))
    )


# -- missing values -----------------------------------------------------------------------------


def test_null_and_nan_cells_are_kept_and_ids_still_differ() -> None:
    items = read_all(
        [
            {"input": None, "groundTruth": None},
            {"input": math.nan, "groundTruth": "a"},
            {"input": "q", "groundTruth": math.nan},
        ]
    )
    assert items[0].input is None
    assert math.isnan(items[1].input)
    assert math.isnan(items[2].ground_truth)
    assert len({item.id for item in items}) == 3


def test_null_and_nan_parquet_cells_are_read(tmp_path: Path) -> None:
    table = pa.table({"input": pa.array([None, math.nan, 1.0]), "groundTruth": [None, "a", "b"]})
    items = read_all(write_parquet(tmp_path / "qa.parquet", table))
    assert items[0].input is None
    assert math.isnan(items[1].input)
    assert items[2].input == 1.0


def test_missing_cells_of_a_dataframe_are_none() -> None:
    frame = pd.DataFrame({"input": ["q", None, "r"], "groundTruth": [1.0, math.nan, None]})
    items = read_all(frame)
    assert [item.input for item in items] == ["q", None, "r"]
    assert [item.ground_truth for item in items] == [1.0, None, None]


@pytest.mark.parametrize(
    "data",
    [
        pa.table({"id": ["a", None], "input": ["q", "r"]}),
        [{"id": "a", "input": "q"}, {"id": None, "input": "r"}],
        pd.DataFrame({"id": ["a", None], "input": ["q", "r"]}),
    ],
    ids=["arrow", "records", "pandas"],
)
def test_a_null_id_is_named(data: Any) -> None:
    with pytest.raises(DatasetError, match="an id is null") as info:
        read_all(data)
    assert info.value.column == "id"


async def test_a_nan_score_input_is_a_recorded_scorer_failure_not_a_crash(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    data = [{"id": "a", "input": "q", "output": "x", "groundTruth": math.nan}]
    from evalkit.scorers import exact_match

    result = await run_evals(data, [exact_match()], store=store, progress=False)
    (outcome,) = result.items[0].outcomes
    assert outcome.status == "failed"
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scorer_errors").fetchone() == (1,)


# -- duplicate ids ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        pa.table({"id": ["a", "b", "a"], "input": ["q", "r", "s"]}),
        pa.table({"id": [1, 2, 2], "input": ["q", "r", "s"]}),
        [{"id": "a", "input": "q"}, {"id": "a", "input": "r"}],
        [{"id": 1, "input": "q"}, {"id": "1", "input": "r"}],  # the same id once as text
        pd.DataFrame({"id": ["a", "a"], "input": ["q", "r"]}),
    ],
)
def test_duplicate_ids_are_named(data: Any) -> None:
    with pytest.raises(DatasetError, match="appears more than once") as info:
        read_all(data)
    assert info.value.column == "id"


def test_duplicate_ids_across_files_name_both_files(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet")
    write_parquet(tmp_path / "b.parquet")
    with pytest.raises(DatasetError, match="'item-0' appears more than once") as info:
        read_all(tmp_path)
    assert str(tmp_path / "a.parquet") in info.value.source
    assert str(tmp_path / "b.parquet") in info.value.source


def test_identical_rows_without_ids_get_numbered_ids() -> None:
    items = read_all([{"input": "q", "groundTruth": "a"}] * 3)
    base = items[0].id
    assert [item.id for item in items] == [base, f"{base}-2", f"{base}-3"]


@pytest.mark.parametrize(
    "ids",
    [pa.array([[1], [2]]), pa.array([{"a": 1}, {"a": 2}])],
    ids=["list", "struct"],
)
def test_an_id_column_of_nested_values_is_a_dataset_error(ids: pa.Array) -> None:
    with pytest.raises(DatasetError) as info:
        read_all(pa.table({"id": ids, "input": ["q", "r"]}))
    assert info.value.column == "id"


# -- sizes and shapes ---------------------------------------------------------------------------


async def test_a_10_mb_string_is_read_and_stored_whole(tmp_path: Path) -> None:
    huge = "x" * 10_000_000
    path = write_parquet(
        tmp_path / "qa.parquet",
        pa.table({"id": ["big"], "input": [huge], "groundTruth": [huge], "output": [huge]}),
    )
    store = tmp_path / "s.duckdb"
    result = await run_evals(path, [same_text()], store=store, progress=False)
    assert result.scores == {"same": 1.0}
    with duckdb.connect(str(store), read_only=True) as con:
        row = con.execute("SELECT length(input::VARCHAR), score FROM scores").fetchone()
    assert row == (10_000_002, 1.0)  # the JSON string, quotes included


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"child": [value]}
    return value


def test_deeply_nested_parquet_values_are_read(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "qa.parquet", pa.table({"input": [nested(30)]}))
    (item,) = read_all(path)
    assert item.input == nested(30)


def test_parquet_nested_past_the_readers_limit_names_the_file(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "qa.parquet", pa.table({"input": [nested(60)]}))
    with pytest.raises(DatasetError, match="too deeply nested") as info:
        read_all(path)
    assert info.value.source == str(path)


def test_json_text_nested_past_the_recursion_limit_is_handled() -> None:
    (item,) = read_all([{"input": "[" * 100_000 + "]" * 100_000}])
    assert isinstance(item.input, str)  # kept as text, like any other undecodable JSON


def test_python_values_nested_past_the_recursion_limit_are_a_dataset_error() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(5_000):
        node.append([])
        node = node[0]
    with pytest.raises(DatasetError, match="input"):
        read_all([{"input": deep}])


# -- text encodings -----------------------------------------------------------------------------


def _string_column_with(raw: bytes) -> pa.Array:
    """A string array whose one value holds ``raw`` unchecked (as a writer may produce)."""
    offsets = pa.py_buffer(b"\x00\x00\x00\x00" + len(raw).to_bytes(4, "little"))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(raw)])


def test_non_utf8_bytes_in_a_parquet_string_column_name_the_file_and_column(
    tmp_path: Path,
) -> None:
    path = write_parquet(
        tmp_path / "qa.parquet", pa.table({"input": _string_column_with(b"caf\xe9 \xff")})
    )
    with pytest.raises(DatasetError) as info:
        read_all(path)
    assert (info.value.source, info.value.column) == (str(path), "input")


def test_a_lone_surrogate_in_python_text_is_handled() -> None:
    (item,) = read_all([{"input": "bad \ud800 text"}])
    assert item.input == "bad \ud800 text"


def test_non_utf8_bytes_in_a_binary_column_are_kept_as_bytes(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "qa.parquet", pa.table({"input": pa.array([b"caf\xe9 \xff"], pa.binary())})
    )
    (item,) = read_all(path)
    assert item.input == b"caf\xe9 \xff"


def test_mutated_parquet_files_only_raise_dataset_errors(tmp_path: Path) -> None:
    """Bytes flipped anywhere in a valid file (footer included), 400 seeded variants."""
    good = write_parquet(tmp_path / "good.parquet").read_bytes()
    rnd = random.Random(20240611)
    path = tmp_path / "mutated.parquet"
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rnd.randint(1, 8)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        path.write_bytes(bytes(data))
        with contextlib.suppress(EvalkitError):
            read_all(path)


# -- empty datasets -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda p: pa.table(
            {"input": pa.array([], pa.string()), "output": pa.array([], pa.string())}
        ),
        lambda p: write_parquet(p / "zero.parquet", good_table(0)),
        lambda p: pd.DataFrame({"input": [], "output": []}),
    ],
    ids=["arrow", "parquet", "pandas"],
)
async def test_an_empty_dataset_runs_to_an_empty_completed_experiment(
    tmp_path: Path, make: Any
) -> None:
    store = tmp_path / "s.duckdb"
    result = await run_evals(make(tmp_path), [same_text()], store=store, progress=False)
    assert result.status == "completed"
    assert result.summary.total_items == 0
    assert result.scores == {"same": None}  # no successful score to average
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT status, total_items FROM experiments").fetchall() == [
            ("completed", 0)
        ]


def test_an_empty_list_has_no_input_column() -> None:
    with pytest.raises(DatasetError, match="missing the required column"):
        read_all([])


@pytest.mark.parametrize("data", [b"rows", {"input": ["q"]}, 42, None, "  "])
def test_data_of_the_wrong_kind_is_refused(data: Any) -> None:
    with pytest.raises(EvalkitError):
        read_all(data)


# -- property tests: whatever the data, only evalkit errors -------------------------------------

ROLE_NAMES = ["id", "input", "groundTruth", "ground_truth", "output", "requestContext", "metadata"]
column_names = st.sampled_from([*ROLE_NAMES, "extra", "Input"]) | st.text(max_size=4)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=10)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def read_or_refuse(data: Any, **options: Any) -> list[Any] | None:
    """Read every row, or return None when an evalkit error refuses the data; any other
    exception fails the test."""
    try:
        return read_all(data, **options)
    except EvalkitError:
        return None


@PROPERTY_SETTINGS
@given(records=st.lists(st.dictionaries(column_names, values, max_size=6), max_size=8))
def test_any_list_of_dicts_reads_or_raises_an_evalkit_error(records: list[dict[str, Any]]) -> None:
    items = read_or_refuse(records)
    if items is not None:
        assert len(items) == len(records)
        assert len({item.id for item in items}) == len(items)


# Arrow types and matching values; nested types are not drawn for the id column (a known bug,
# see test_an_id_column_of_nested_values_is_a_dataset_error).
SCALAR_TYPES: list[tuple[Any, st.SearchStrategy[object]]] = [
    (pa.string(), st.text(max_size=10)),
    (pa.large_string(), st.text(max_size=10)),
    (pa.int64(), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
    (pa.float64(), st.floats()),
    (pa.bool_(), st.booleans()),
    (pa.binary(), st.binary(max_size=10)),
    (pa.timestamp("us"), st.datetimes()),
    (pa.null(), st.none()),
]
NESTED_TYPES: list[tuple[Any, st.SearchStrategy[object]]] = [
    (pa.list_(pa.string()), st.lists(st.text(max_size=5), max_size=3)),
    (
        pa.struct([("a", pa.int64()), ("b", pa.string())]),
        st.fixed_dictionaries({"a": st.integers(-10, 10), "b": st.text(max_size=5)}),
    ),
    (
        # Unique keys: a repeated one is its own case (test_a_map_with_a_repeated_key...).
        pa.map_(pa.string(), pa.float64()),
        st.dictionaries(st.text(max_size=3), st.floats(), max_size=3).map(
            lambda d: list(d.items())
        ),
    ),
]


@st.composite
def arrow_tables(draw: st.DrawFn) -> pa.Table:
    rows = draw(st.integers(0, 6))
    names = draw(st.lists(column_names, min_size=1, max_size=6, unique=True))
    columns = {}
    for name in names:
        kinds = SCALAR_TYPES if name == "id" else SCALAR_TYPES + NESTED_TYPES
        kind, cells = draw(st.sampled_from(kinds))
        column = draw(st.lists(st.none() | cells, min_size=rows, max_size=rows))
        columns[name] = pa.array(column, kind)
    return pa.table(columns)


@PROPERTY_SETTINGS
@given(table=arrow_tables())
def test_any_arrow_table_or_its_parquet_file_reads_or_raises_an_evalkit_error(
    tmp_path: Path, table: pa.Table
) -> None:
    in_memory = read_or_refuse(table)
    path = write_parquet(tmp_path / "random.parquet", table)
    from_file = read_or_refuse(path)
    assert (in_memory is None) == (from_file is None)
    if in_memory is not None and from_file is not None:
        assert [i.id for i in in_memory] == [i.id for i in from_file]


@PROPERTY_SETTINGS
@given(
    data=st.binary(max_size=4096),
    framing=st.sampled_from([(b"", b""), (b"PAR1", b"PAR1"), (b"PAR1", b"\x10\x00\x00\x00PAR1")]),
)
def test_random_bytes_as_a_file_raise_a_dataset_error_naming_it(
    tmp_path: Path, data: bytes, framing: tuple[bytes, bytes]
) -> None:
    path = tmp_path / "random.parquet"
    path.write_bytes(framing[0] + data + framing[1])
    with pytest.raises(DatasetError) as info:
        read_all(path)
    assert str(path) in str(info.value)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(
        st.fixed_dictionaries(
            {"input": values, "output": values},
            optional={"groundTruth": values, "requestContext": values, "metadata": values},
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_readable_rows_run_into_the_store_with_every_pair_accounted_for(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    store = tmp_path / f"{uuid.uuid4().hex}.duckdb"
    result = run_evals_sync(records, [same_text()], store=store, progress=False)
    assert result.summary.total_items == len(records)
    with duckdb.connect(str(store), read_only=True) as con:
        (scores,) = con.execute("SELECT count(*) FROM scores").fetchone() or (0,)
        (errors,) = con.execute("SELECT count(*) FROM scorer_errors").fetchone() or (0,)
    assert scores + errors == len(records)


@pytest.mark.parametrize("nans", [1, 2], ids=["one NaN id", "two NaN ids"])
def test_a_nan_id_names_the_file(tmp_path: Path, nans: int) -> None:
    path = tmp_path / "scores.parquet"
    ids = [1.0, *([math.nan] * nans)]
    pq.write_table(pa.table({"id": ids, "input": [f"q{i}" for i in range(len(ids))]}), path)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == (
        f"{path}, column 'id': an id is NaN (not a number); every row needs one"
    )
    assert info.value.source == str(path)


# -- text formats and other sources: every bad file is a located DatasetError -----------------
# Per format: truncated, wrong encoding, ragged rows, a 10 MB cell, mixed types in a column.

_HEADER = "id,input,groundTruth\n"
_GOOD_ROWS = "".join(f"r{i},question {i},answer {i}\n" for i in range(50))


def _text_file(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def _jsonl_text(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


_JSON_ROWS = [{"id": f"r{i}", "input": f"question {i}"} for i in range(50)]

# name -> (file name, content, expected (line, record, column), words in the problem)
Where = tuple[int | None, int | None, str | None]
BAD_TEXT_FILES: dict[str, tuple[str, str | bytes, Where, str]] = {
    "csv truncated inside a quoted field": (
        "t.csv", _HEADER + _GOOD_ROWS + 'r50,"question 50', (52, None, None), "unexpected end"
    ),
    "csv not utf-8": (
        "e.csv",
        (_HEADER + _GOOD_ROWS).encode() + "r50,caf\xe9,x\n".encode("latin-1"),
        (52, None, None),
        "not utf-8",
    ),
    "csv utf-16": ("u.csv", (_HEADER + _GOOD_ROWS).encode("utf-16"), (None, None, None), ""),
    "csv ragged, a field too many": (
        "r.csv", _HEADER + _GOOD_ROWS + "r50,q,a,extra\n" + _GOOD_ROWS.replace("r", "s"),
        (52, None, None), "4 fields",
    ),
    "csv ragged, a field short": (
        "s.csv", _HEADER + _GOOD_ROWS + "r50,q\n", (52, None, None), "",
    ),
    "csv mixed types in a column": (
        "m.csv",
        "input,n\n" + "".join(f"q{i},{i}\n" for i in range(30_000)) + "qx,not a number\n",
        (30_002, None, "n"),
        "'not a number' does not fit the column's type BIGINT",
    ),
    "tsv ragged": (
        "r.tsv", "input\tgroundTruth\n" + "q\ta\n" * 40 + "q\ta\tb\n", (42, None, None), "fields"
    ),
    "jsonl truncated": (
        "t.jsonl", _jsonl_text(_JSON_ROWS) + '{"id": "r50", "input": "quest', (51, None, None),
        "malformed JSON",
    ),
    "jsonl not utf-8": (
        "e.jsonl",
        _jsonl_text(_JSON_ROWS).encode() + '{"input": "caf\xe9"}\n'.encode("latin-1"),
        (51, None, None),
        "UTF-8",
    ),
    "jsonl a line that is not an object": (
        "r.jsonl", _jsonl_text([*_JSON_ROWS, [1, 2]]), (51, None, None), "JSON object"
    ),
    "jsonl malformed in the middle": (
        "m.jsonl",
        _jsonl_text(_JSON_ROWS[:10]) + "{input: 1}\n" + _jsonl_text(_JSON_ROWS[10:]),
        (11, None, None),
        "malformed JSON",
    ),
    "json truncated": ("t.json", json.dumps(_JSON_ROWS)[:-30], (None, 50, None), "malformed JSON"),
    "json a record that is not an object": (
        "r.json", json.dumps([*_JSON_ROWS, "oops"]), (None, 51, None), "JSON object"
    ),
    "json not an array": ("o.json", json.dumps(_JSON_ROWS[0]), (None, None, None), "array"),
    "json not utf-8": (
        "e.json", '[{"input": "caf\xe9"}]'.encode("latin-1"), (None, 1, None), "UTF-8"
    ),
    # Issue 30: a header DuckDB would read with a renamed column, or too wide to read at all.
    "csv a column named twice": (
        "d.csv", "input,output,output,groundTruth\nq,a,b,c\n", (1, None, "output"),
        "names the column 'output' twice",
    ),
    "tsv a column named twice": (
        "d.tsv", "input\toutput\toutput\nq\ta\tb\n", (1, None, "output"), "twice"
    ),
    "csv names differing only in case": (
        "c.csv", "input,groundTruth,Input\nq,a,b\n", (1, None, "Input"), "ignores case"
    ),
    "csv names differing only in spaces": (
        "p.csv", "input, input\nq,a\n", (1, None, " input"), "surrounding spaces"
    ),
    "csv past the column ceiling": (
        "w.csv", "input," + ",".join(f"c{i}" for i in range(10_000)) + "\n",
        (1, None, None), "10,001 columns, above the ceiling of 10,000",
    ),
    "jsonl past the column ceiling": (
        "w.jsonl", _jsonl_text([{"input": "q", f"k{i}": i} for i in range(10_000)]),
        (None, None, None), "10,001 columns, above the ceiling of 10,000",
    ),
    # Issue 30: {} and [] records get a true message, not "must be a JSON object" for {}.
    "jsonl only empty objects": (
        "o.jsonl", "{}\n{}\n", (1, None, None), "every record is an empty object"
    ),
    "jsonl only arrays": ("a.jsonl", "[]\n[]\n", (1, None, None), "the line holds an array"),
    "jsonl a string line after objects": (
        "s.jsonl", _jsonl_text(_JSON_ROWS[:3]) + '"x"\n', (4, None, None), "holds a string"
    ),
    "json only empty objects": ("o.json", "[{}, {}]", (None, 1, None), "an empty object"),
    "json only arrays": ("a.json", "[[], []]", (None, 1, None), "the record holds an array"),
    "jsonl keys differing only in case": (
        "k.jsonl", _jsonl_text([{"input": "q"}, {"Input": "r"}]), (None, None, "input"),
        "the keys 'Input' and 'input'",  # named in sorted order
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_TEXT_FILES))
def test_a_bad_text_file_is_a_located_dataset_error(tmp_path: Path, case: str) -> None:
    name, content, (line, record, column), words = BAD_TEXT_FILES[case]
    path = _text_file(tmp_path / name, content)
    with pytest.raises(DatasetError) as info:
        read_all(path)
    error = info.value
    assert error.source == str(path), str(error)
    assert (error.line, error.row, error.column) == (line, record, column), str(error)
    assert words.lower() in error.problem.lower(), str(error)
    # One line, short: never DuckDB's whole report (which repeats the offending line).
    assert "\n" not in str(error)
    assert len(str(error)) < 400


def test_an_empty_or_missing_text_file_is_named(tmp_path: Path) -> None:
    for name in ("gone.csv", "gone.jsonl", "gone.json"):
        with pytest.raises(DatasetError, match="no such file") as info:
            read_all(tmp_path / name)
        assert info.value.source == str(tmp_path / name)
    for name in ("empty.csv", "empty.jsonl", "empty.json"):
        path = _text_file(tmp_path / name, "")
        with pytest.raises(DatasetError, match="the file is empty") as info:
            read_all(path)
        assert info.value.source == str(path)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "json"])
def test_a_10_mb_cell_in_a_text_file_is_read_whole(tmp_path: Path, suffix: str) -> None:
    big = "x" * (10 * 2**20)
    rows = [{"input": "q1", "groundTruth": big}, {"input": "q2", "groundTruth": "a"}]
    if suffix == "csv":
        content = "input,groundTruth\n" + "".join(
            f"{r['input']},{r['groundTruth']}\n" for r in rows
        )
    elif suffix == "jsonl":
        content = _jsonl_text(rows)
    else:
        content = json.dumps(rows)
    got = read_all(_text_file(tmp_path / f"big.{suffix}", content))
    assert [len(i.ground_truth) for i in got] == [len(big), 1]


@pytest.mark.parametrize("suffix", ["jsonl", "json"])
def test_mixed_types_in_a_json_column_arrive_as_written(tmp_path: Path, suffix: str) -> None:
    rows = [{"input": f"q{i}", "n": i} for i in range(30_000)]
    rows += [{"input": "qx", "n": "thirty thousand"}, {"input": "qy", "n": {"a": [1]}}]
    content = _jsonl_text(rows) if suffix == "jsonl" else json.dumps(rows)
    got = read_all(_text_file(tmp_path / f"m.{suffix}", content))
    assert [i.extra["n"] for i in got[-3:]] == [29_999, "thirty thousand", {"a": [1]}]


def test_a_damaged_saved_hugging_face_dataset_is_a_dataset_error(tmp_path: Path) -> None:
    datasets = pytest.importorskip(
        "datasets", reason="the optional 'datasets' library (evalkit-runner[hf])"
    )
    datasets.disable_progress_bars()
    folder = tmp_path / "hf"
    datasets.Dataset.from_list([{"input": f"q{i}"} for i in range(1000)]).save_to_disk(str(folder))
    (arrow,) = folder.glob("*.arrow")
    arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    with pytest.raises(DatasetError) as info:
        read_all(folder)
    assert info.value.source == str(folder)
    (folder / "state.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        read_all(folder)
    assert info.value.source == str(folder)


def test_a_failing_query_is_a_dataset_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    _text_file(bad, "input,n\n" + "".join(f"q{i},{i}\n" for i in range(30_000)) + "qx,abc\n")
    for query in (
        "select * from",  # a syntax error
        f"select * from read_csv('{bad}')",  # a conversion error while streaming
        "select 1/0 as input, 'x'::int as n",
    ):
        with pytest.raises(DatasetError) as info:
            read_all(None, query=query)
        assert info.value.source == query
        assert "\n" not in str(info.value)


# -- issue 30: records, cells and headers DuckDB used to misread --------------------------------


@pytest.mark.parametrize("suffix", ["jsonl", "json"])
def test_records_each_with_a_key_of_its_own_are_records(tmp_path: Path, suffix: str) -> None:
    # 50 records of one extra key each: DuckDB's sniffer took them for one MAP column and the
    # file was refused as "every record must be a JSON object".
    rows = [{"input": f"q{i}", f"k{i}": i} for i in range(50)]
    content = _jsonl_text(rows) if suffix == "jsonl" else json.dumps(rows)
    path = _text_file(tmp_path / f"keys.{suffix}", content)
    items = read_all(path)
    assert [item.input for item in items] == [f"q{i}" for i in range(50)]
    assert [item.extra[f"k{i}"] for i, item in enumerate(items)] == list(range(50))
    assert items[0].extra["k1"] is None  # a key missing from a record reads as None
    (item,) = [i for i in read_all(path, columns={"metadata": ["k7"]}) if i.input == "q7"]
    assert item.metadata == {"k7": 7}


def test_a_key_first_seen_past_the_sniffers_sample_is_a_column(tmp_path: Path) -> None:
    rows = [{"input": f"q{i}"} for i in range(25_000)] + [{"input": "last", "late": [1]}]
    items = read_all(_text_file(tmp_path / "late.jsonl", _jsonl_text(rows)))
    assert items[-1].extra == {"late": [1]}
    assert items[0].extra == {"late": None}


def test_inf_and_nan_csv_cells_are_floats_and_dates_stay_text(tmp_path: Path) -> None:
    # DuckDB inferred DATE for a column of inf (an infinite date no Python date can hold),
    # and the run failed with no line number.
    path = _text_file(
        tmp_path / "inf.csv",
        "input,n,m,day\nq1,inf,1.5,2024-01-31\nq2,-inf,nan,2024-02-29\nq3,inf,2,1999-12-31\n",
    )
    items = read_all(path)
    assert [item.extra["n"] for item in items] == [math.inf, -math.inf, math.inf]
    assert items[0].extra["m"] == 1.5
    assert math.isnan(items[1].extra["m"])
    assert [item.extra["day"] for item in items] == ["2024-01-31", "2024-02-29", "1999-12-31"]


def test_a_table_past_the_column_ceiling_is_refused() -> None:
    table = pa.table({"input": ["q"], **{f"c{i}": [i] for i in range(10_000)}})
    with pytest.raises(DatasetError, match="10,001 columns, above the ceiling") as info:
        read_all(table)
    assert info.value.source == "<Arrow table>"


def _bad_utf8_parquet(folder: Path) -> Path:
    text = pa.chunked_array([["fine"] * 3, _string_column_with(b"\xff")])
    table = pa.table({"input": text, "output": ["a"] * 4})
    return write_parquet(folder / "bad.parquet", table)


def _late_text_csv(folder: Path) -> Path:
    rows = "".join(f"q{i},{i}\n" for i in range(25_000))
    return _text_file(folder / "late.csv", "input,output\n" + rows + "qx,not a number\n")


@pytest.mark.parametrize("make", [_bad_utf8_parquet, _late_text_csv], ids=["utf-8", "late text"])
async def test_a_dataset_that_cannot_be_read_creates_no_run(tmp_path: Path, make: Any) -> None:
    # Both fail while the rows stream, after opening: they used to leave a `failed` run.
    store = tmp_path / "s.duckdb"
    await run_evals([{"input": "q", "output": "a"}], [same_text()], store=store, progress=False)
    bad = make(tmp_path)
    with pytest.raises(DatasetError) as info:
        await run_evals(bad, [same_text()], store=store, progress=False)
    assert info.value.source == str(bad)
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT dataset, status FROM experiments").fetchall() == [
            ("<list of dicts>", "completed")
        ]


@pytest.mark.parametrize(
    ("file", "content", "words"),
    [
        ("dataset_info.json", "[]", "must hold a JSON object ({...}), not an array"),
        ("dataset_info.json", '{"features": 5}', "the value of 'features' is malformed"),
        ("dataset_info.json", '{"features": {"input": 5}}', "'features'"),
        ("dataset_info.json", '{"splits": 5}', "the value of 'splits' is malformed"),
        ("state.json", "[]", "not an array"),
        ("state.json", '{"_data_files": 5}', "'_data_files' must be a list"),
        ("state.json", '{"_data_files": [{"filename": 5}]}', "'_data_files' must be a list"),
    ],
)
def test_malformed_hugging_face_metadata_names_the_file_and_key(
    tmp_path: Path, file: str, content: str, words: str
) -> None:
    # These were AttributeError and TypeError tracebacks from inside `datasets`.
    datasets = pytest.importorskip(
        "datasets", reason="the optional 'datasets' library (evalkit-runner[hf])"
    )
    datasets.disable_progress_bars()
    folder = tmp_path / "hf"
    datasets.Dataset.from_list([{"input": "q"}]).save_to_disk(str(folder))
    (folder / file).write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        read_all(folder)
    assert info.value.source == str(folder / file)
    assert words in info.value.problem


def test_a_cell_python_cannot_hold_names_its_record_and_column(tmp_path: Path) -> None:
    # An infinite date (DuckDB has one, Python's date has not), past the first batch.
    query = (
        "select 'q' || i as input, case when i = 4000 then 'infinity'::date "
        "else '2024-01-01'::date end as day from range(5000) t(i) order by i"
    )
    with pytest.raises(DatasetError, match="cannot convert") as info:
        read_all(None, query=query)
    assert (info.value.source, info.value.row, info.value.column) == (query, 4001, "day")
    bad = _bad_utf8_parquet(tmp_path)
    with pytest.raises(DatasetError, match="not valid UTF-8") as info:
        read_all(bad)
    assert (info.value.source, info.value.row, info.value.column) == (str(bad), 4, "input")


@pytest.mark.parametrize(
    ("data", "query", "column", "words"),
    [
        (pd.DataFrame([["q", "a", "b"]], columns=["input", "output", "output"]), None,
         "output", "appears more than once"),  # was an AttributeError traceback
        (None, "select 'a' as input, 'b' as INPUT", "INPUT", "ignores case"),  # read 'a' twice
    ],
    ids=["dataframe", "query"],
)  # fmt: skip
def test_two_columns_of_one_name_in_a_frame_or_a_query_are_named(
    data: Any, query: str | None, column: str, words: str
) -> None:
    with pytest.raises(DatasetError, match=words) as info:
        read_all(data, query=query)
    assert info.value.column == column

from __future__ import annotations

import math

import pytest

from evalkit.agreement import LabelSpec
from evalkit.agreement._labels import parse_labels, with_label_columns
from evalkit.errors import ConfigError, DatasetError

IDS = ("rubric", "exact")


def test_a_column_a_list_and_a_label_set_are_label_specs() -> None:
    specs = parse_labels(
        {
            "rubric": "human",
            "exact": {"columns": ["a", "b"], "levels": ["bad", "ok", "good"], "scale": [1, 5]},
        },
        IDS,
    )
    assert specs["rubric"] == LabelSpec("rubric", ("human",))
    assert specs["exact"].columns == ("a", "b")
    assert specs["exact"].level_values() == (1.0, 3.0, 5.0)
    assert specs["exact"].to_dict() == {
        "columns": ["a", "b"], "scale": [1.0, 5.0], "levels": ["bad", "ok", "good"]
    }  # fmt: skip


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"nope": "h"}, "no scorer with id 'nope'"),
        ({"rubric": {"column": "h"}}, "unknown key 'column'"),
        ({"rubric": {"levels": ["a", "b"]}}, "give 'columns'"),
        ({"rubric": ""}, "columns must be a column name"),
        ({"rubric": ["h", "h"]}, "appears twice"),
        ({"rubric": {"columns": "h", "levels": ["a"]}}, "at least two"),
        ({"rubric": {"columns": "h", "levels": ["a", "A ", "a"]}}, "appears twice"),
        ({"rubric": {"columns": "h", "kind": "nominal"}}, "kind must be one of"),
        ({"rubric": {"columns": "h", "kind": "ordinal"}}, "needs 'levels'"),
        ({"rubric": {"columns": "h", "kind": "binary", "levels": [1, 2, 3]}}, "two levels"),
        ({"rubric": {"columns": "h", "scale": [1, 1]}}, "low < high"),
        ("rubric", "must map scorer ids"),
    ],
)
def test_bad_labels_are_config_errors_that_say_what_is_wrong(labels: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_labels(labels, IDS)  # type: ignore[arg-type]


def test_labels_read_onto_the_scale_and_missing_ones_are_nan() -> None:
    given = {"rubric": {"columns": "h", "levels": ["bad", "ok", "good"]}}
    spec = parse_labels(given, IDS)["rubric"]
    values = spec.values("h", ["good", None, "bad", "ok", " ", float("nan")], list("abcdef"))
    assert list(values[[0, 2, 3]]) == [1.0, 0.0, 0.5]
    assert all(math.isnan(v) for v in values[[1, 4, 5]])
    numbers = LabelSpec("rubric", ("h",), levels=(1.0, 2.0, 3.0))
    # 2, 2.0 and "2" are one level.
    assert list(numbers.values("h", [2, "2", 2.0, 3], list("abcd"))) == [0.5, 0.5, 0.5, 1.0]


def test_a_label_outside_the_set_or_not_a_number_names_column_item_and_value() -> None:
    spec = LabelSpec("rubric", ("h",), levels=("bad", "good"))
    with pytest.raises(DatasetError, match=r"^d.csv, column 'h': label 'meh' of item 'q2'"):
        spec.values("h", ["bad", "meh"], ["q1", "q2"], source="d.csv")
    with pytest.raises(DatasetError, match=r"label 'yes' of item 'q1' .* is not a number"):
        LabelSpec("rubric", ("h",)).values("h", ["yes"], ["q1"])


def test_label_columns_are_kept_as_metadata_beside_the_listed_ones() -> None:
    specs = parse_labels({"rubric": ["a", "b"], "exact": "a"}, IDS)
    assert with_label_columns(None, specs) == {"metadata": ["a", "b"]}
    kept = with_label_columns({"input": "q", "metadata": ["lang"]}, specs)
    assert kept == {"input": "q", "metadata": ["lang", "a", "b"]}
    assert with_label_columns({"input": "q"}, {}) == {"input": "q"}
    with pytest.raises(ConfigError, match="maps 'metadata' to the column 'meta'"):
        with_label_columns({"metadata": "meta"}, specs)


@pytest.mark.parametrize("column", ["consensus", "raters", "repeats"])
def test_a_label_column_cannot_take_a_reserved_name(column: str) -> None:
    with pytest.raises(ConfigError, match=f"cannot be named '{column}'"):
        parse_labels({"s": column}, ["s"])

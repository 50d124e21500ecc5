from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.sample_data.build_qa_datasets import REGRESSED_CATEGORIES, build

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


@pytest.mark.parametrize(("name", "index"), [("qa_v1.parquet", 0), ("qa_v2.parquet", 1)])
def test_the_committed_datasets_are_what_the_builder_makes(name: str, index: int) -> None:
    committed = pq.read_table(DATASETS / name)
    assert committed.equals(build()[index])


def test_both_versions_ask_the_same_questions_with_unique_ids() -> None:
    v1, v2 = (pq.read_table(DATASETS / name) for name in ("qa_v1.parquet", "qa_v2.parquet"))
    assert v1.column_names == ["id", "input", "groundTruth", "output", "metadata"]
    assert 250 <= v1.num_rows == v2.num_rows <= 400
    ids = v1["id"].to_pylist()
    assert len(set(ids)) == len(ids)
    for column in ("id", "input", "groundTruth", "metadata"):
        assert v1[column].equals(v2[column])
    assert len(set(v1["input"].to_pylist())) == v1.num_rows


def test_v2_is_worse_mostly_on_billing_and_account_questions() -> None:
    v1, v2 = (
        pq.read_table(DATASETS / name).to_pylist() for name in ("qa_v1.parquet", "qa_v2.parquet")
    )

    def contains(row: dict[str, object]) -> bool:
        return str(row["groundTruth"]) in str(row["output"])

    lost = [a for a, b in zip(v1, v2, strict=True) if contains(a) and not contains(b)]
    gained = [a for a, b in zip(v1, v2, strict=True) if not contains(a) and contains(b)]
    assert len(lost) >= 20
    assert 0 < len(gained) < len(lost) / 2
    assert all(row["metadata"]["category"] in REGRESSED_CATEGORIES for row in lost)
    assert all(row["metadata"]["category"] not in REGRESSED_CATEGORIES for row in gained)

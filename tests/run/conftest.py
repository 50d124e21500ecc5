from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import Scorer, create_scorer

QA: list[dict[str, Any]] = [
    {"input": "What is 2+2?", "groundTruth": "4", "output": "4"},
    {"input": "Capital of France?", "groundTruth": "Paris", "output": "Paris"},
    {"input": "Largest planet?", "groundTruth": "Jupiter", "output": "Saturn"},
    {"input": "bad: Boiling point of water?", "groundTruth": "100", "output": "100"},
    {"input": "Author of Hamlet?", "groundTruth": "Shakespeare", "output": "Shakespeare"},
    {"input": "bad: Speed of light?", "groundTruth": "c", "output": "fast"},
]


@pytest.fixture
def qa_path(tmp_path: Path) -> Path:
    path = tmp_path / "qa.parquet"
    pq.write_table(pa.Table.from_pylist(QA), path)
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "evalkit.duckdb"


def exact_scorer() -> Scorer:
    return create_scorer("Exact", id="exact").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )


def flaky_scorer() -> Scorer:
    """Scores 0.5, then fails at generate_reason on inputs starting with 'bad:'."""

    def reason(run: Any) -> str:
        if run.input.startswith("bad:"):
            raise RuntimeError("reason exploded")
        return "fine"

    return (
        create_scorer("Flaky", id="flaky")
        .generate_score(lambda run: 0.5 if run.input.startswith("bad:") else 1.0)
        .generate_reason(reason)
    )

"""The store-level item diff: real runs into a real DuckDB store, queried read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import run_evals
from evalkit.compare import diff_items
from evalkit.errors import ConfigError, StoreError
from evalkit.scorers import get_scorer

CATS = ("billing", "account", "math")


def _rows(version: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(30):
        cat = CATS[i % 3]
        out = "yes"
        if version == 2 and cat == "billing":
            out = "no idea"  # every billing item drops
        if version == 2 and i == 3:
            out = "yes"
        if version == 1 and i == 5:
            out = "wrong"  # one math item improves in v2
        meta = {"category": cat, "nested": {"k": i % 2}}
        row = {"id": f"q{i:02d}", "input": f"question {i} <b>", "groundTruth": "yes"}
        rows.append({**row, "output": out, "metadata": meta})
    return rows


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    import anyio

    path = tmp_path_factory.mktemp("diff") / "evalkit.duckdb"

    async def both() -> tuple[str, str]:
        ids = []
        v2 = _rows(2)
        scorers = [get_scorer("exact_match", id="exact"), get_scorer("contains", id="contains")]
        for version, rows in ((1, _rows(1)), (2, [*v2[:-1], {**v2[-1], "id": "new"}])):
            result = await run_evals(
                rows, scorers, store=path, experiment=f"v{version}", progress=False
            )
            ids.append(result.experiment_id)
        return ids[0], ids[1]

    base, cand = anyio.run(both)
    return path, base, cand


def test_drops_come_first_with_both_outputs(store: tuple[Path, str, str]) -> None:
    path, base, cand = store
    diff = diff_items(path, base, cand, slices=["category"])
    # 10 billing items minus q03 (unchanged) -> 9 items x 2 scorers drop; q05 improves for
    # both scorers; q29 is in v1 only, "new" in v2 only.
    assert diff.total == 20
    assert (diff.dropped, diff.improved) == (18, 2)  # over every page, not just this one
    assert diff_items(path, base, cand, scorer="exact", limit=1).dropped == 9
    assert diff.only_in_baseline == 1
    assert diff.only_in_candidate == 1
    first = diff.pairs.iloc[0]
    assert first["delta"] == -1.0
    assert first["baseline_output"] == '"yes"'
    assert first["candidate_output"] == '"no idea"'
    assert first["input"].startswith('"question')
    assert first["baseline_reason"]
    assert first["candidate_reason"]
    assert set(diff.pairs["slice:category"][:18]) == {"billing"}
    assert list(diff.pairs["improvement"][-2:]) == [1.0, 1.0]


def test_filters(store: tuple[Path, str, str]) -> None:
    path, base, cand = store
    improved = diff_items(path, base, cand, improved=True)
    assert improved.total == 2
    assert set(improved.pairs["item_id"]) == {"q05"}
    dropped = diff_items(path, base, cand, dropped=True, scorer="exact")
    assert dropped.total == 9
    assert set(dropped.pairs["scorer_id"]) == {"exact"}
    billing = diff_items(path, base, cand, slice_key="category", slice_value="billing")
    assert billing.total == 18
    assert diff_items(path, base, cand, slice_key="category", slice_value="math").total == 2
    nested = diff_items(path, base, cand, slice_key="nested.k", slice_value="1")
    assert nested.total == 10  # the odd billing items q09, q15, q21, q27, and q05
    assert diff_items(path, base, cand, search="QUESTION 5 <").total == 2
    assert diff_items(path, base, cand, search="no such text").total == 0
    everything = diff_items(path, base, cand, changed_only=False, limit=None)
    assert everything.total == len(everything.pairs) == 29 * 2


def test_pages_do_not_overlap(store: tuple[Path, str, str]) -> None:
    path, base, cand = store
    seen: list[tuple[str, str]] = []
    for offset in range(0, 20, 5):
        page = diff_items(path, base, cand, offset=offset, limit=5)
        assert page.total == 20
        seen += list(zip(page.pairs["item_id"], page.pairs["scorer_id"], strict=True))
    assert len(seen) == len(set(seen)) == 20
    beyond = diff_items(path, base, cand, offset=100, limit=5)
    assert beyond.total == 20
    assert beyond.pairs.empty


def test_on_an_open_read_only_connection(store: tuple[Path, str, str]) -> None:
    path, base, cand = store
    with duckdb.connect(str(path), read_only=True) as con:
        diff = diff_items(con, base, cand, order="item", limit=3)
    assert list(zip(diff.pairs["item_id"], diff.pairs["scorer_id"], strict=True)) == [
        ("q00", "contains"), ("q00", "exact"), ("q05", "contains")]  # fmt: skip


def test_hostile_filter_values_are_parameters(store: tuple[Path, str, str]) -> None:
    path, base, cand = store
    nasty = "x' OR 1=1; DROP TABLE scores; --"
    assert diff_items(path, base, cand, search=nasty).total == 0
    assert diff_items(path, base, cand, slice_key=nasty, slice_value=nasty).total == 0
    assert diff_items(path, base, cand, scorer=nasty).total == 0
    assert diff_items(path, base, cand).total == 20


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"order": "random"}, "order must be one of"),
        ({"offset": -1}, "offset must be"),
        ({"limit": "ten"}, "limit must be"),
        ({"slice_key": "category"}, "slice_key and slice_value"),
    ],
)
def test_bad_options(store: tuple[Path, str, str], options: dict[str, Any], message: str) -> None:
    path, base, cand = store
    with pytest.raises(ConfigError, match=message):
        diff_items(path, base, cand, **options)


def test_unknown_experiment(store: tuple[Path, str, str]) -> None:
    path, base, _ = store
    with pytest.raises(StoreError, match="nope"):
        diff_items(path, base, "nope")


async def test_experiment_result_diff_uses_the_declared_slices(tmp_path: Path) -> None:
    path = tmp_path / "evalkit.duckdb"
    scorer = [get_scorer("exact_match", id="exact")]
    base = await run_evals(_rows(1), scorer, store=path, progress=False, slices=["category"])
    cand = await run_evals(_rows(2), scorer, store=path, progress=False, slices=["category"])
    assert cand.slices == ("category",)
    assert cand.config["slices"] == ["category"]
    diff = cand.diff(base)
    assert diff.total == 10
    assert "slice:category" in diff.pairs.columns
    assert cand.diff(base.experiment_id, improved=True).total == 1
    memory = await run_evals(_rows(2), scorer, store=None, progress=False)
    with pytest.raises(ConfigError, match="no store"):
        memory.diff(base)


async def test_bad_slices_fail_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="slices"):
        await run_evals(_rows(1), [get_scorer("exact_match")], store=None, progress=False,
                        slices="category")  # fmt: skip

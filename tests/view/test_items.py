"""The run page's item table over a store with failed targets: *failed only* counts them
(their items ran no scorer), and a target's failure group links to its items."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from multidict import MultiDict

from evalkit.view._items import Params, group_key, run_page
from tests.cli.conftest import run_cli

TARGET = """
def answer(input, request_context=None):
    n = int(input[1:])
    if n % 10 == 3:
        raise TimeoutError(f"upstream took {n * 7} ms")
    if n % 10 == 7:
        raise ValueError("no answer")
    return input.upper()
"""


def _store(folder: Path) -> tuple[Path, str]:
    pd.DataFrame(
        {
            "id": [f"r{i:02d}" for i in range(30)],
            "input": [f"q{i}" for i in range(30)],
            "groundTruth": [f"Q{i}" for i in range(30)],
        }
    ).to_parquet(folder / "data.parquet")
    (folder / "flaky.py").write_text(TARGET, encoding="utf-8")
    (folder / "flaky.toml").write_text(
        """
[experiment]
name = "flaky"
dataset = "data.parquet"
store = "evalkit.duckdb"

[target]
type = "python"
callable = "flaky:answer"

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )
    done = run_cli("run", "flaky.toml", "--no-progress", "--json", cwd=folder)
    assert done.code in (0, 1), done.stderr
    return folder / "evalkit.duckdb", str(json.loads(done.stdout)["experiment_id"])


def _ids(page: dict[str, object]) -> list[str]:
    items = page["items"]
    assert isinstance(items, dict)
    return [row["item_id"] for row in items["rows"]]


def test_failed_targets_are_failed_items_and_their_groups_link_to_them(tmp_path: Path) -> None:
    store, run = _store(tmp_path)
    failed = run_page(store, run, Params(failed=True))
    assert _ids(failed) == ["r03", "r07", "r13", "r17", "r23", "r27"]
    # A failed target ran no scorer: the item failed for the one scorer chosen too.
    assert _ids(run_page(store, run, Params(failed=True, scorer="exact_match"))) == _ids(failed)
    row = failed["items"]["rows"][0]
    assert row["target_error"] == "TimeoutError"
    assert row["scores"] == {}

    groups = {g["error_name"]: g for g in failed["failure_groups"]}
    assert groups["TimeoutError"]["scorer_id"] == "(target)"
    assert groups["TimeoutError"]["count"] == 3
    # The link the page carries, read back as the page reads it.
    for name, expected in (("TimeoutError", ["r03", "r13", "r23"]),
                           ("ValueError", ["r07", "r17", "r27"])):  # fmt: skip
        params = Params.from_query(MultiDict(group=group_key(groups[name])))
        assert params.group is not None
        assert _ids(run_page(store, run, params)) == expected
    # Items that are scored: the others, and only those, have a score range.
    scored = run_page(store, run, Params(min=0.0, max=1.0, sort="-item"))
    assert len(_ids(scored)) == 24
    assert _ids(scored)[0] == "r29"

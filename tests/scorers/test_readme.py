from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalkit import get_scorer, list_scorers

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("info", list_scorers(kind="code"), ids=lambda info: info.name)
def test_every_code_scorer_has_a_readme_row_with_its_params(info) -> None:  # type: ignore[no-untyped-def]
    rows = re.findall(rf"^\| `{info.name}` \|(.*)$", README, flags=re.MULTILINE)
    assert len(rows) == 1, f"{info.name}: expected one row in the README table"
    cells = [cell.strip() for cell in rows[0].split(" | ")]
    assert cells[2] == ("higher" if info.higher_is_better else "lower")
    for param in info.params:
        assert f"`{param.name}`" in cells[3], f"{info.name}: {param.name} missing from the README"
    if info.extra:
        assert f"`[{info.extra}]`" in cells[4]


async def test_the_readme_example() -> None:
    exact = get_scorer("exact_match", ignore_case=True)
    result = await exact.run(input="Capital of France?", output=" paris", ground_truth="Paris")
    assert (result.score, result.reason) == (1.0, "The output matches the ground truth.")
    assert (exact.id, exact.higher_is_better) == ("exact-match", True)
    assert exact.metadata["prebuilt"] == "exact_match"

"""The prebuilt scorers' reference page (docs/pages/reference/scorers.md) and its examples.

The page's tables are generated from the registry by docs/hooks.py when the site is built; these
tests render them as the build does and check each scorer is there with what it needs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalkit import Judge, get_scorer, list_scorers
from evalkit.testing import FakeOpenAIServer, Rule
from tests.docs_hooks import load_hooks

DOCS = Path(__file__).parents[2] / "docs"
PAGE = (DOCS / "pages" / "reference" / "scorers.md").read_text(encoding="utf-8")


RENDERED = load_hooks().on_page_markdown(PAGE)


def test_the_page_asks_for_both_generated_tables() -> None:
    assert "<!-- evalkit:scorers code -->" in PAGE
    assert "<!-- evalkit:scorers llm -->" in PAGE
    assert "<!-- evalkit:" not in RENDERED


@pytest.mark.parametrize("info", list_scorers(), ids=lambda info: info.name)
def test_every_scorer_has_a_row_and_its_params_on_the_page(info) -> None:  # type: ignore[no-untyped-def]
    rows = re.findall(
        rf"^\| \[`{info.name}`\]\(#{info.name}\) \|(.*)$", RENDERED, flags=re.MULTILINE
    )
    assert len(rows) == 1, f"{info.name}: expected one row in the scorers table"
    cells = [cell.strip() for cell in rows[0].split(" | ")]
    assert cells[2] == ("higher" if info.higher_is_better else "lower")
    if info.extra:
        assert f"`[{info.extra}]`" in cells[4]
    section = RENDERED.split(f"#### `{info.name}` {{ #{info.name} }}", 1)[1].split("\n#", 1)[0]
    for param in info.params:
        assert f"| `{param.name}` |" in section, f"{info.name}: {param.name} missing from the page"


async def test_the_page_example() -> None:
    exact = get_scorer("exact_match", ignore_case=True)
    result = await exact.run(input="Capital of France?", output=" paris", ground_truth="Paris")
    assert (result.score, result.reason) == (1.0, "The output matches the ground truth.")
    assert (exact.id, exact.higher_is_better) == ("exact_match", True)
    assert exact.metadata["prebuilt"] == "exact_match"


async def test_the_llm_page_example(judge: Judge, server: FakeOpenAIServer) -> None:
    server.add_rule(Rule("Split the answer", reply={"statements": ["Paris.", "I like trains."]}))
    verdicts = [
        {"statement": "Paris.", "reason": "answers", "verdict": "yes"},
        {"statement": "I like trains.", "reason": "unrelated", "verdict": "no"},
    ]
    server.add_rule(Rule("Decide, for each", reply={"verdicts": verdicts}))
    server.add_rule(Rule("Explain an answer relevancy", reply="The score is 0.5 because ..."))
    relevancy = get_scorer("answer_relevancy", judge=judge)
    result = await relevancy.run(
        input="What is the capital of France?", output="Paris. I like trains."
    )
    assert (result.score, result.reason) == (0.5, "The score is 0.5 because ...")
    assert result.preprocess_step_result == {"statements": ["Paris.", "I like trains."]}
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == ["yes", "no"]
    usage = result.judge["analyze"].executions[0].usage
    assert usage is not None
    assert (usage.total_tokens or 0) > 0

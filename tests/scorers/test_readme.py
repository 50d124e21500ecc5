from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalkit import Judge, get_scorer, list_scorers
from evalkit.testing import FakeOpenAIServer, Rule

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


# Documented once, above the LLM-judged scorers' table, rather than in every row.
COMMON_LLM_PARAMS = {"scale", "explain"}


@pytest.mark.parametrize("info", list_scorers(), ids=lambda info: info.name)
def test_every_scorer_has_a_readme_row_with_its_params(info) -> None:  # type: ignore[no-untyped-def]
    rows = re.findall(rf"^\| `{info.name}` \|(.*)$", README, flags=re.MULTILINE)
    assert len(rows) == 1, f"{info.name}: expected one row in the README table"
    cells = [cell.strip() for cell in rows[0].split(" | ")]
    assert cells[2] == ("higher" if info.higher_is_better else "lower")
    for param in info.params:
        if info.kind == "llm" and param.name in COMMON_LLM_PARAMS:
            continue
        assert f"`{param.name}`" in cells[3], f"{info.name}: {param.name} missing from the README"
    if info.extra:
        assert f"`[{info.extra}]`" in cells[4]


async def test_the_readme_example() -> None:
    exact = get_scorer("exact_match", ignore_case=True)
    result = await exact.run(input="Capital of France?", output=" paris", ground_truth="Paris")
    assert (result.score, result.reason) == (1.0, "The output matches the ground truth.")
    assert (exact.id, exact.higher_is_better) == ("exact-match", True)
    assert exact.metadata["prebuilt"] == "exact_match"


async def test_the_llm_readme_example(judge: Judge, server: FakeOpenAIServer) -> None:
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
    assert result.judge["analyze"].executions[0].usage.total_tokens > 0

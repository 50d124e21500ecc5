"""``Scorer.judges``: the judges a scorer's prompt steps will ask (what a run checks first)."""

from __future__ import annotations

from evalkit import Judge, PromptStep, create_scorer
from evalkit.scorers import get_scorer


def test_each_prompt_step_contributes_its_effective_judge_once() -> None:
    base = Judge("base-model", base_url="http://a/v1")
    scorer = (
        create_scorer("mixed", judge=base)
        .preprocess(lambda run: 1)
        .analyze(PromptStep("a", lambda: "p", output_schema={"type": "object"}))
        .generate_score(PromptStep("s", lambda: "p", judge=Judge(base_url="http://b/v1")))
        .generate_reason(PromptStep("r", lambda: "p"))
    )
    assert scorer.judges == (base, Judge("base-model", base_url="http://b/v1"))


def test_function_steps_and_judges_without_a_model_ask_no_judge() -> None:
    assert create_scorer("plain").generate_score(lambda: 1.0).judges == ()
    modelless = create_scorer("m").generate_score(PromptStep("s", lambda: "p"))
    assert modelless.judges == ()


def test_prebuilt_llm_scorers_report_their_judge() -> None:
    judge = Judge("grader", base_url="http://g/v1", api_key_env="GRADER_KEY")
    (found,) = get_scorer("llm_rubric", rubric="Numbers only.", judge=judge).judges
    assert (found.model, found.base_url, found.api_key_env) == (
        "grader",
        "http://g/v1",
        "GRADER_KEY",
    )

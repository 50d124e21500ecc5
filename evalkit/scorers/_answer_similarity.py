"""``answer_similarity``: whether the output says what the ground truth says (LLM-judged).

After Mastra's answer similarity scorer: the judge splits the output and the ground truth into
semantic units (preprocess), matches each ground-truth unit in the output and lists
contradictions and extra information (analyze); the score, with its bonus and penalties, is
computed in code and the judge explains it. Bump the registry ``version`` whenever a prompt
below changes.
"""

from __future__ import annotations

from string import Template
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, ground_truth
from evalkit.scorers._judged import (
    EmptyExtraction,
    Extraction,
    JudgeStep,
    Listed,
    check_scale,
    check_weight,
    finish,
    is_blank,
    lowercase,
    numbered,
    round_score,
    show,
)
from evalkit.scorers._registry import prebuilt

#: Mastra caps the extra-information penalty at 0.2, whatever the per-item penalty.
MAX_EXTRA_INFO_PENALTY = 0.2

INSTRUCTIONS = """\
You compare the answers of an AI assistant with reference answers, for automated regression \
tests. You judge semantic equivalence, not wording: different phrasings of the same \
information match. You notice reference information the answer leaves out and answer \
information that contradicts the reference. Be strict but fair: partial matches get partial \
credit. Follow the output format you are asked for exactly."""

EXTRACT = Template("""\
Split both texts below into semantic units: the smallest pieces of information that can be \
compared on their own (a fact, a value, a named entity with what is said of it).

- Keep each unit's meaning complete; split lists and compound sentences.
- An empty text has no units.

Example: "Paris is the capital of France, with 2.1 million inhabitants" gives ["Paris is the \
capital of France", "Paris has 2.1 million inhabitants"].

<answer>
$output
</answer>

<reference>
$ground_truth
</reference>

Answer with JSON: {"output_units": [...], "ground_truth_units": [...]}""")

ANALYZE = Template("""\
Compare the answer's units with the reference's units.

For each numbered reference unit, find its best match among the answer units:
- "exact": the same information, worded the same or almost.
- "semantic": the same information, worded differently.
- "partial": part of the information, or less precise.
- "missing": the answer does not give it (output_unit is null).

Then list the answer units that say something the reference does not (extra_in_output), and \
every answer unit that contradicts a reference unit (contradictions).

<reference_units count="$count">
$ground_truth_units
</reference_units>

<answer_units>
$output_units
</answer_units>

Give exactly one match per reference unit, in the same order ($count in all).
Answer with JSON: {"matches": [{"ground_truth_unit": "...", "output_unit": "..." | null, \
"explanation": "...", "match_type": "exact" | "semantic" | "partial" | "missing"}], \
"extra_in_output": ["..."], "contradictions": [{"output_unit": "...", "ground_truth_unit": \
"...", "explanation": "..."}]}""")

REASON = Template("""\
Explain an answer similarity score of $score, on a scale from 0 to $scale (the answer says \
what the reference says), to the developer of the assistant. Each reference unit scores 1 + \
$bonus when matched exactly, $semantic semantically, half that partially, and -$missing when \
missing, out of 1 + $bonus each; each contradiction subtracts $contradiction and each extra \
piece of information $extra (at most $max_extra in all).

<answer>
$output
</answer>

<reference>
$ground_truth
</reference>

<matches>
$matches
</matches>

<contradictions>
$contradictions
</contradictions>

<extra_in_output>
$extra_in_output
</extra_in_output>

Write two or three sentences of plain text starting with "The score is $score because". Say \
what is missing or contradicted, if anything; use the given score, do not recompute it.""")

BOTH_EMPTY = "The score is 1 because the output and the ground truth are both empty."
NO_UNITS = "The score is 0 because the ground truth has no information to compare with."


class Units(BaseModel):
    """The semantic units of the answer and of the reference."""

    output_units: list[str] = Field(description="The answer's units, in order.")
    ground_truth_units: list[str] = Field(description="The reference's units, in order.")


class Match(BaseModel):
    """How one reference unit is matched in the answer."""

    ground_truth_unit: str
    output_unit: str | None = Field(description="The matching answer unit; null if missing.")
    explanation: str
    match_type: Annotated[
        Literal["exact", "semantic", "partial", "missing"], BeforeValidator(lowercase)
    ]


class Contradiction(BaseModel):
    """An answer unit contradicting a reference unit."""

    output_unit: str
    ground_truth_unit: str
    explanation: str


class Comparison(BaseModel):
    """The matches of the reference units, extra information and contradictions."""

    matches: list[Match]
    extra_in_output: list[str]
    contradictions: list[Contradiction]


@prebuilt(
    "answer_similarity",
    title="Answer Similarity",
    kind="llm",
    inputs=("output", "ground_truth"),
    version=2,
)
def answer_similarity(
    scorer: Scorer,
    *,
    semantic_weight: float = 0.8,
    exact_match_bonus: float = 0.2,
    missing_penalty: float = 0.15,
    contradiction_penalty: float = 1.0,
    extra_info_penalty: float = 0.05,
    scale: float = 1.0,
    explain: bool = True,
    empty_extraction: EmptyExtraction = "fail",
) -> Scorer:
    """How closely the output's meaning matches the ground truth (LLM-judged, with penalties).

    Range 0 to ``scale``, higher is better. After Mastra's answer similarity scorer: the judge
    splits output and ground truth into semantic units, then matches each ground-truth unit
    ``exact`` (1 + exact_match_bonus), ``semantic`` (semantic_weight), ``partial`` (half of
    semantic_weight) or ``missing`` (- missing_penalty) and lists contradictions and extra
    information. Score = clamp(sum / (units * (1 + exact_match_bonus)) - contradiction_penalty
    * contradictions - min(extra_info_penalty * extras, 0.2), 0, 1) * scale, rounded to two
    decimals: exact, semantic and missing matches with one extra give (1.2 + 0.8 - 0.15) / 3.6
    - 0.05 = 0.46. An empty ground truth scores 1 against an empty output and 0 against
    another, without judge calls; a non-empty output or ground truth in which the judge finds
    no unit is asked once more, then fails the run (``empty_extraction="score"`` scores it as
    extracted). A missing ground truth fails with ``ScorerInputError``. Non-string values are
    judged as JSON text.

    Args:
        semantic_weight: Credit for a semantic match (Mastra's ``semanticThreshold``).
        exact_match_bonus: Extra credit for an exact match, above 1.
        missing_penalty: Subtracted per ground-truth unit missing from the output.
        contradiction_penalty: Subtracted from the normalised score per contradiction.
        extra_info_penalty: Subtracted per extra piece of information (at most 0.2 in all).
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
        empty_extraction: When the judge finds no unit in a non-empty output or ground
            truth twice: ``"fail"`` the run, or ``"score"`` what it extracted.
    """
    name = "answer_similarity"
    check_scale(name, scale)
    for param, value in (
        ("semantic_weight", semantic_weight),
        ("exact_match_bonus", exact_match_bonus),
        ("missing_penalty", missing_penalty),
        ("contradiction_penalty", contradiction_penalty),
        ("extra_info_penalty", extra_info_penalty),
    ):
        check_weight(name, param, value)
    credit = {
        "exact": 1.0 + exact_match_bonus,
        "semantic": semantic_weight,
        "partial": semantic_weight * 0.5,
        "missing": -missing_penalty,
    }

    def texts(run: ScorerRun) -> tuple[str, str]:
        return as_text(run.output), as_text(ground_truth(run, name))

    def skip_extract(run: ScorerRun) -> dict[str, Any] | None:
        output, reference = texts(run)
        if is_blank(reference):
            return {
                "output_units": [output] if not is_blank(output) else [],
                "ground_truth_units": [],
            }
        return None

    def units(results: StepResults) -> dict[str, list[str]]:
        pre: dict[str, list[str]] = results.preprocess_step_result
        return pre

    def score(results: StepResults) -> float:
        if not units(results)["ground_truth_units"]:
            return 0.0 if units(results)["output_units"] else round_score(scale)
        analysis = results.analyze_step_result
        matches = analysis["matches"]
        if not matches:
            return 0.0
        total = sum(credit[match["match_type"]] for match in matches)
        value = total / (len(matches) * (1.0 + exact_match_bonus))
        value -= contradiction_penalty * len(analysis["contradictions"])
        value -= min(extra_info_penalty * len(analysis["extra_in_output"]), MAX_EXTRA_INFO_PENALTY)
        return round_score(min(1.0, max(0.0, value)) * scale)

    extract = JudgeStep(
        "Split output and ground truth into semantic units",
        lambda run: EXTRACT.substitute(output=texts(run)[0], ground_truth=texts(run)[1]),
        instructions=INSTRUCTIONS,
        output_schema=Units,
        skip=skip_extract,
        extraction=Extraction(
            (
                Listed("output_units", lambda run: texts(run)[0]),
                Listed("ground_truth_units", lambda run: texts(run)[1], "ground truth"),
            ),
            empty_extraction,
        ),
    )
    compare = JudgeStep(
        "Match the ground truth's units in the output",
        lambda results: ANALYZE.substitute(
            count=len(units(results)["ground_truth_units"]),
            ground_truth_units=numbered(units(results)["ground_truth_units"]),
            output_units=numbered(units(results)["output_units"]),
        ),
        instructions=INSTRUCTIONS,
        output_schema=Comparison,
        skip=lambda results: (
            {"matches": [], "extra_in_output": [], "contradictions": []}
            if not units(results)["ground_truth_units"]
            else None
        ),
    )

    def reason_prompt(run: ScorerRun, results: StepResults, score: float) -> str:
        analysis = results.analyze_step_result
        output, reference = texts(run)
        return REASON.substitute(
            score=show(score),
            scale=show(scale),
            bonus=show(exact_match_bonus),
            semantic=show(semantic_weight),
            missing=show(missing_penalty),
            contradiction=show(contradiction_penalty),
            extra=show(extra_info_penalty),
            max_extra=show(MAX_EXTRA_INFO_PENALTY),
            output=output,
            ground_truth=reference,
            matches=numbered(
                [
                    f"[{m['match_type']}] {m['ground_truth_unit']}: {m['explanation']}"
                    for m in analysis["matches"]
                ]
            ),
            contradictions=numbered(
                [f"{c['output_unit']}: {c['explanation']}" for c in analysis["contradictions"]]
            ),
            extra_in_output=numbered(analysis["extra_in_output"]),
        )

    def no_units(results: StepResults) -> str | None:
        if units(results)["ground_truth_units"]:
            return None
        return NO_UNITS if units(results)["output_units"] else BOTH_EMPTY

    reason = JudgeStep("Explain the score", reason_prompt, instructions=INSTRUCTIONS, skip=no_units)
    return finish(scorer.preprocess(extract).analyze(compare), score, reason, explain=explain)

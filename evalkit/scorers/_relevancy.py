"""``answer_relevancy``: how much of the answer addresses the question (LLM-judged).

After Mastra's answer relevancy scorer: the judge splits the answer into statements
(preprocess), marks each yes / unsure / no for relevance to the question (analyze), the score
is computed in code (generate_score) and the judge explains it (generate_reason). Bump the
registry ``version`` whenever a prompt below changes.
"""

from __future__ import annotations

from string import Template

from pydantic import BaseModel, Field

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text
from evalkit.scorers._extract_then_judge import extract_then_judge
from evalkit.scorers._judged import (
    EmptyExtraction,
    OnePerItem,
    Statements,
    YesNoUnsure,
    check_scale,
    check_weight,
    numbered,
    share_of_yes,
    show,
    verdict_lines,
    verdicts_of,
)
from evalkit.scorers._registry import prebuilt

INSTRUCTIONS = """\
You evaluate whether the answers of an AI assistant are relevant to the question they were \
given. You judge relevance only, never factual correctness: a wrong answer to the question \
asked is still about the question. Answers can be partly relevant. Empty answers and error \
messages are not relevant. Follow the output format you are asked for exactly."""

EXTRACT = Template("""\
Split the answer below into its statements.

- A statement is one self-contained assertion, question, instruction or remark.
- Split sentences that join several facts (with "and", or as a list), but keep each fact with \
the context it needs to be understood.
- A one-word answer, or an error message, is a single statement.
- Keep the answer's wording; do not add, merge or drop statements.
- An empty answer has no statements.

Example answer: "Paris is the capital of France and its largest city. Want more facts?"
Example JSON: {"statements": ["Paris is the capital of France.", \
"Paris is the largest city of France.", "Want more facts?"]}

<answer>
$output
</answer>

Answer with JSON: {"statements": [...]}""")

ANALYZE = Template("""\
Decide, for each numbered statement below, whether it is relevant to the question.

- "yes": it answers the question, or states exactly what the question asks for (a place for \
"where", a person for "who", a quantity for "how much"), even if it may be wrong.
- "unsure": partly relevant: it is about the kind of information asked for without answering, \
mentions related entities without saying how they answer, or is an incorrect answer that shows \
the question was understood.
- "no": it has no connection with what is asked: another subject, only general facts about the \
subject that do not touch the question, or empty or meaningless content.

Example question: "What colour is the sky during the day?"
- "The sky is blue during the day." → yes
- "The sky is full of clouds." → unsure (about the sky, not its colour)
- "I had breakfast today." → no

<question>
$input
</question>

<statements count="$count">
$statements
</statements>

Give exactly one verdict per statement, in the same order ($count in all).
Answer with JSON: {"verdicts": [{"statement": "...", "reason": "...", "verdict": \
"yes" | "unsure" | "no"}]}""")

REASON = Template("""\
Explain an answer relevancy score of $score, on a scale from 0 (irrelevant) to $scale (fully \
relevant), to the developer of the assistant.

The score is the share of the answer's statements relevant to the question; a statement \
judged "unsure" counts $weight of a relevant one.

<question>
$input
</question>

<answer>
$output
</answer>

<verdicts>
$verdicts
</verdicts>

Write two or three sentences of plain text starting with "The score is $score because". Name \
what is relevant and what is not; use the given score, do not recompute it; do not judge \
correctness.""")

NO_STATEMENTS = "The score is 0 because the output has no statements to judge."


class Verdict(BaseModel):
    """The relevance of one statement to the question."""

    statement: str = Field(description="The statement judged.")
    reason: str = Field(description="Why it is or is not relevant.")
    verdict: YesNoUnsure = Field(description='"yes", "unsure" or "no".')


class Verdicts(OnePerItem):
    """One verdict per statement, in order."""

    verdicts: list[Verdict]


@prebuilt(
    "answer_relevancy",
    title="Answer Relevancy",
    kind="llm",
    inputs=("input", "output"),
    version=2,
)
def answer_relevancy(
    scorer: Scorer,
    *,
    uncertainty_weight: float = 0.3,
    scale: float = 1.0,
    explain: bool = True,
    empty_extraction: EmptyExtraction = "fail",
) -> Scorer:
    """How much of the output addresses the question in the input (LLM-judged).

    Range 0 to ``scale``, higher is better. After Mastra's answer relevancy scorer: the judge
    splits the output into statements, then marks each ``yes`` (relevant), ``unsure`` (partly)
    or ``no`` for relevance to the input, not correctness. Score = (yes + uncertainty_weight *
    unsure) / statements * scale, rounded to two decimals: 3 yes, 1 unsure and 1 no give
    (3 + 0.3) / 5 = 0.66. A reply without exactly one verdict per statement is asked once
    more, then fails the run. An empty output scores 0 without a judge call; a non-empty
    output in which the judge finds no statement is asked once more, then fails the run
    (``empty_extraction="score"`` scores it 0). Non-string outputs are judged as JSON text.

    Args:
        uncertainty_weight: How much an ``unsure`` verdict counts, 0 to 1.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
        empty_extraction: When the judge finds no statement in a non-empty output twice:
            ``"fail"`` the run, or ``"score"`` it 0.
    """
    check_weight("answer_relevancy", "uncertainty_weight", uncertainty_weight)
    check_scale("answer_relevancy", scale)

    def reason_prompt(run: ScorerRun, results: StepResults, score: float) -> str:
        return REASON.substitute(
            score=show(score),
            scale=show(scale),
            weight=show(uncertainty_weight),
            input=as_text(run.input),
            output=as_text(run.output),
            verdicts=verdict_lines(verdicts_of(results)),
        )

    return extract_then_judge(
        scorer,
        field="statements",
        found=Statements,
        text=lambda run: as_text(run.output),
        whose="output",
        extract_step="Split the output into statements",
        extract=lambda text: EXTRACT.substitute(output=text),
        judge_step="Judge each statement's relevance to the input",
        judge=lambda run, found: ANALYZE.substitute(
            input=as_text(run.input), count=len(found), statements=numbered(found)
        ),
        verdicts=Verdicts,
        instructions=INSTRUCTIONS,
        score=lambda given: share_of_yes(given, scale, unsure=uncertainty_weight),
        reason=reason_prompt,
        nothing=NO_STATEMENTS,
        explain=explain,
        empty_extraction=empty_extraction,
    )

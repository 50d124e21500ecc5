"""A first scorer: the reference Quality Scorer, run on two answers.

Run with ``python experiments/quality_scorer.py``.
"""

from __future__ import annotations

import anyio

from evalkit import create_scorer

quality = (
    create_scorer(name="Quality Scorer", description="Evaluates response quality")
    .preprocess(lambda run: {"word_count": len(run.output.split())})
    .analyze(lambda results: {"has_substance": results.preprocess_step_result["word_count"] > 10})
    .generate_score(lambda results: 1.0 if results.analyze_step_result["has_substance"] else 0.0)
    .generate_reason(
        lambda score, results: (
            f"Score: {score}. {results.preprocess_step_result['word_count']} words."
        )
    )
)


async def main() -> None:
    answers = [
        "Machine learning is a subset of artificial intelligence that learns from data.",
        "It is AI.",
    ]
    for answer in answers:
        result = await quality.run(input="What is machine learning?", output=answer)
        print(f"{result.score:.1f}  {result.reason}  <- {answer!r}")


if __name__ == "__main__":
    anyio.run(main)

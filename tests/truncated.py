"""Two nights of one experiment whose second night's reasons were cut at the judge's token limit:
real runs against the shipped test server, for the reports' and ``evalkit diff``'s tests."""

from __future__ import annotations

from pathlib import Path

from evalkit import ExperimentResult, Judge, PromptStep, Scorer, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer, Rule

#: The reply the server cuts at its token limit (``finish_reason`` ``"length"``).
CUT_REPLY = "Because the answer names another"


def explained(judge: Judge) -> Scorer:
    """Exact match scored in code, explained by the judge (a plain-text generate_reason step)."""
    return (
        create_scorer("Explained", id="explained", judge=judge)
        .generate_score(lambda run: 1.0 if run.output == run.ground_truth else 0.0)
        .generate_reason(PromptStep("why", lambda score, run: f"Explain {score} for {run.output}"))
    )


async def two_nights(
    store: Path, judge: Judge, server: FakeOpenAIServer
) -> tuple[ExperimentResult, ExperimentResult]:
    """Night 1: q0-q3 right. Night 2 (threshold 0.9, missed): q0 and q1 wrong, and the judge's
    explanation of a wrong answer stops at its token limit, so their reasons are flagged
    truncated. Every item is labelled 1.0 (column ``human``): on night 2 the judge and the
    people disagree on q0 and q1."""
    server.add_rule(Rule("Explain 0.0", reply=CUT_REPLY, finish_reason="length"))
    server.add_rule(Rule("Explain", reply="It matches."))
    rows = [
        {"id": f"q{i}", "input": f"question {i}", "groundTruth": "a", "human": 1.0}
        for i in range(4)
    ]
    first = await run_evals(
        [{**row, "output": "a"} for row in rows],
        [explained(judge)],
        store=store, experiment="qa", progress=False, labels={"explained": "human"},
    )  # fmt: skip
    second = await run_evals(
        [{**row, "output": "b" if i < 2 else "a"} for i, row in enumerate(rows)],
        [explained(judge)],
        store=store, experiment="qa", progress=False, thresholds={"explained": 0.9},
        labels={"explained": "human"},
    )  # fmt: skip
    return first, second

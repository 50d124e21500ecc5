"""The public ``Step`` protocol: a step of one's own binds itself, as prompt steps do."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit import Judge, PromptStep, create_scorer, run_evals
from evalkit.scorer import BoundStep, RunTrace, ScorerRun, Step, StepName, StepOwner, StepResults


class Lookup:
    """A step answered from a table, keyed by the item's input; asks no judge."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        self.bound: list[tuple[StepName, str]] = []

    def bind(self, kind: StepName, owner: StepOwner) -> BoundStep:
        self.bound.append((kind, owner.name))

        async def step(
            run: ScorerRun, results: StepResults, score: float | None, trace: RunTrace
        ) -> Any:
            return self.table[run.input]

        return step

    def judge_for(self, default: Judge | None) -> Judge | None:
        return None


def test_prompt_steps_and_own_steps_are_steps_and_functions_are_not() -> None:
    assert isinstance(PromptStep("p", lambda: "x"), Step)
    assert isinstance(Lookup({}), Step)
    assert not isinstance(lambda run: 1.0, Step)


async def test_an_own_step_is_bound_once_and_run_per_item() -> None:
    lookup = Lookup({"a": 0.25, "b": 1.0})
    scorer = create_scorer(name="table", description="d").generate_score(lookup)
    assert lookup.bound == [("generate_score", "table")]
    assert (await scorer.run(input="a", output="x")).score == 0.25
    result = await run_evals(
        [{"input": "a", "output": "x"}, {"input": "b", "output": "y"}],
        scorers=[scorer],
        store=None,
    )
    scores = [item.outcomes[0].score for item in result.items]
    assert sorted(s for s in scores if s is not None) == [0.25, 1.0]  # a None drops one: unequal
    assert lookup.bound == [("generate_score", "table")]


def test_a_step_lists_the_judge_it_asks() -> None:
    judge = Judge(model="m", instructions="be fair")

    class Asks(Lookup):
        def judge_for(self, default: Judge | None) -> Judge | None:
            return default

    asking = create_scorer(name="s", description="d", judge=judge).generate_score(Asks({}))
    silent = create_scorer(name="t", description="d", judge=judge).generate_score(Lookup({}))
    assert asking.judges == (judge,)
    assert silent.judges == ()


def test_an_object_with_only_half_the_protocol_is_not_a_step() -> None:
    class Half:
        def bind(self, kind: str, owner: object) -> None: ...

    assert not isinstance(Half(), Step)
    with pytest.raises(Exception, match="must be a function or a PromptStep"):
        create_scorer(name="s", description="d").generate_score(Half())

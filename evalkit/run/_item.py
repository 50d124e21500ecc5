"""Evaluating one item: produce its output, then run every scorer on it, each isolated."""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from evalkit._json import json_text
from evalkit.dataset import Item
from evalkit.errors import ScorerRunError, StoreError, TargetError
from evalkit.run._checks import asks_judge, may_suspend
from evalkit.run._outcome import ErrorInfo, ItemResult, OutputSource, Repeat, ScorerOutcome
from evalkit.scorer import STEP_ORDER, Scorer, ScorerRunResult, StepName
from evalkit.store._stored import StoredOutput
from evalkit.target import DatasetOutput, Target


class ItemEvaluator:
    """Turns an [`Item`][evalkit.Item] into an [`ItemResult`][evalkit.ItemResult].

    A target failure fails the item (no scorer runs). A scorer failure is recorded in that
    scorer's outcome and touches nothing else. An item of a resumed experiment with a stored
    output (``outputs``) is scored on it: the target is not called again. Scorers that never
    wait (sync function steps) run one after the other without a task; when two or more
    scorers can wait on I/O, those run concurrently in a task group so an item's judge calls
    overlap (docs/pages/design/fixed-worker-pool.md). With ``repeats`` K > 1, every scorer
    that asks a judge runs K times on the pair at once, the K - 1 repeats with the judge
    cache off (docs/pages/how-to/judge-agreement.md, "Judge stability").
    """

    def __init__(
        self,
        target: Target,
        scorers: Sequence[Scorer],
        *,
        run_prefix: str,
        skip: Mapping[str, frozenset[str]] | None = None,
        outputs: Mapping[str, StoredOutput] | None = None,
        repeats: int = 1,
    ) -> None:
        self.target = target
        # Per item id, scorers not to run (pairs a resumed experiment already scored).
        self.skip = skip or {}
        # Per item id, the output an earlier pass stored, which the item's scores were
        # computed from: its remaining scorers see the same one.
        self.outputs = outputs or {}
        self.run_prefix = run_prefix
        self.from_dataset = isinstance(target, DatasetOutput)
        self.source: OutputSource = "dataset" if self.from_dataset else "target"
        self.scorers = tuple(scorers)
        self.steps: tuple[tuple[StepName, ...], ...] = tuple(
            tuple(k for k in STEP_ORDER if k in s.steps) for s in scorers
        )
        waiting = [i for i, s in enumerate(scorers) if may_suspend(s)]
        self.concurrent = tuple(waiting) if len(waiting) > 1 else ()
        self.inline = tuple(i for i in range(len(scorers)) if i not in self.concurrent)
        self.repeats = repeats
        self.repeated = frozenset(i for i, s in enumerate(scorers) if repeats > 1 and asks_judge(s))

    async def __call__(self, item: Item) -> ItemResult:
        """Evaluate ``item``; only cancellation escapes."""
        start = time.perf_counter()
        # Unique without a random draw per item: the experiment id is random, the index is not
        # (docs/pages/design/run-ids-by-row-index.md).
        run_id = f"{self.run_prefix}-{item.index}"
        stored = self.outputs.get(item.id) if self.outputs else None
        if stored is not None:
            output = stored.value
        elif self.from_dataset:
            output = item.output
        else:
            try:
                value = self.target(item)
                output = await value if inspect.isawaitable(value) else value
                _check_output(item, output)
            except Exception as exc:
                elapsed = (time.perf_counter() - start) * 1000
                return ItemResult(
                    item, run_id, "failed", None, self.source, ErrorInfo.from_exception(exc),
                    (), elapsed, elapsed, time.time_ns() // 1000,
                )  # fmt: skip
        target_ms = (time.perf_counter() - start) * 1000
        source = self.source
        if stored is not None:
            # Stored outputs are the target's (see read_outputs), timed by the call that made them.
            source = "target"
            target_ms = stored.target_ms if stored.target_ms is not None else target_ms
        outcomes: list[ScorerOutcome | None] = [None] * len(self.scorers)
        concurrent, inline = self.concurrent, self.inline
        skipped = self.skip.get(item.id) if self.skip else None
        if skipped:
            concurrent = tuple(i for i in concurrent if self.scorers[i].id not in skipped)
            inline = tuple(i for i in inline if self.scorers[i].id not in skipped)
        if concurrent:
            async with anyio.create_task_group() as tg:
                for i in concurrent:
                    tg.start_soon(self._score_into, outcomes, i, item, output, run_id)
                for i in inline:
                    outcomes[i] = await self._score(i, item, output, run_id)
        else:
            for i in inline:
                outcomes[i] = await self._score(i, item, output, run_id)
        done = tuple(o for o in outcomes if o is not None)
        ok = all(o.status == "success" for o in done)
        return ItemResult(
            item, run_id, "success" if ok else "failed", output, source, None, done,
            target_ms, (time.perf_counter() - start) * 1000, time.time_ns() // 1000,
        )  # fmt: skip

    async def _score_into(
        self, slots: list[ScorerOutcome | None], i: int, item: Item, output: object, run_id: str
    ) -> None:
        slots[i] = await self._score(i, item, output, run_id)

    async def _score(self, i: int, item: Item, output: object, run_id: str) -> ScorerOutcome:
        if i in self.repeated:
            return await self._score_repeated(i, item, output, run_id)
        return await self._score_once(i, item, output, run_id)

    async def _score_repeated(
        self, i: int, item: Item, output: object, run_id: str
    ) -> ScorerOutcome:
        """The pair's outcome (execution 0, through the judge cache) with its K - 1 repeats,
        all run at once."""
        from evalkit.judge import use_judge_cache  # only a judged scorer is repeated

        runs: list[ScorerOutcome | None] = [None] * self.repeats

        async def execute(k: int) -> None:
            if k == 0:
                runs[0] = await self._score_once(i, item, output, run_id)
                return
            async with use_judge_cache(None):  # a repeat asks the judge again
                runs[k] = await self._score_once(i, item, output, run_id)

        async with anyio.create_task_group() as tg:
            for k in range(self.repeats):
                tg.start_soon(execute, k)
        first, *more = runs
        assert first is not None
        repeats = tuple(Repeat.of(k, o) for k, o in enumerate(more, 1) if o is not None)
        return dataclasses.replace(first, repeats=repeats)

    async def _score_once(self, i: int, item: Item, output: object, run_id: str) -> ScorerOutcome:
        scorer = self.scorers[i]
        start = time.perf_counter()
        try:
            result = await scorer.run(
                input=item.input,
                output=output,
                ground_truth=item.ground_truth,
                request_context=item.request_context,
                run_id=run_id,
            )
        except Exception as exc:
            elapsed = (time.perf_counter() - start) * 1000
            return ScorerOutcome.failure(item.id, scorer.id, exc, elapsed)
        elapsed = (time.perf_counter() - start) * 1000
        unstorable = _unstorable_step(scorer, result, self.steps[i])
        if unstorable is not None:
            return ScorerOutcome.failure(item.id, scorer.id, unstorable, elapsed)
        return ScorerOutcome.success(item.id, scorer.id, result, self.steps[i], elapsed)


def _check_output(item: Item, output: object) -> None:
    """Raise [`TargetError`][evalkit.errors.TargetError] for an output the store cannot hold as JSON
    (nested past Python's recursion limit, or an object whose ``str()`` raises): the item fails
    here, where the output enters, instead of the batch of rows it would join (issue 30)."""
    if output is None or type(output) is str:  # always storable: not encoded twice per item
        return
    try:
        json_text(output)
    except Exception as exc:  # RecursionError, or anything a __str__ raises
        raise TargetError(
            f"the target's output for item {item.id!r} cannot be stored as JSON"
            f" ({type(exc).__name__}: {exc})"
        ) from exc


def _unstorable_step(
    scorer: Scorer, result: ScorerRunResult, steps: tuple[StepName, ...]
) -> ScorerRunError | None:
    """The failure of a successful run whose preprocess or analyze result the store cannot
    hold as JSON (as `_check_output`); the pair fails at that step, its judge calls
    kept, rather than the batch of rows it would join. None when both can be stored."""
    results: tuple[tuple[StepName, Any], ...] = (
        ("preprocess", result.preprocess_step_result),
        ("analyze", result.analyze_step_result),
    )
    for step, value in results:
        try:
            json_text(value)
        except Exception as exc:
            cause = StoreError(
                f"the {step} step's result cannot be stored as JSON ({type(exc).__name__}: {exc})"
            )
            cause.__cause__ = exc
            kept = dataclasses.replace(
                result, preprocess_step_result=None, analyze_step_result=None
            )
            return ScorerRunError(
                scorer_id=scorer.id, scorer_name=scorer.name, failed_step=step,
                completed_steps=steps[: steps.index(step)] if step in steps else (),
                cause=cause, result=kept,
            )  # fmt: skip
    return None

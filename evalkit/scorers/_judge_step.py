"""``JudgeStep``: the prompt step of the LLM-judged prebuilt scorers, and ``OnePerItem``.

A judge step is a [`PromptStep`][evalkit.PromptStep] sent with the scorer's own instructions,
behind three checks shared by every prebuilt scorer: ``skip`` answers in code a step with
nothing to send (docs/pages/design/nothing-to-judge-no-call.md), ``items`` makes the reply
answer every item sent (docs/pages/design/miscounted-verdicts-fail.md), and ``extraction``
asks once more when the judge lists nothing in a non-empty text
(docs/pages/design/empty-extraction-asked-again.md).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, ClassVar, Self

from pydantic import BaseModel, model_validator

from evalkit._callables import is_async_callable
from evalkit.errors import ConfigError
from evalkit.judge import Judge
from evalkit.scorer import (
    BoundStep,
    OutputSchema,
    PromptStep,
    RunTrace,
    ScorerRun,
    StepName,
    StepOwner,
    StepResults,
)
from evalkit.scorer._steps import bind_callable
from evalkit.scorers._extraction import Extraction

# How many items the step being asked sent; set by JudgeStep around the judge call only.
_ITEMS_SENT: ContextVar[int | None] = ContextVar("evalkit_items_sent", default=None)


class OnePerItem(BaseModel):
    """A judge reply holding one entry per item the prompt sent (one verdict per claim, ...).

    ``per_item`` names the list field; ``numbered_by``, when set, the entries' field that must
    number the items 1 to n, each once. The check applies while a `JudgeStep` with
    ``items`` asks for the reply; it raises inside validation, so a miscount is a format
    failure of the step like any schema error (the fallback asks once more, then the step
    fails). It adds nothing to the JSON Schema sent to the judge.
    """

    per_item: ClassVar[str] = "verdicts"
    numbered_by: ClassVar[str | None] = None

    @model_validator(mode="after")
    def _one_per_item(self) -> Self:
        sent = _ITEMS_SENT.get()
        if sent is None:
            return self
        entries = getattr(self, self.per_item)
        if len(entries) != sent:
            raise ValueError(
                f"{len(entries)} {self.per_item} for the {sent} items sent; exactly one per "
                "item is required"
            )
        if self.numbered_by is not None:
            numbers = sorted(getattr(entry, self.numbered_by) for entry in entries)
            if numbers != list(range(1, sent + 1)):
                raise ValueError(
                    f"{self.numbered_by} must number the {sent} items from 1 to {sent}, each "
                    f"once; got {numbers}"
                )
        return self


class JudgeStep:
    """A prompt step sent with a scorer's own instructions, answered in code when it can be.

    Args:
        description: What the step does (documentation).
        create_prompt: Builds the prompt, like a [`PromptStep`][evalkit.PromptStep]'s.
        instructions: The system message; the scorer's judge supplies everything else.
        output_schema: The schema of a preprocess/analyze step's result.
        skip: A sync function called like a function step before the judge is asked; a value
            other than None is the step's result and no call is made.
        items: A sync function called like a function step: how many items the prompt sends,
            each to be answered by one entry of the reply. ``output_schema`` must then be a
            `OnePerItem` model.
        extraction: The lists the step extracts: a reply with one of them empty although
            its text is not is asked once more, with a note added to the prompt, and a
            second such reply fails the step or is kept, as ``extraction.on_empty`` says.
    """

    __slots__ = ("_extraction", "_items", "_prompt", "_skip")

    def __init__(
        self,
        description: str,
        create_prompt: Callable[..., str],
        *,
        instructions: str,
        output_schema: OutputSchema | None = None,
        skip: Callable[..., Any] | None = None,
        items: Callable[..., int] | None = None,
        extraction: Extraction | None = None,
    ) -> None:
        self._prompt = PromptStep(
            description,
            create_prompt,
            output_schema=output_schema,
            judge=Judge(instructions=instructions),
        )
        if items is not None and not (
            isinstance(output_schema, type) and issubclass(output_schema, OnePerItem)
        ):
            raise ConfigError(f"JudgeStep {description!r}: items needs a OnePerItem output_schema")
        if extraction is not None and is_async_callable(create_prompt):
            # The second request appends a note to the prompt text, built synchronously.
            raise ConfigError(f"JudgeStep {description!r}: extraction needs a sync create_prompt")
        self._skip = skip
        self._items = items
        self._extraction = extraction

    def __repr__(self) -> str:
        return f"JudgeStep({self._prompt.description!r})"

    def judge_for(self, default: Judge | None) -> Judge | None:
        """The judge this step asks in a scorer whose judge is ``default``."""
        return self._prompt.judge_for(default)

    def bind(self, kind: StepName, owner: StepOwner) -> BoundStep:
        """The judge call, behind ``skip``, with ``items`` and ``extraction`` (see
        [`Step`][evalkit.scorer.Step])."""
        asked = self._prompt.bind(kind, owner)
        if self._extraction is not None:
            asked = self._asked_again(asked, self._extraction, kind, owner)
        if self._skip is None and self._items is None:
            return asked
        where = f"Scorer {owner.name!r}, {kind} step"
        skip = self._bind_sync(self._skip, kind, f"{where}, skip")
        items = self._bind_sync(self._items, kind, f"{where}, items")

        async def call(
            run: ScorerRun, results: StepResults, score: float | None, trace: RunTrace
        ) -> Any:
            if skip is not None and (answered := skip(run, results, score, trace)) is not None:
                return answered
            if items is None:
                return await asked(run, results, score, trace)
            token = _ITEMS_SENT.set(items(run, results, score, trace))
            try:
                return await asked(run, results, score, trace)
            finally:
                _ITEMS_SENT.reset(token)

        return call

    def _asked_again(
        self, asked: BoundStep, extraction: Extraction, kind: StepName, owner: StepOwner
    ) -> BoundStep:
        """``asked``, asked once more with ``extraction.note`` when it extracts nothing.

        The second request is a prompt step of its own whose prompt is the first one with
        the note added: a new request, so the judge cache (keyed by the prompt) does not
        answer it with the first, empty reply, while a run that is repeated replays both.
        """
        prompt = self._prompt
        where = f"Scorer {owner.name!r}, {kind} step, create_prompt"
        first = bind_callable(prompt.create_prompt, kind, where)
        note = extraction.note

        def with_note(run: ScorerRun, results: StepResults) -> str:
            # An extraction step is a preprocess/analyze step: no score, and no trace used.
            return str(first(run, results, None, RunTrace())) + note

        again = PromptStep(
            prompt.description, with_note, output_schema=prompt.output_schema, judge=prompt.judge
        ).bind(kind, owner)

        async def call(
            run: ScorerRun, results: StepResults, score: float | None, trace: RunTrace
        ) -> Any:
            value = await asked(run, results, score, trace)
            return await extraction.checked(run, value, lambda: again(run, results, score, trace))

        return call

    @staticmethod
    def _bind_sync(fn: Callable[..., Any] | None, kind: StepName, where: str) -> BoundStep | None:
        if fn is None:
            return None
        # An async function's coroutine is never None: it would be taken for the answer.
        if is_async_callable(fn):
            raise ConfigError(f"{where}: must be a plain (sync) function, not async")
        return bind_callable(fn, kind, where)

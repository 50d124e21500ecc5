"""Empty extractions: a judge that lists nothing in a non-empty text is asked once more.

An extraction step (statements, claims, semantic units, questions) that comes back with an
empty list although the text it was drawn from is not empty is suspicious: a small model does
that to text it could not read. Scored, it becomes a counted 0 (or, for ``toxicity``, a best
score) that no judge ever judged. So the step is asked once more, with a note saying the text
is not empty; a second empty answer fails the row with [`JudgeError`][evalkit.errors.JudgeError]
code ``"empty_extraction"``, unless the scorer's ``empty_extraction="score"`` says such rows are to
be scored as before. An empty *text* is another case, answered in code without a call
(docs/pages/design/nothing-to-judge-no-call.md). Why the retry changes the prompt instead of
skipping the judge cache: docs/pages/design/empty-extraction-asked-again.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalkit.errors import ConfigError, JudgeError
from evalkit.scorer import ScorerRun

#: What a prebuilt scorer does with a text its judge found nothing in, twice.
EmptyExtraction = Literal["fail", "score"]
_CHOICES: tuple[EmptyExtraction, ...] = ("fail", "score")
CODE = "empty_extraction"


@dataclass(frozen=True, slots=True)
class Listed:
    """One list an extraction step answers, and the text its entries are drawn from.

    Attributes:
        field: The list's field in the reply (``"statements"``).
        source: The run's text it is drawn from.
        names: How messages name that text (``"output"``, ``"ground truth"``).
    """

    field: str
    source: Callable[[ScorerRun], str]
    names: str = "output"


@dataclass(frozen=True, slots=True)
class Extraction:
    """The lists a judge step extracts, and what a second empty answer does.

    Attributes:
        lists: The lists checked; one empty while its text is not is an empty extraction.
        on_empty: ``"fail"`` the row after the second empty answer, or ``"score"`` it.
    """

    lists: tuple[Listed, ...]
    on_empty: EmptyExtraction = "fail"

    def __post_init__(self) -> None:
        if self.on_empty not in _CHOICES:
            raise ConfigError(f"empty_extraction must be 'fail' or 'score', got {self.on_empty!r}")
        if not self.lists:
            raise ConfigError("an Extraction needs at least one list to check")

    @property
    def note(self) -> str:
        """What the second request adds to the prompt (fixed, so its cache key is too)."""
        fields = " or ".join(f'"{listed.field}"' for listed in self.lists)
        return (
            f"\n\nNote: an earlier answer to this request gave an empty {fields} list, but the "
            "text is not empty. Read it again and list what it holds; give an empty list only "
            "if it truly holds nothing of the kind."
        )

    def found_nothing(self, run: ScorerRun, value: Any) -> tuple[Listed, ...]:
        """The lists of ``value`` that are empty although their text is not."""
        if not isinstance(value, Mapping):
            return ()
        return tuple(
            listed
            for listed in self.lists
            if not value.get(listed.field) and listed.source(run).strip()
        )

    async def checked(self, run: ScorerRun, value: Any, again: Callable[[], Awaitable[Any]]) -> Any:
        """``value``, or the answer ``again`` gets when ``value`` found nothing.

        Raises:
            JudgeError: The second answer found nothing either and ``on_empty`` is
                ``"fail"`` (code ``"empty_extraction"``).
        """
        if not self.found_nothing(run, value):
            return value
        value = await again()
        empty = self.found_nothing(run, value)
        if not empty or self.on_empty == "score":
            return value
        texts = " and ".join(dict.fromkeys(listed.names for listed in empty))
        fields = " and ".join(f'"{listed.field}"' for listed in empty)
        lists = "list was" if len(empty) == 1 else "lists were"
        raise JudgeError(
            f"the judge found nothing to judge in a non-empty {texts}: its {fields} {lists} "
            'empty twice (asked once more with a note); empty_extraction="score" scores such '
            "rows instead",
            code=CODE,
        )

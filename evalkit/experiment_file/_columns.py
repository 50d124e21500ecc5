"""``[experiment.columns]``: which dataset column plays which role, as Python's ``columns=``.

Roles are spelled as dataset columns are (``groundTruth`` or ``ground_truth``,
``requestContext`` or ``request_context``); ``metadata`` names one column or lists the columns
kept together as each item's metadata (stored with the item, for slices and SQL).
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator, model_validator

from evalkit.experiment_file._table import Table, Text, describe, problem

_SPELLINGS = {"groundTruth": "ground_truth", "requestContext": "request_context"}


class ColumnsSection(Table):
    """``[experiment.columns]``: role → column name.

    Attributes:
        id: The column of the item ids.
        input: The column of the inputs (e.g. ``"question"``).
        groundTruth: The column of the expected answers (also spelled ``ground_truth``).
        output: The column of ready outputs.
        requestContext: The column of request context (also ``request_context``).
        metadata: The metadata column, or a list of columns kept as each item's metadata.
    """

    id: Text | None = None
    input: Text | None = None
    groundTruth: Text | None = None
    ground_truth: Text | None = None
    output: Text | None = None
    requestContext: Text | None = None
    request_context: Text | None = None
    metadata: Text | list[Text] | None = None

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_names(cls, value: Any) -> Any:
        if isinstance(value, list):
            if not value:
                raise problem('expected column names, e.g. ["category", "lang"], got []')
            for index, name in enumerate(value):
                if not isinstance(name, str) or not name:
                    raise problem(f"expected a column name, got {describe(name)}", at=(index,))
            repeated = sorted({n for n in value if value.count(n) > 1})
            if repeated:
                raise problem(f"{repeated[0]!r} is listed twice")
        elif value is not None and not isinstance(value, str):
            raise problem(f"expected a column name or a list of them, got {describe(value)}")
        return value

    @model_validator(mode="after")
    def _one_spelling(self) -> ColumnsSection:
        for camel, snake in _SPELLINGS.items():
            if getattr(self, camel) is not None and getattr(self, snake) is not None:
                raise problem(f"both {camel!r} and {snake!r} are given; keep one", at=(snake,))
        return self

    def mapping(self) -> dict[str, str | list[str]]:
        """The ``columns=`` mapping of ``run_evals``: role → column (metadata: a list too)."""
        found: dict[str, str | list[str]] = {}
        for key, value in self.model_dump(exclude_none=True).items():
            found[_SPELLINGS.get(key, key)] = value
        return found

    def key_of(self, column: str) -> str | None:
        """The key of this table that names ``column``, or None."""
        for key, value in self.model_dump(exclude_none=True).items():
            if value == column or (isinstance(value, list) and column in value):
                return str(key)
        return None

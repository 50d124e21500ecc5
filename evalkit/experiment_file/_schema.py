"""The experiment file's schema: :class:`ExperimentConfig`, one pydantic model per TOML table.

This module holds the whole file and its ``[experiment]`` table; the other tables live in
``_target.py``, ``_judge.py``, ``_scorers.py`` and ``_regression.py``, on the shared base and
checks of ``_table.py`` (strict types, unknown keys forbidden, None for "the library's
default", relative paths against the file's folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalkit.experiment_file._judge import JudgeSection
from evalkit.experiment_file._regression import RegressionSection
from evalkit.experiment_file._scorers import ScorerEntry
from evalkit.experiment_file._table import (
    PositiveInt,
    Share,
    Table,
    Text,
    describe,
    problem,
    resolve_path,
)
from evalkit.experiment_file._target import Target


class ExperimentSection(Table):
    """``[experiment]``: what is run, on which data, and where results go.

    Attributes:
        name: Required. Runs of the same name form a history; ``baseline = "latest"`` is the
            newest complete, full run of this name that pairs with the new one.
        description: Free text stored with the run.
        dataset: Required. A Parquet file or folder, relative to the experiment file; it must
            exist.
        store: The DuckDB score store, relative to the experiment file; by default
            ``evalkit.duckdb`` in the working directory (made absolute when loading).
        concurrency: Items in flight at once; None means ``run_evals``' default.
        max_error_rate: The share of a scorer's pairs (0 to 1) that may end without a score
            before it fails the run, for every scorer without its own; None means
            ``run_evals``' default (0.05).
        slices: Item metadata keys whose values split the items into slices (``["category"]``):
            the comparison with the baseline is also made per slice and scorer.
    """

    name: Text
    description: str | None = None
    dataset: Annotated[Path, Field(strict=False)]
    store: Annotated[Path, Field(strict=False)]
    concurrency: PositiveInt | None = None
    max_error_rate: Share | None = None
    slices: list[Text] = Field(default_factory=list)

    @field_validator("slices")
    @classmethod
    def _distinct_slices(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise problem(f"a key appears twice in {value!r}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _default_store(cls, data: Any) -> Any:
        # The default lives in the working directory, not beside the file: resolve it now.
        if isinstance(data, dict) and "store" not in data:
            return {**data, "store": str(Path.cwd() / "evalkit.duckdb")}
        return data

    @field_validator("dataset", "store", mode="before")
    @classmethod
    def _path_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise problem(f"expected a non-empty string (a path), got {describe(value)}")
        return value

    @field_validator("store")
    @classmethod
    def _resolve_store(cls, value: Path, info: ValidationInfo) -> Path:
        return resolve_path(value, info)

    @field_validator("dataset")
    @classmethod
    def _resolve_dataset(cls, value: Path, info: ValidationInfo) -> Path:
        path = resolve_path(value, info)
        if not path.exists():
            raise problem(f"dataset not found: {path}")
        return path


class ExperimentConfig(Table):
    """A whole experiment file.

    Attributes:
        experiment: ``[experiment]``, required.
        target: ``[target]``; None uses the dataset's ``output`` column.
        judge: ``[judge]``, the default judge of LLM scorers.
        scorers: The ``[[scorers]]`` tables, at least one.
        regression: ``[regression]``; None means no regression gate.
    """

    experiment: ExperimentSection
    target: Target | None = None
    judge: JudgeSection | None = None
    scorers: Annotated[list[ScorerEntry], Field(min_length=1)]
    regression: RegressionSection | None = None

    @field_validator("scorers")
    @classmethod
    def _unique_ids(cls, scorers: list[ScorerEntry]) -> list[ScorerEntry]:
        # Explicit ids must differ; two entries using the same scorer without an id would
        # record under the same default id.
        seen: dict[str, int] = {}
        for index, entry in enumerate(scorers):
            key = entry.id if entry.id is not None else f"use:{entry.use}"
            if key in seen:
                field = "id" if entry.id is not None else "use"
                raise problem(
                    f"same scorer id as scorers[{seen[key]}]; give each entry its own `id`",
                    at=(index, field),
                )
            seen[key] = index
        return scorers

    def judge_settings(self, entry: ScorerEntry) -> dict[str, Any]:
        """The judge fields for ``entry``: ``[judge]`` overridden field by field by its own."""
        settings = self.judge.settings() if self.judge else {}
        if entry.judge is not None:
            settings.update(entry.judge.settings())
        return settings

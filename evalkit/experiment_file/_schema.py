"""The experiment file's schema: `ExperimentConfig`, one pydantic model per TOML table.

This module holds the whole file and its ``[experiment]`` table; the other tables live in
``_target.py``, ``_judge.py``, ``_scorers.py`` and ``_regression.py``, on the shared base and
checks of ``_table.py`` (strict types, unknown keys forbidden, None for "the library's
default", relative paths against the file's folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalkit._ceilings import MAX_CONCURRENCY, MAX_REPEATS
from evalkit._data_path import resolve_data_path
from evalkit.agreement._labels import parse_labels
from evalkit.errors import ConfigError, StoreError
from evalkit.experiment_file._columns import ColumnsSection
from evalkit.experiment_file._judge import JudgeSection, UnsetBaseUrl, judge_settings
from evalkit.experiment_file._regression import RegressionSection
from evalkit.experiment_file._scorers import ScorerEntry
from evalkit.experiment_file._table import (
    Share,
    Table,
    Text,
    describe,
    problem,
    resolve_path,
)
from evalkit.experiment_file._target import TargetSection
from evalkit.store import is_lake, store_location

_GLOB = frozenset("*?[")


class ExperimentSection(Table):
    """``[experiment]``: what is run, on which data, and where results go.

    Attributes:
        name: Required. Runs of the same name form a history; ``baseline = "latest"`` is the
            newest complete, full, passing run of this name that pairs with the new one.
        description: Free text stored with the run.
        dataset: Required unless ``query`` is given. A Parquet file, folder or glob, a CSV,
            TSV, JSON Lines or JSON file, a folder saved by Hugging Face ``datasets``, or
            (with ``query``) a ``.duckdb`` file; relative to the experiment file; it must
            exist (a glob must match a file).
        format: ``parquet``, ``csv``, ``tsv``, ``jsonl``, ``json``, ``hf`` or ``duckdb``;
            None picks it by the dataset's suffix.
        query: A DuckDB ``SELECT`` giving the rows, over DuckDB's table functions
            (``read_parquet('s3://…')``) or the tables of the ``.duckdb`` file ``dataset``.
        columns: ``[experiment.columns]``: which column plays which role, and which columns
            are kept as item metadata.
        store: The score store: a DuckDB file, relative to the experiment file (by default
            ``evalkit.duckdb`` in the working directory, made absolute when loading), or a
            DuckLake attach string (``"ducklake:sqlite:catalog.sqlite"``, its catalog file
            relative to the experiment file; ``"ducklake:postgres:dbname=evals host=db"``,
            never with a password).
        store_data_path: Where a new DuckLake store keeps its Parquet files: a folder
            relative to the experiment file, or an object-store URL (``s3://…``).
        concurrency: Items in flight at once; None means ``run_evals``' default.
        max_error_rate: The share of a scorer's pairs (0 to 1) that may end without a score
            before it fails the run, for every scorer without its own; None means
            ``run_evals``' default (0.05).
        slices: Item metadata keys whose values split the items into slices (``["category"]``):
            the comparison with the baseline is also made per slice and scorer.
        labels: Human labels per scorer id (``{ rubric = "human_polite" }``, a list of
            columns, or ``{ columns = [...], levels = [...], kind = "ordinal", scale = [0, 1]
            }``): each scorer's agreement with them is measured (``run_evals(labels=)``).
        repeats: Executions of each LLM-judged pair, 1 to 20 (``run_evals(repeats=)``,
            ``--repeat``): with more than one, the judges' agreement with themselves is
            measured.
    """

    name: Text
    description: str | None = None
    dataset: Annotated[Path | None, Field(strict=False)] = None
    format: Literal["parquet", "csv", "tsv", "jsonl", "json", "hf", "duckdb"] | None = None
    query: Text | None = None
    columns: ColumnsSection | None = None
    store: str | Path
    store_data_path: str | None = None
    concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] | None = None
    max_error_rate: Share | None = None
    slices: list[Text] = Field(default_factory=list)
    labels: dict[Text, Any] = Field(default_factory=dict)
    repeats: Annotated[int, Field(ge=1, le=MAX_REPEATS)] | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            parse_labels(value, None)
        except ConfigError as exc:
            raise problem(str(exc)) from None
        return value

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

    @field_validator("dataset", "store", "store_data_path", mode="before")
    @classmethod
    def _path_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise problem(f"expected a non-empty string (a path), got {describe(value)}")
        return value

    @field_validator("store")
    @classmethod
    def _resolve_store(cls, value: Path | str, info: ValidationInfo) -> Path | str:
        # A file stays a Path (as it always was); a DuckLake store is its attach string.
        if not is_lake(str(value)):
            return resolve_path(Path(value), info)
        try:
            return store_location(str(value), base=(info.context or {}).get("folder")).text
        except (ConfigError, StoreError) as exc:  # StoreError: DuckDB's secrets unreadable
            raise problem(str(exc)) from None

    @field_validator("store_data_path")
    @classmethod
    def _resolve_data_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        return resolve_data_path(value, base=(info.context or {}).get("folder"))

    @field_validator("dataset")
    @classmethod
    def _resolve_dataset(cls, value: Path, info: ValidationInfo) -> Path:
        if _GLOB & set(str(value)):
            # A glob: resolve its folder part only, and it must match something.
            folder = (info.context or {}).get("folder")
            pattern = value if value.is_absolute() or folder is None else Path(folder) / value
            anchor = Path(pattern.anchor)
            if not any(p.is_file() for p in anchor.glob(str(pattern.relative_to(anchor)))):
                raise problem(f"the pattern matches no files: {pattern}")
            return pattern
        path = resolve_path(value, info)
        if not path.exists():
            raise problem(f"dataset not found: {path}")
        return path

    @model_validator(mode="after")
    def _data_path_of_a_lake(self) -> ExperimentSection:
        if self.store_data_path is not None and not is_lake(self.store):
            raise problem(
                'only a DuckLake store (store = "ducklake:…") has a data path; the store'
                f" {self.store} is a DuckDB file",
                at=("store_data_path",),
            )
        return self

    @model_validator(mode="after")
    def _dataset_or_query(self) -> ExperimentSection:
        if self.dataset is None and self.query is None:
            raise problem("required key is missing (or give a query)", at=("dataset",))
        if self.query is not None:
            if self.format not in (None, "duckdb"):
                raise problem(
                    "a query reads what it names; format applies to a dataset file", at=("format",)
                )
            if self.dataset is not None and not self.dataset.is_file():
                raise problem(
                    "with a query, dataset is the .duckdb file it reads (or leave it out)",
                    at=("dataset",),
                )
        elif self.format == "duckdb":
            raise problem("a DuckDB database needs a query naming what to read", at=("query",))
        return self


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
    target: TargetSection | None = None
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
        """The judge fields for ``entry``: ``[judge]`` overridden field by field by its own
        (a table setting ``base_url`` or ``base_url_env`` replaces both), ``base_url_env``
        read from the environment into ``base_url``.

        Raises:
            ConfigError: ``base_url_env`` names an unset variable.
        """
        try:
            return judge_settings(self.judge, entry.judge)
        except UnsetBaseUrl as exc:
            index = next((i for i, e in enumerate(self.scorers) if e is entry), None)
            own = exc.own and index is not None
            key = f"scorers[{index}].judge.base_url_env" if own else "judge.base_url_env"
            raise ConfigError(f"{key}: {exc}") from None

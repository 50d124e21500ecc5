"""The dataset of an experiment file: its source, column mapping and metadata, opened for a run.

A query's relative file names are looked for in the experiment file's folder, like its other
paths. A column the file maps (``[experiment.columns] input = "question"``) that the dataset
lacks is reported at that key's line, naming the dataset file and the column.
"""

from __future__ import annotations

from typing import Any

from evalkit.agreement._labels import parse_labels, with_label_columns
from evalkit.dataset import load_dataset, open_source
from evalkit.errors import DatasetError
from evalkit.experiment_file._load import ExperimentFile


def open_dataset(file: ExperimentFile, *, sharded: bool) -> tuple[Any, Any]:
    """What ``run_evals`` reads: ``(data, columns)``.

    A sharded run reads Parquet row groups, so it gets the path and the mapping; any other
    run gets the opened [`Dataset`][evalkit.Dataset] (its columns already mapped).

    Raises:
        ExperimentFileError: A mapped column is missing, or a sharded run's data is not a
            Parquet path; at the key's line.
        DatasetError: The dataset cannot be read.
    """
    section = file.config.experiment
    mapped = section.columns.mapping() if section.columns is not None else None
    # The label columns are kept as item metadata (checked with the file, so no error here).
    columns = with_label_columns(mapped, parse_labels(section.labels or None, None))
    if sharded:
        if section.query is not None or section.format not in (None, "parquet"):
            setting = "query" if section.query is not None else "format"
            raise file.error(
                ("experiment", setting),
                "a sharded run (--executor, --shard) reads the row groups of Parquet files; "
                "give a Parquet file, folder or glob as dataset",
            )
        return str(section.dataset), columns
    try:
        source = open_source(
            section.dataset, format=section.format, query=section.query, folder=file.folder
        )
        dataset = load_dataset(source, columns=columns)
    except DatasetError as exc:
        key = section.columns.key_of(exc.column) if section.columns and exc.column else None
        if key is None:
            raise
        raise file.error(("experiment", "columns", key), str(exc)) from exc
    return dataset, None

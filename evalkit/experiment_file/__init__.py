"""Experiment files: the TOML that ``evalkit run FILE`` reads.

[`load_experiment_file`][evalkit.load_experiment_file] validates a file against `ExperimentConfig`
and reports every problem as ``FILE:LINE: key: problem`` in one
[`ExperimentFileError`][evalkit.errors.ExperimentFileError].
[`ExperimentFile.import_object`][evalkit.ExperimentFile.import_object] imports
``"module:attribute"`` references with the file's folder on ``sys.path`` while they load, and
[`ExperimentFile.error`][evalkit.ExperimentFile.error] builds located errors for later checks; a
``check`` passed to [`load_experiment_file`][evalkit.load_experiment_file] runs on the file's
`FileParts` (the valid parts even of a file that breaks the schema) and its problems are reported
with the schema's, in one error.
"""

from __future__ import annotations

from evalkit.experiment_file._columns import ColumnsSection
from evalkit.experiment_file._imports import import_reference
from evalkit.experiment_file._judge import JudgeOverride, JudgeSection
from evalkit.experiment_file._load import ExperimentFile, load_experiment_file
from evalkit.experiment_file._locate import KeyLocator, KeyPath
from evalkit.experiment_file._parts import FileCheck, FileParts, format_key
from evalkit.experiment_file._regression import RegressionSection
from evalkit.experiment_file._schema import ExperimentConfig, ExperimentSection
from evalkit.experiment_file._scorers import ScorerEntry, ThresholdEntry
from evalkit.experiment_file._target import OpenAITargetSection, PythonTargetSection, TargetSection

__all__ = [
    "ColumnsSection",
    "ExperimentConfig",
    "ExperimentFile",
    "ExperimentSection",
    "FileCheck",
    "FileParts",
    "JudgeOverride",
    "JudgeSection",
    "KeyLocator",
    "KeyPath",
    "OpenAITargetSection",
    "PythonTargetSection",
    "RegressionSection",
    "ScorerEntry",
    "TargetSection",
    "ThresholdEntry",
    "format_key",
    "import_reference",
    "load_experiment_file",
]

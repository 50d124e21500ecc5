"""Experiment files: the TOML that ``evalkit run FILE`` reads, and running one.

[`load_experiment_file`][evalkit.load_experiment_file] validates a file against `ExperimentConfig`
and reports every problem as ``FILE:LINE: key: problem`` in one
[`ExperimentFileError`][evalkit.errors.ExperimentFileError].
[`ExperimentFile.import_object`][evalkit.ExperimentFile.import_object] imports
``"module:attribute"`` references with the file's folder on ``sys.path`` while they load, and
[`ExperimentFile.error`][evalkit.ExperimentFile.error] builds located errors for later checks; a
``check`` passed to [`load_experiment_file`][evalkit.load_experiment_file] runs on the file's
`FileParts` (the valid parts even of a file that breaks the schema) and its problems are reported
with the schema's, in one error.

[`run_experiment_file`][evalkit.experiment_file.run_experiment_file] runs a file and judges the
run on every gate, as ``evalkit run`` and the pytest plugin do (both call it);
[`judge_run`][evalkit.experiment_file.judge_run] judges a run made with ``run_evals`` the same
way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports
from evalkit._lazy import with_old_names as _with_old_names

if TYPE_CHECKING:
    from evalkit.experiment_file._columns import ColumnsSection
    from evalkit.experiment_file._judge import JudgeOverride, JudgeSection
    from evalkit.experiment_file._judge_run import JudgedRun, judge_run
    from evalkit.experiment_file._load import ExperimentFile, load_experiment_file
    from evalkit.experiment_file._parts import FileCheck, FileParts
    from evalkit.experiment_file._regression import RegressionSection
    from evalkit.experiment_file._run import InterruptedRun, run_experiment_file
    from evalkit.experiment_file._schema import ExperimentConfig, ExperimentSection
    from evalkit.experiment_file._scorers import ScorerEntry, ThresholdEntry
    from evalkit.experiment_file._target import (
        OpenAITargetSection,
        PythonTargetSection,
        TargetSection,
    )

# Lazy: loading a file does not import the run's stack (``run_experiment_file`` does).
_getattr, __dir__ = _exports(
    globals(),
    {
        "evalkit.experiment_file._columns": ("ColumnsSection",),
        "evalkit.experiment_file._judge": ("JudgeOverride", "JudgeSection"),
        "evalkit.experiment_file._judge_run": ("JudgedRun", "judge_run"),
        "evalkit.experiment_file._load": ("ExperimentFile", "load_experiment_file"),
        "evalkit.experiment_file._parts": ("FileCheck", "FileParts"),
        "evalkit.experiment_file._regression": ("RegressionSection",),
        "evalkit.experiment_file._run": ("InterruptedRun", "run_experiment_file"),
        "evalkit.experiment_file._schema": ("ExperimentConfig", "ExperimentSection"),
        "evalkit.experiment_file._scorers": ("ScorerEntry", "ThresholdEntry"),
        "evalkit.experiment_file._target": (
            "OpenAITargetSection",
            "PythonTargetSection",
            "TargetSection",
        ),
    },
)

#: Names still found here for code written before: the sections' names before they were told
#: apart from what they build, and the file's plumbing, no longer exported (issue 32: only
#: ExperimentFile and its check use them).
__getattr__ = _with_old_names(
    __name__,
    _getattr,
    {
        old: f"evalkit.experiment_file.{new}"
        for old, new in [
            ("OpenAITarget", "OpenAITargetSection"),
            ("PythonTarget", "PythonTargetSection"),
            ("Target", "TargetSection"),
            ("Threshold", "ThresholdEntry"),
            ("KeyLocator", "_locate.KeyLocator"),
            ("KeyPath", "_locate.KeyPath"),
            ("format_key", "_parts.format_key"),
            ("import_reference", "_imports.import_reference"),
        ]
    },
)


__all__ = [
    "ColumnsSection",
    "ExperimentConfig",
    "ExperimentFile",
    "ExperimentSection",
    "FileCheck",
    "FileParts",
    "InterruptedRun",
    "JudgeOverride",
    "JudgeSection",
    "JudgedRun",
    "OpenAITargetSection",
    "PythonTargetSection",
    "RegressionSection",
    "ScorerEntry",
    "TargetSection",
    "ThresholdEntry",
    "judge_run",
    "load_experiment_file",
    "run_experiment_file",
]

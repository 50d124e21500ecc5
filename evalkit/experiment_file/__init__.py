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

from evalkit._lazy import declared_exports as _declared_exports
from evalkit._lazy import with_old_names as _with_old_names

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.experiment_file._columns import ColumnsSection as ColumnsSection
    from evalkit.experiment_file._judge import JudgeOverride as JudgeOverride
    from evalkit.experiment_file._judge import JudgeSection as JudgeSection
    from evalkit.experiment_file._judge_run import JudgedRun as JudgedRun
    from evalkit.experiment_file._judge_run import judge_run as judge_run
    from evalkit.experiment_file._load import ExperimentFile as ExperimentFile
    from evalkit.experiment_file._load import load_experiment_file as load_experiment_file
    from evalkit.experiment_file._parts import FileCheck as FileCheck
    from evalkit.experiment_file._parts import FileParts as FileParts
    from evalkit.experiment_file._regression import RegressionSection as RegressionSection
    from evalkit.experiment_file._run import InterruptedRun as InterruptedRun
    from evalkit.experiment_file._run import run_experiment_file as run_experiment_file
    from evalkit.experiment_file._schema import ExperimentConfig as ExperimentConfig
    from evalkit.experiment_file._schema import ExperimentSection as ExperimentSection
    from evalkit.experiment_file._scorers import ScorerEntry as ScorerEntry
    from evalkit.experiment_file._scorers import ThresholdEntry as ThresholdEntry
    from evalkit.experiment_file._target import OpenAITargetSection as OpenAITargetSection
    from evalkit.experiment_file._target import PythonTargetSection as PythonTargetSection
    from evalkit.experiment_file._target import TargetSection as TargetSection

# Lazy: loading a file does not import the run's stack (``run_experiment_file`` does).
# Type checkers read the imports above (a star import sees them too; the old names are the
# runtime's only).
if not TYPE_CHECKING:
    _getattr, __dir__, __all__ = _declared_exports(globals())

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

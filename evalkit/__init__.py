"""evalkit: a batch evaluation runner for LLM applications.

The pipeline reads as the package does: dataset → target → scorer (+ judge) → run → store →
report/compare, with the CLI on top. Everything a user needs is importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.compare import Comparison as Comparison
    from evalkit.compare import ScorerComparison as ScorerComparison
    from evalkit.compare import compare_experiments as compare_experiments
    from evalkit.dataset import Dataset as Dataset
    from evalkit.dataset import Item as Item
    from evalkit.dataset import load_dataset as load_dataset
    from evalkit.errors import BaselineError as BaselineError
    from evalkit.errors import ConfigError as ConfigError
    from evalkit.errors import DatasetError as DatasetError
    from evalkit.errors import EvalkitError as EvalkitError
    from evalkit.errors import ExperimentFileError as ExperimentFileError
    from evalkit.errors import ExperimentFileIssue as ExperimentFileIssue
    from evalkit.errors import InvalidScoreError as InvalidScoreError
    from evalkit.errors import JudgeError as JudgeError
    from evalkit.errors import PreflightError as PreflightError
    from evalkit.errors import PreflightIssue as PreflightIssue
    from evalkit.errors import ScorerInputError as ScorerInputError
    from evalkit.errors import ScorerRunError as ScorerRunError
    from evalkit.errors import StoreError as StoreError
    from evalkit.errors import TargetError as TargetError
    from evalkit.experiment_file import ExperimentFile as ExperimentFile
    from evalkit.experiment_file import load_experiment_file as load_experiment_file
    from evalkit.judge import Judge as Judge
    from evalkit.judge import JudgeAttempt as JudgeAttempt
    from evalkit.judge import JudgeCache as JudgeCache
    from evalkit.judge import JudgeCacheStats as JudgeCacheStats
    from evalkit.judge import JudgeCost as JudgeCost
    from evalkit.judge import JudgeErrorInfo as JudgeErrorInfo
    from evalkit.judge import JudgeExecution as JudgeExecution
    from evalkit.judge import JudgeUsage as JudgeUsage
    from evalkit.judge import RateLimiterStats as RateLimiterStats
    from evalkit.judge import StepJudgeRecord as StepJudgeRecord
    from evalkit.judge import use_judge_cache as use_judge_cache
    from evalkit.run import ErrorInfo as ErrorInfo
    from evalkit.run import ExperimentResult as ExperimentResult
    from evalkit.run import ItemResult as ItemResult
    from evalkit.run import RunSummary as RunSummary
    from evalkit.run import ScorerOutcome as ScorerOutcome
    from evalkit.run import ScorerSummary as ScorerSummary
    from evalkit.run import ScorerVerdict as ScorerVerdict
    from evalkit.run import Threshold as Threshold
    from evalkit.run import Verdict as Verdict
    from evalkit.run import run_evals as run_evals
    from evalkit.run import run_evals_sync as run_evals_sync
    from evalkit.scorer import PromptStep as PromptStep
    from evalkit.scorer import Scorer as Scorer
    from evalkit.scorer import ScorerRun as ScorerRun
    from evalkit.scorer import ScorerRunResult as ScorerRunResult
    from evalkit.scorer import StepResults as StepResults
    from evalkit.scorer import StepTimeoutError as StepTimeoutError
    from evalkit.scorer import create_scorer as create_scorer
    from evalkit.scorers import ScorerInfo as ScorerInfo
    from evalkit.scorers import ScorerParam as ScorerParam
    from evalkit.scorers import get_scorer as get_scorer
    from evalkit.scorers import list_scorers as list_scorers
    from evalkit.scorers import scorer_info as scorer_info
    from evalkit.store import list_experiments as list_experiments
    from evalkit.store import read_experiment as read_experiment
    from evalkit.store import read_item_scores as read_item_scores
    from evalkit.target import FunctionTarget as FunctionTarget
    from evalkit.target import OpenAITarget as OpenAITarget
    from evalkit.target import Target as Target

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())

__version__ = "0.1.0"

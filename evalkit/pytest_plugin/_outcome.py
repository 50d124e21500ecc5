"""Running and judging from a test, and the message a failed run fails its test with.

Imported only when a test uses the plugin, so a test suite that does not never loads the run's
stack (pandas, pyarrow, DuckDB).

See docs/pages/design/pytest-verdict-after-the-body.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from evalkit.cli import JudgedRun, judge_run, run_experiment_file
from evalkit.errors import EvalkitError, ExperimentFileError
from evalkit.report import ItemView, console_failure_groups, console_table, visible
from evalkit.run import ExperimentResult, run_evals_sync
from evalkit.store import store_location

_TEXT = 60


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = visible(text.replace("\n", " "))
    return repr(text if len(text) <= _TEXT else text[: _TEXT - 1] + "…")


def _item_line(view: ItemView) -> str:
    score = "failed" if view.score is None else f"{view.score:.3f}"
    parts = [f"{visible(view.item_id)}  score {score}", f"input {_short(view.input)}"]
    parts.append(f"output {_short(view.output)}")
    if view.ground_truth is not None:
        parts.append(f"expected {_short(view.ground_truth)}")
    if view.reason:
        parts.append(f"reason {_short(view.reason)}")
    return "    " + "  ".join(parts)


def _below_par(score: float | None, mean: float | None, *, higher_is_better: bool) -> bool:
    """An item worse than the scorer's mean (the worst list of a good run holds good items)."""
    if score is None or mean is None:
        return True
    return score < mean if higher_is_better else score > mean


def _worst(judged: JudgedRun) -> list[str]:
    """The worst-scored items of every scorer that did not pass."""
    lines: list[str] = []
    for row in judged.report.scorers:
        views = [
            view
            for view in judged.report.worst_items.get(row.scorer_id, [])
            if _below_par(view.score, row.mean, higher_is_better=row.higher_is_better)
        ]
        if row.verdict == "passed" or not views:
            continue
        lines.append(f"  {visible(row.scorer_id)}:")
        lines.extend(_item_line(view) for view in views)
    return ["worst items:", *lines] if lines else []


def message(judged: JudgedRun) -> str:
    """What a failed run's test says: the verdict, the per-scorer table, the failure groups,
    the worst items and where the run is stored."""
    result = judged.result
    head = f"evalkit: {visible(result.name)!r} ({result.experiment_id}) failed its gates"
    lines = [head, "", console_table(judged.report)]
    if judged.baseline_error is not None:
        lines.append(f"baseline: {visible(str(judged.baseline_error))}")
    groups = console_failure_groups(judged.report)
    if groups:
        lines.append(groups)
    lines.extend(_worst(judged))
    lines.append(f"stored in {judged.store} as {result.experiment_id}")
    return "\n".join(lines)


@dataclass(eq=False, repr=False)
class EvalOutcome:
    """A run made from a test, judged as ``evalkit run`` judges it.

    Attributes:
        judged: The run with its verdict, report, baseline and comparison.
        checked: Whether :meth:`check` ran (the plugin checks every unchecked run when the
            test body ends).
    """

    judged: JudgedRun
    checked: bool = field(default=False)

    def __repr__(self) -> str:
        result = self.result
        return (
            f"EvalOutcome(name={result.name!r}, experiment_id={result.experiment_id!r},"
            f" passed={self.passed}, scores={result.scores!r})"
        )

    @property
    def result(self) -> ExperimentResult:
        """The run's :class:`~evalkit.ExperimentResult`."""
        return self.judged.result

    @property
    def passed(self) -> bool:
        """Every gate passed (and the baseline named, if any, could be used)."""
        return self.judged.passed

    @property
    def message(self) -> str:
        """What the test fails with when the run did not pass."""
        return message(self.judged)

    def check(self) -> None:
        """Fail the test now, with :attr:`message`, unless the run passed."""
        __tracebackhide__ = True
        self.checked = True
        if not self.passed:
            pytest.fail(self.message, pytrace=False)


def _failed_to_run(what: str, exc: EvalkitError) -> NoReturn:
    __tracebackhide__ = True
    text = str(exc) if isinstance(exc, ExperimentFileError) else f"{what}: {exc}"
    pytest.fail(f"evalkit: {visible(text)}", pytrace=False)


def run_file(path: Path, *, rootpath: Path, **options: Any) -> EvalOutcome:
    """Run an experiment file; a file or setup that cannot run fails the test with why."""
    __tracebackhide__ = True
    store = options.pop("store", None)
    if store is not None:
        store = store_location(store, base=rootpath).text
    try:
        return EvalOutcome(run_experiment_file(path, store=store, **options))
    except EvalkitError as exc:
        error = exc  # failed outside the handler: the message alone, not the chain
    _failed_to_run(str(path), error)


def run_python(data: Any, scorers: Any, **options: Any) -> EvalOutcome:
    """Run ``run_evals`` with ``options`` and judge the run, against ``baseline`` if given."""
    __tracebackhide__ = True
    baseline = options.pop("baseline", None)
    max_drop = options.pop("max_drop", 0.0)
    options.setdefault("progress", False)
    try:
        result = run_evals_sync(data, scorers, **options)
        directions = {
            s.id: "higher" if s.higher_is_better else "lower"
            for s in scorers
            if hasattr(s, "higher_is_better")
        }
        return EvalOutcome(
            judge_run(result, baseline=baseline, max_drop=max_drop, directions=directions)
        )
    except EvalkitError as exc:
        error = exc
    _failed_to_run(str(options.get("experiment")), error)

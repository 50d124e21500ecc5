"""Running and judging from a test, and the message a failed run fails its test with.

Imported only when a test uses the plugin, so a test suite that does not never loads the run's
stack (pandas, pyarrow, DuckDB).

See docs/pages/design/pytest-verdict-after-the-body.md.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from evalkit._defaults import DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_DROP
from evalkit._visible import visible
from evalkit.errors import EvalkitError, ExperimentFileError
from evalkit.experiment_file import JudgedRun, judge_run, run_experiment_file
from evalkit.report import ItemView, PairView
from evalkit.report._text import console_failure_groups, console_table
from evalkit.run import ExperimentResult, VerdictNotKeptWarning, run_evals_sync
from evalkit.store import store_location

if TYPE_CHECKING:  # evalkit.compare loads pandas: not when pytest starts
    from evalkit.compare import Direction

_TEXT = 60
#: Items listed per scorer: the largest drops, or the lowest scores.
_SHOWN = 5


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = visible(text.replace("\n", " "))
    return repr(text if len(text) <= _TEXT else text[: _TEXT - 1] + "…")


def _reason(truncated: bool) -> str:
    """The label of a reason: a judge reply cut at its token limit says so."""
    return "reason (truncated)" if truncated else "reason"


def _item_line(view: ItemView) -> str:
    score = "failed" if view.score is None else f"{view.score:.3f}"
    parts = [f"{visible(view.item_id)}  score {score}", f"input {_short(view.input)}"]
    parts.append(f"output {_short(view.output)}")
    if view.ground_truth is not None:
        parts.append(f"expected {_short(view.ground_truth)}")
    if view.reason:
        parts.append(f"{_reason(view.reason_truncated)} {_short(view.reason)}")
    return "    " + "  ".join(parts)


def _pair_line(pair: PairView) -> str:
    change = f"{pair.baseline_score:.3f} → {pair.score:.3f} ({pair.delta:+.3f})"
    parts = [
        f"{visible(pair.item_id)}  {change}",
        f"input {_short(pair.input)}",
        f"output {_short(pair.output)}",
        f"baseline output {_short(pair.baseline_output)}",
    ]
    if pair.ground_truth is not None:
        parts.append(f"expected {_short(pair.ground_truth)}")
    if pair.reason:
        parts.append(f"{_reason(pair.reason_truncated)} {_short(pair.reason)}")
    return "    " + "  ".join(parts)


def _below_par(score: float | None, mean: float | None, *, higher_is_better: bool) -> bool:
    """An item worse than the scorer's mean (the worst list of a good run holds good items)."""
    if score is None or mean is None:
        return True
    return score < mean if higher_is_better else score > mean


def _drops(judged: JudgedRun) -> tuple[list[str], set[str]]:
    """The pairs that dropped most against the baseline, per scorer that regressed (as
    ``evalkit diff`` lists them), and the scorers listed."""
    report = judged.report
    lines: list[str] = []
    listed: set[str] = set()
    for row in report.scorers:
        pairs = report.regressed_items.get(row.scorer_id, [])[:_SHOWN]
        if row.verdict != "regressed" or not pairs:
            continue
        listed.add(row.scorer_id)
        total = report.regressed_totals.get(row.scorer_id, len(pairs))
        scorer = visible(row.scorer_id)
        lines.append(f"  {scorer}: {total} pairs dropped, the {len(pairs)} largest first:")
        lines.extend(_pair_line(pair) for pair in pairs)
        if total > len(pairs):
            lines.append(
                f"    all {total}: evalkit diff {report.baseline_id} {report.experiment_id}"
                f" --scorer {scorer} --store {visible(judged.store)}"
            )
    if not lines:
        return [], listed
    return [f"largest drops against the baseline {visible(report.baseline or '')}:", *lines], listed


def _lowest(judged: JudgedRun, listed: set[str]) -> list[str]:
    """The lowest-scored items of every other scorer that did not pass (a threshold, an error
    rate, no baseline to compare with): this run's own scores, not drops."""
    lines: list[str] = []
    for row in judged.report.scorers:
        views = [
            view
            for view in judged.report.worst_items.get(row.scorer_id, [])
            if _below_par(view.score, row.mean, higher_is_better=row.higher_is_better)
        ]
        if row.verdict == "passed" or row.scorer_id in listed or not views:
            continue
        lines.append(f"  {visible(row.scorer_id)}:")
        lines.extend(_item_line(view) for view in views)
    if not lines:
        return []
    why = "no baseline" if judged.report.baseline_id is None else "not the regression gate"
    return [f"lowest-scored items ({why}: this run's lowest scores, not drops):", *lines]


def message(judged: JudgedRun) -> str:
    """What a failed run's test says: the verdict, the per-scorer table, the failure groups,
    the largest drops against the baseline of each scorer that regressed (the lowest scores of
    the other failed scorers) and where the run is stored."""
    result = judged.result
    head = f"evalkit: {visible(result.name)!r} ({result.experiment_id}) failed its gates"
    lines = [head, "", console_table(judged.report)]
    if judged.baseline_error is not None:
        lines.append(f"baseline: {visible(str(judged.baseline_error))}")
    groups = console_failure_groups(judged.report)
    if groups:
        lines.append(groups)
    drops, listed = _drops(judged)
    lines.extend(drops)
    lines.extend(_lowest(judged, listed))
    lines.append(f"stored in {judged.store} as {result.experiment_id}")
    if judged.verdict_error is not None:
        lines.append(not_kept(judged))
    return "\n".join(lines)


def not_kept(judged: JudgedRun) -> str:
    """The line of a run whose verdict the store could not take."""
    result = judged.result
    return (
        f"evalkit: the verdict of {visible(result.name)!r} ({result.experiment_id}) could not"
        f" be kept in {judged.store}: {visible(str(judged.verdict_error))} (the run is stored;"
        " its stored verdict is missing or covers its own gates only)"
    )


@dataclass(eq=False, repr=False)
class EvalOutcome:
    """A run made from a test, judged as ``evalkit run`` judges it.

    Attributes:
        judged: The run with its verdict, report, baseline and comparison.
        checked: Whether [`check`][evalkit.pytest_plugin.EvalOutcome.check] ran (the plugin checks
            every unchecked run when the test body ends).
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
        """The run's [`ExperimentResult`][evalkit.ExperimentResult]."""
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
        """Fail the test now, with [`message`][evalkit.pytest_plugin.EvalOutcome.message], unless
        the run passed and its verdict was kept in the store."""
        __tracebackhide__ = True
        self.checked = True
        if not self.passed:
            pytest.fail(self.message, pytrace=False)
        if self.judged.verdict_error is not None:
            # Passed, but the store does not know it: as evalkit run, not a success to report.
            pytest.fail(not_kept(self.judged), pytrace=False)


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
    max_drop = options.pop("max_drop", DEFAULT_MAX_DROP)
    options.setdefault("progress", False)
    try:
        with warnings.catch_warnings():
            # judge_run keeps the verdict again, and the outcome says if it could not.
            warnings.simplefilter("ignore", VerdictNotKeptWarning)
            result = run_evals_sync(data, scorers, **options)
        directions: dict[str, Direction] = {
            s.id: "higher" if s.higher_is_better else "lower"
            for s in scorers
            if hasattr(s, "higher_is_better")
        }
        # The verdict is kept as long as the run waited for a locked store.
        lock_timeout = options.get("lock_timeout", DEFAULT_LOCK_TIMEOUT)
        judged = judge_run(result, baseline=baseline, max_drop=max_drop,
                           directions=directions, lock_timeout=lock_timeout)  # fmt: skip
        return EvalOutcome(judged)
    except EvalkitError as exc:
        error = exc
    _failed_to_run(str(options.get("experiment")), error)

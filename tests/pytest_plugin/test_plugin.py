"""The pytest plugin, run by pytest itself (``pytester``): experiment files as tests, Python
runs through ``evalkit_run``, failures with the verdict as their message, and no trace at all
in a suite that does not use it."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import duckdb

# Imported here, before pytester's snapshot of sys.modules: pytester drops the modules a test
# imported, and the runs in process must find the same modules (and classes) each time;
# pandas registers its Arrow extension types once per process, and pyarrow.dataset (which
# DuckDB imports to scan Arrow data) cannot be imported a second time. (pandas-stubs has no stub
# for this module, hence the type: ignore.)
import pandas.core.arrays.arrow.extension_types  # type: ignore[import-not-found]  # noqa: F401
import pyarrow.dataset  # noqa: F401
import pytest

from evalkit import create_scorer, run_evals_sync
from evalkit.compare import diff_items
from evalkit.experiment_file import judge_run, run_experiment_file
from tests.cli.conftest import write_dataset, write_experiment

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parents[2]
LOADED = (create_scorer, run_evals_sync, judge_run, run_experiment_file)


def _plugin_args() -> list[str]:
    """``-p evalkit.pytest_plugin`` unless the installed package's entry point loads it."""
    points = importlib.metadata.entry_points(group="pytest11")
    if any(point.value == "evalkit.pytest_plugin" for point in points):
        return []
    return ["-p", "evalkit.pytest_plugin"]


FLAKY = """
from evalkit import create_scorer


def _score(run):
    if run.ground_truth in ("2", "4"):
        raise RuntimeError("flaky failure on " + run.ground_truth)
    return 1.0


scorer = create_scorer("Flaky", id="flaky").generate_score(_score)
"""

EXPERIMENTS = """
import pytest


@pytest.mark.evalkit("experiments/*.toml")
def test_experiment(evalkit_experiment):
    assert evalkit_experiment.result.summary.total_items == 20
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """Two experiment files, ``nightly`` (passes) and ``smoke`` (misses its threshold and has
    failing pairs), and a test module running each as a test."""
    folder = pytester.path / "experiments"
    folder.mkdir()
    write_dataset(folder / "data.parquet", wrong=4, rows=20)
    write_experiment(folder, name="nightly", threshold=0.5)
    (folder / "flaky.py").write_text(FLAKY, encoding="utf-8")
    write_experiment(
        folder, name="smoke", threshold=0.95, extra='\n[[scorers]]\nuse = "flaky:scorer"\n'
    )
    pytester.makepyfile(test_evals=EXPERIMENTS)
    return pytester


def _stored(store: Path) -> list[tuple[str, int]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            "SELECT name, count(s.score) FROM experiments x LEFT JOIN scores s"
            " ON s.experiment_id = x.id GROUP BY name ORDER BY name"
        ).fetchall()


def test_the_plugin_is_registered_for_pytest_by_its_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"evalkit": "evalkit.pytest_plugin"}


def test_each_experiment_file_is_a_test_that_fails_with_its_verdict(
    suite: pytest.Pytester,
) -> None:
    run = suite.runpytest(*_plugin_args(), "-v")
    run.assert_outcomes(passed=1, failed=1)
    run.stdout.fnmatch_lines(
        ["*test_experiment?nightly? PASSED*", "*test_experiment?smoke? FAILED*"]
    )
    shown = run.stdout.str()
    failure = shown[shown.index("test_experiment[smoke]") :]
    assert "evalkit: 'smoke' (" in failure
    assert "failed its gates" in failure
    assert "FAILED" in failure  # the verdict line
    assert "exact" in failure
    assert "misses the threshold >= 0.95" in failure
    assert "failure groups:" in failure
    assert "flaky failure on <n>" in failure  # grouped, numbers as placeholders
    assert "lowest-scored items (no baseline: this run's lowest scores, not drops):" in failure
    assert "q000  score 0.000" in failure  # a wrong item, with its input and expected text
    assert "expected '0'" in failure
    assert "Traceback" not in failure
    # Both runs are stored like any run: 20 items x 2 scorers, and 20 x 3 minus 2 failures.
    assert _stored(suite.path / "experiments" / "evalkit.duckdb") == [
        ("nightly", 40),
        ("smoke", 58),
    ]


def test_k_selects_an_experiment_by_its_file_name(suite: pytest.Pytester) -> None:
    run = suite.runpytest(*_plugin_args(), "-k", "nightly")
    run.assert_outcomes(passed=1, deselected=1)
    assert _stored(suite.path / "experiments" / "evalkit.duckdb") == [("nightly", 40)]


PYTHON_RUNS = """
from evalkit import create_scorer

ROWS = [{"id": f"q{i}", "input": f"q{i}", "groundTruth": str(i),
         "output": str(i if i > 1 else -i)} for i in range(20)]


def exact():
    return create_scorer("Exact", id="exact").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )


def test_passes(evalkit_run):
    outcome = evalkit_run(ROWS, [exact()], thresholds={"exact": 0.5})
    assert outcome.passed


def test_misses_its_threshold(evalkit_run):
    evalkit_run(ROWS, [exact()], thresholds={"exact": 0.99})


def test_left_to_the_test(evalkit_run):
    outcome = evalkit_run(ROWS, [exact()], thresholds={"exact": 0.99}, check=False)
    assert not outcome.passed
    assert "misses the threshold" in outcome.message


def test_regresses(evalkit_run):
    evalkit_run(ROWS, [exact()], experiment="history")
    worse = [{**row, "output": "x"} if i < 12 else row for i, row in enumerate(ROWS)]
    evalkit_run(worse, [exact()], experiment="history", baseline="latest")
"""


def test_evalkit_run_gates_python_runs_and_stores_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_python=PYTHON_RUNS)
    run = pytester.runpytest(*_plugin_args(), "-v")
    run.assert_outcomes(passed=2, failed=2)
    run.stdout.fnmatch_lines(
        [
            "*test_passes PASSED*",
            "*test_misses_its_threshold FAILED*",
            "*test_left_to_the_test PASSED*",
            "*test_regresses FAILED*",
        ]
    )
    # Up to the short summary, which repeats every failure in full when CI is set.
    shown = run.stdout.str().split("short test summary info")[0]
    missed = shown[shown.index("_ test_misses_its_threshold _") :]
    assert "evalkit: 'test_misses_its_threshold' (" in missed
    assert "misses the threshold >= 0.99" in missed
    assert "lowest-scored items (no baseline: this run's lowest scores, not drops):" in missed
    assert "q1  score 0.000  input 'q1'  output '-1'  expected '1'" in missed
    assert "score 1.000" not in missed  # the lowest-scored items are those below the mean
    regressed = shown[shown.index("_ test_regresses _") :]
    assert "regressed" in regressed
    assert "baseline history (" in regressed
    assert "largest drops against the baseline history (" in regressed
    assert "    q2  1.000 → 0.000 (-1.000)  input 'q2'  output 'x'" in regressed
    assert "    q1  " not in regressed  # wrong in both runs: no drop
    assert _stored(pytester.path / "evalkit.duckdb") == [
        ("history", 40),
        ("test_left_to_the_test", 20),
        ("test_misses_its_threshold", 20),
        ("test_passes", 20),
    ]


MISUSED = """
import pytest


@pytest.mark.evalkit("experiments/*.toml")
def test_without_the_fixture():
    pass


@pytest.mark.evalkit("experiments/absent.toml")
def test_missing_file(evalkit_experiment):
    pass
"""


def test_misuse_is_a_collection_error_that_says_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_misused=MISUSED)
    run = pytester.runpytest(*_plugin_args())
    assert run.ret == pytest.ExitCode.INTERRUPTED
    shown = run.stdout.str()
    assert "add it to the test's arguments" in shown
    assert "Traceback" not in shown


PLAIN = """
import sys

HEAVY = ("pandas", "pyarrow", "duckdb", "openai", "numpy", "evalkit.run", "evalkit.cli")


def test_nothing_heavy_is_loaded(request):
    assert [name for name in HEAVY if name in sys.modules] == []
    assert "evalkit.pytest_plugin" in sys.modules  # the plugin is loaded, and that is all
    assert request.node.get_closest_marker("evalkit") is None
"""


def test_the_plugin_is_inert_in_a_suite_that_does_not_use_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain=PLAIN)
    run = pytester.runpytest_subprocess(*_plugin_args(), "--strict-markers", "-W", "error")
    run.assert_outcomes(passed=1)
    assert not list(pytester.path.rglob("*.duckdb"))  # no store, nothing written
    markers = pytester.runpytest_subprocess(*_plugin_args(), "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.evalkit(*experiment_files*"])


SHIPPED = """
import pytest


@pytest.mark.evalkit("experiments/*.toml")
def test_experiment(evalkit_experiment):
    pass
"""


def test_a_regression_lists_the_largest_drops_against_the_baseline(
    pytester: pytest.Pytester,
) -> None:
    # The shipped demo: quickstart (v1) first, then regression-demo (v2), judged against it.
    for folder, names in (
        ("experiments", ("quickstart.toml", "regression-demo.toml")),
        ("datasets", ("qa_v1.parquet", "qa_v2.parquet")),
    ):
        (pytester.path / folder).mkdir()
        for name in names:
            (pytester.path / folder / name).write_bytes((ROOT / folder / name).read_bytes())
    pytester.makepyfile(test_shipped=SHIPPED)
    run = pytester.runpytest(*_plugin_args(), "-v")
    run.assert_outcomes(passed=1, failed=1)
    shown = run.stdout.str()
    failure = shown[shown.index("_ test_experiment[regression-demo] _") :]
    assert "regressed" in failure
    with duckdb.connect(str(pytester.path / "evalkit.duckdb"), read_only=True) as con:
        ids = dict(con.execute("SELECT name, id FROM experiments").fetchall())
    baseline, candidate = ids["quickstart"], ids["regression-demo"]
    assert f"largest drops against the baseline quickstart ({baseline}):" in failure
    assert "worst items" not in failure
    assert "lowest-scored" not in failure
    for scorer in ("exact", "contains", "token_f1"):
        section = failure[failure.index(f"  {scorer}: ") :]
        dropped = diff_items(
            pytester.path / "evalkit.duckdb", baseline, candidate, scorer=scorer, dropped=True,
            limit=5,
        )  # fmt: skip
        assert section.startswith(f"  {scorer}: {dropped.total} pairs dropped")
        lines = section.splitlines()[1:6]
        for line, pair in zip(lines, dropped.pairs.to_dict(orient="records"), strict=True):
            before, after = pair["baseline_score"], pair["candidate_score"]
            assert line.startswith(
                f"    {pair['item_id']}  {before:.3f} → {after:.3f} ({after - before:+.3f})"
            )
        assert f"evalkit diff {baseline} {candidate} --scorer {scorer}" in section
    # The v2 answer that dropped (v1 knew it), not qa-0002's '100.', wrong in both versions.
    assert "    qa-0019  1.000 → 0.000 (-1.000)  input 'What happens to my notes" in failure
    assert "qa-0002" not in failure


def test_the_plugin_exports_what_a_test_imports_and_keeps_pytests_names() -> None:
    import evalkit.pytest_plugin as plugin

    assert plugin.__all__ == ["EvalOutcome"]
    for name in ("evalkit_experiment", "evalkit_run", "pytest_addoption", "pytest_configure",
                 "pytest_generate_tests", "pytest_runtest_call"):  # fmt: skip
        assert hasattr(plugin, name), name  # pytest finds hooks and fixtures as attributes

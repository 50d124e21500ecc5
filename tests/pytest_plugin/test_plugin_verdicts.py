"""The pytest plugin's runs keep their verdict in the store as ``evalkit run``'s do (issue 29):
the run's own gates, and for a run judged against ``baseline="latest"`` the regression too,
with the baseline and why."""

from __future__ import annotations

import duckdb
import pytest

from tests.pytest_plugin.test_plugin import PYTHON_RUNS, _plugin_args

pytest_plugins = ["pytester"]


def test_each_run_of_the_plugin_keeps_its_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_python=PYTHON_RUNS)
    pytester.runpytest(*_plugin_args()).assert_outcomes(passed=2, failed=2)
    with duckdb.connect(str(pytester.path / "evalkit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT name, verdict, baseline_id IS NOT NULL, baseline_reason FROM experiments"
            " ORDER BY name, started_at"
        ).fetchall()
    assert rows == [
        ("history", "passed", False, None),
        ("history", "failed", True, "newest passing run"),
        ("test_left_to_the_test", "failed", False, None),
        ("test_misses_its_threshold", "failed", False, None),
        ("test_passes", "passed", False, None),
    ]

"""evalkit's pytest plugin: evaluations as tests, gated like ``evalkit run``.

Registered with the ``pytest11`` entry point (``-p no:evalkit`` turns it off). It is inert
unless a test uses it: loading it imports only pytest and this module, and it adds a marker,
two fixtures and one option, nothing else.

- ``@pytest.mark.evalkit("experiments/*.toml")`` runs a test once per experiment file (the
  test id is the file's name, so ``pytest -k nightly`` selects that experiment); the test
  takes the ``evalkit_experiment`` fixture, the judged run of its file.
- ``evalkit_run(data, scorers, ...)`` runs Python-defined scorers over a dataset from inside
  a test and returns the judged run.

Either way the run goes to the store like any run, and a run that fails a gate (a threshold,
the error rate, no data, the regression against its baseline) fails its test when the test
body ends, with the per-scorer verdict, the failure groups and the items (those that dropped
most against the baseline, else the lowest-scored) as the message; ``outcome.check()`` fails
it at once, and ``evalkit_run(..., check=False)`` leaves the verdict to the test.

See docs/pages/design/pytest-verdict-after-the-body.md.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from evalkit.pytest_plugin._outcome import EvalOutcome

# What a test imports. The fixtures are requested by name and the hooks are pytest's: pytest
# finds both as the module's attributes, so they are defined here but not exported.
__all__ = ["EvalOutcome"]

_MARKER = (
    "evalkit(*experiment_files, store=None, baseline=None, limit=None): run the test once per"
    " experiment file (paths or globs, relative to the rootdir) through the"
    " evalkit_experiment fixture; the run fails the test when it fails a gate"
)
_OPTIONS = ("store", "baseline", "limit", "concurrency", "preflight")
_PENDING = pytest.StashKey[list["EvalOutcome"]]()


def __getattr__(name: str) -> Any:
    if name == "EvalOutcome":
        from evalkit.pytest_plugin._outcome import EvalOutcome

        return EvalOutcome
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``evalkit_store`` ini option."""
    parser.addini(
        "evalkit_store",
        "the score store of evalkit_run's runs, relative to the rootdir (evalkit.duckdb)",
        default="evalkit.duckdb",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``evalkit`` marker."""
    config.addinivalue_line("markers", _MARKER)


def _files(config: pytest.Config, patterns: tuple[Any, ...], where: str) -> list[Path]:
    if not patterns:
        pytest.fail(f"{where}: @pytest.mark.evalkit needs an experiment file", pytrace=False)
    found: list[Path] = []
    for pattern in patterns:
        path = Path(pattern)
        full = path if path.is_absolute() else config.rootpath / path
        matches = sorted(Path(p) for p in glob.glob(str(full)))
        if not matches:
            pytest.fail(
                f"{where}: @pytest.mark.evalkit: no experiment file {str(pattern)!r}"
                f" (under {config.rootpath})",
                pytrace=False,
            )
        found.extend(m for m in matches if m not in found)
    return found


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``evalkit`` runs once per experiment file its patterns match."""
    marker = metafunc.definition.get_closest_marker("evalkit")
    if marker is None:
        return
    where = metafunc.definition.nodeid
    if "evalkit_experiment" not in metafunc.fixturenames:
        pytest.fail(
            f"{where}: @pytest.mark.evalkit runs experiment files through the"
            " evalkit_experiment fixture; add it to the test's arguments",
            pytrace=False,
        )
    unknown = sorted(set(marker.kwargs) - set(_OPTIONS))
    if unknown:
        pytest.fail(
            f"{where}: @pytest.mark.evalkit: unknown option {', '.join(unknown)};"
            f" options: {', '.join(_OPTIONS)}",
            pytrace=False,
        )
    files = _files(metafunc.config, marker.args, where)
    metafunc.parametrize(
        "evalkit_experiment", files, indirect=True, ids=[file.stem for file in files]
    )


def _pending(request: pytest.FixtureRequest) -> list[EvalOutcome]:
    pending: list[EvalOutcome] = request.node.stash.setdefault(_PENDING, [])
    return pending


@pytest.fixture
def evalkit_experiment(request: pytest.FixtureRequest) -> EvalOutcome:
    """The judged run of this test's experiment file (see ``@pytest.mark.evalkit``)."""
    from evalkit.pytest_plugin._outcome import run_file

    path = getattr(request, "param", None)
    if path is None:
        pytest.fail(
            f"{request.node.nodeid}: evalkit_experiment needs @pytest.mark.evalkit(FILE)",
            pytrace=False,
        )
    marker = request.node.get_closest_marker("evalkit")
    options = dict(marker.kwargs) if marker is not None else {}
    outcome = run_file(Path(path), rootpath=request.config.rootpath, **options)
    _pending(request).append(outcome)
    return outcome


@pytest.fixture
def evalkit_run(request: pytest.FixtureRequest) -> Callable[..., EvalOutcome]:
    """Run scorers over a dataset from a test: ``evalkit_run(data, scorers, **options)``.

    Options are those of ``run_evals`` (``target``, ``thresholds``, ``max_error_rate``,
    ``concurrency``…) plus ``baseline`` (``"latest"``, a run name or id: the regression gate),
    ``max_drop`` and ``check`` (False: the verdict does not fail the test by itself). The run
    is named after the test unless ``experiment=`` says otherwise, and is stored in the
    ``evalkit_store`` ini option's store unless ``store=`` says otherwise.
    """
    from evalkit.pytest_plugin._outcome import run_python

    def run(data: Any, scorers: Any, **options: Any) -> EvalOutcome:
        __tracebackhide__ = True
        check = options.pop("check", True)
        options.setdefault("experiment", request.node.name)
        store = request.config.getini("evalkit_store")
        options.setdefault("store", request.config.rootpath / store)
        outcome = run_python(data, scorers, **options)
        if check:
            _pending(request).append(outcome)
        return outcome

    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After a body that passed, judge every run it made: a failed gate fails the test."""
    result = yield
    __tracebackhide__ = True
    for outcome in _unchecked(item):
        outcome.check()
    return result


def _unchecked(item: pytest.Item) -> Iterator[EvalOutcome]:
    for outcome in item.stash.get(_PENDING, []):
        if not outcome.checked:
            yield outcome

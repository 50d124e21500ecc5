"""The compatibility suite: evalkit's LLM judges against real model servers.

Not part of the default test run (pyproject's ``addopts`` has ``--ignore=tests/compat``); run it
explicitly after ``tests/compat/install.sh`` (see docs/pages/reference/compatibility.md)::

    EVALKIT_COMPAT_PREFIX=/path/to/prefix python -m pytest tests/compat -p no:cacheprovider \\
        --compat-results docs/pages/reference/compat-results.json
    python -m tests.compat.table   # renders docs/pages/reference/compatibility.md from it

Each server is started once per session (``compat_server`` is parametrized over both). The
tests put what they measured in ``compat_results``; with ``--compat-results PATH`` the session
writes it there at the end, with the date and the versions.
"""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compat._servers import (
    SERVER_NAMES,
    CompatSetupError,
    Installed,
    RunningServer,
    running_server,
)

_RESULTS: dict[str, Any] = {"servers": {}}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--compat-results",
        default=None,
        help="write what the compatibility suite measured to this JSON file",
    )
    parser.addoption(
        "--compat-servers",
        default=",".join(SERVER_NAMES),
        help=f"comma-separated servers to run against (default: {','.join(SERVER_NAMES)})",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "compat_server" in metafunc.fixturenames:
        names = [n for n in metafunc.config.getoption("--compat-servers").split(",") if n]
        metafunc.parametrize("compat_server", names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def installed() -> Installed:
    try:
        return Installed.find()
    except CompatSetupError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def compat_server(
    request: pytest.FixtureRequest,
    installed: Installed,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningServer]:
    """A real model server (``request.param``: "llama-server" or "llama-cpp-python")."""
    name: str = request.param
    try:
        with running_server(name, installed, tmp_path_factory.mktemp(name)) as server:
            entry = compat_results(server)
            entry.update(version=server.version, model=installed.model.name, **server.notes)
            yield server
    except CompatSetupError as exc:
        pytest.fail(f"{name}: {exc}", pytrace=False)


def compat_results(server: RunningServer) -> dict[str, Any]:
    """The results entry of ``server``, created on first use."""
    servers: dict[str, Any] = _RESULTS["servers"]
    return servers.setdefault(server.name, {})  # type: ignore[no-any-return]


@pytest.fixture
def results(compat_server: RunningServer) -> dict[str, Any]:
    """The results entry of the server under test, for the test to fill in."""
    return compat_results(compat_server)


def _evalkit_version() -> str:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        ["git", "-C", str(root), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "unknown"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keeps each test's outcome per server: the table shows how much of the suite passed."""
    if "[" not in report.nodeid or (report.when != "call" and report.outcome == "passed"):
        return
    name, _, param = report.nodeid.rpartition("::")[2].partition("[")
    param = param.removesuffix("]")
    for server in SERVER_NAMES:  # the server's id is first or last among the test's ids
        if param.startswith(server) or param.endswith(server):
            rest = param.removeprefix(server).removesuffix(server).strip("-")
            break
    else:
        return
    suite = _RESULTS["servers"].setdefault(server, {}).setdefault("suite", {})
    key = f"{name}[{rest}]" if rest else name
    suite[key] = report.outcome if report.when == "call" else f"{report.outcome} ({report.when})"


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Server by server, section by section (probes, evalkit, suite, ...): what this session
    measured replaces the same entry of an earlier session, whole (figures are never mixed)."""
    out = {name: dict(entry) for name, entry in old.items()}
    for name, entry in new.items():
        merged = out.setdefault(name, {})
        for section, value in entry.items():
            earlier = merged.get(section)
            if isinstance(value, dict) and isinstance(earlier, dict):
                merged[section] = {**earlier, **value}
            else:
                merged[section] = value
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--compat-results")
    if not path or not _RESULTS["servers"]:
        return
    out = Path(path)
    previous: dict[str, Any] = {}
    if out.exists():
        previous = json.loads(out.read_text())
    # A run of some tests, or against one server, keeps the figures of the others.
    servers = _merged(previous.get("servers", {}), _RESULTS["servers"])
    document = {
        "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "evalkit": _evalkit_version(),
        "machine": f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}",
        "servers": dict(sorted(servers.items())),
    }
    out.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")

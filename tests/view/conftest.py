"""The viewer's fixtures: a real store written by real ``evalkit run``s (code scorers and an
LLM judge on the shipped test server), the viewer as ``evalkit view`` in its own process, and
the system's Chromium driven by Playwright."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from evalkit.store._verdicts import GateRecord, record_verdict
from evalkit.testing import server_process
from tests.cli.conftest import run_cli

KEY_ENV = "EVALKIT_VIEW_TEST_KEY"
ROWS = 150
CATEGORIES = ("billing", "account", "shipping")
#: Outputs of the candidate that must render inert.
SCRIPT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
BIDI = "refund \u202eevil.exe\u202c approved"
HUGE = "lorem ipsum " * 87_382  # just over 1 MB
HOSTILE = {"q100": SCRIPT, "q101": BIDI, "q102": HUGE}
#: The judge fails the rubric of these shipping items (answered right in both runs), in both
#: runs: two failures that differ only by a request id (one failure group) and one other.
JUDGE_FAULTS = {
    "q104": "upstream overloaded (request req_8f3aB91c2dE4)",
    "q107": "upstream overloaded (request req_1c2dE48f3aB9)",
    "q110": "prompt too long: 5120 tokens",
}


def candidate_wrong(i: int) -> bool:
    """The candidate answers billing and account questions of the first 90 rows wrongly."""
    return i < 90 and CATEGORIES[i % 3] != "shipping"


def write_rows(path: Path, *, candidate: bool, rows: int = ROWS) -> Path:
    outputs = []
    for i in range(rows):
        answer = str(2 * i + 1) if candidate and candidate_wrong(i) else str(2 * i)
        outputs.append(HOSTILE.get(f"q{i:03d}", answer) if candidate else answer)
    pd.DataFrame(
        {
            "id": [f"q{i:03d}" for i in range(rows)],
            "input": [f"What is {i} + {i}?" for i in range(rows)],
            "groundTruth": [str(2 * i) for i in range(rows)],
            "output": outputs,
            "metadata": [json.dumps({"category": CATEGORIES[i % 3]}) for i in range(rows)],
        }
    ).to_parquet(path)
    return path


def write_file(folder: Path, name: str, dataset: str, judge_url: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f"""
[experiment]
name = "{name}"
dataset = "{dataset}"
store = "evalkit.duckdb"
concurrency = 8
slices = ["category"]

[judge]
model = "fake-judge"
base_url = "{judge_url}"
api_key_env = "{KEY_ENV}"

[[scorers]]
use = "exact_match"
id = "exact"

[[scorers]]
use = "token_f1"

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number.", scale = 1.0 }}
""",
        encoding="utf-8",
    )
    return path


def write_rules(path: Path) -> Path:
    """The test server's rules: a 400 (not retried) for each item of :data:`JUDGE_FAULTS`."""
    rules = [
        {"match": f"What is {int(i[1:])} + {int(i[1:])}?", "fault": {"http": 400, "message": m}}
        for i, m in JUDGE_FAULTS.items()
    ]
    path.write_text(json.dumps(rules), encoding="utf-8")
    return path


#: Why the candidate's verdict chose its baseline, as the fixture stores it.
BASELINE_REASON = "newest passing run of nightly"


def write_verdicts(store: Path, baseline: str, candidate: str, smoke: str) -> None:
    """The nights' verdicts, recorded as a run records them: the baseline passed, the
    candidate failed against it (exact and token_f1 dropped, the rubric held), ``smoke`` was
    never judged (NULL, as a cancelled run)."""
    record_verdict(store, baseline, "passed")
    gates = [
        GateRecord("exact", False, ("mean 0.580 below threshold_min 0.9",
                                    "regressed: -0.420 (p < 0.001)"),
                   mean=0.58, threshold_min=0.9, baseline_mean=1.0, delta=-0.42,
                   p_value=0.0001, regression="regressed"),
        GateRecord("token_f1", False, ("regressed: -0.390 (p < 0.001)",), mean=0.58,
                   baseline_mean=0.97, delta=-0.39, p_value=0.0001, regression="regressed"),
        GateRecord("rubric", True, (), mean=0.5, baseline_mean=0.5, delta=0.0, p_value=1.0,
                   regression="unchanged"),
    ]  # fmt: skip
    record_verdict(
        store,
        candidate,
        "failed",
        gates,
        baseline_id=baseline,
        baseline_reason=BASELINE_REASON,
    )
    record_verdict(store, smoke, None)


@dataclass(frozen=True)
class Store:
    path: Path
    baseline: str
    candidate: str
    smoke: str


def _run(folder: Path, file: str) -> str:
    done = run_cli("run", file, "--no-progress", "--json", cwd=folder, env_extra={KEY_ENV: "k"})
    assert done.code in (0, 1), done.stderr
    return str(json.loads(done.stdout)["experiment_id"])


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """``nightly`` twice (the second regressed on billing and account, with hostile outputs;
    the judge failing three items in both) and one ``smoke`` run, each with exact, token_f1
    and an LLM rubric; the first night passed, the second failed, smoke was not judged."""
    folder = tmp_path_factory.mktemp("view-store")
    with server_process("--rules", str(write_rules(folder / "rules.json"))) as url:
        write_rows(folder / "v1.parquet", candidate=False)
        write_rows(folder / "v2.parquet", candidate=True)
        write_rows(folder / "smoke.parquet", candidate=False, rows=10)
        write_file(folder, "nightly", "v1.parquet", url)
        baseline = _run(folder, "nightly.toml")
        write_file(folder, "nightly", "v2.parquet", url)
        candidate = _run(folder, "nightly.toml")
        write_file(folder, "smoke", "smoke.parquet", url)
        smoke = _run(folder, "smoke.toml")
    write_verdicts(folder / "evalkit.duckdb", baseline, candidate, smoke)
    return Store(folder / "evalkit.duckdb", baseline, candidate, smoke)


def start_viewer(store: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``evalkit view --store STORE --port 0 --no-browser`` in its own process, and its URL."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "view", "--store", str(store), "--port", "0",
         "--no-browser", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stderr is not None
    line = proc.stdout.readline()
    if " at http://" not in line:
        proc.kill()
        raise RuntimeError(f"evalkit view did not start: {line!r} {proc.stderr.read()!r}")
    return proc, line.split(" at ", 1)[1].split()[0]


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture(scope="session")
def viewer(store: Store) -> Iterator[str]:
    """The base URL of ``evalkit view`` over :func:`store`."""
    proc, url = start_viewer(store.path)
    try:
        yield url
    finally:
        stop(proc)


def chromium_executable() -> str | None:
    """The system's Chromium (Debian's package), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium (the system's executable; Playwright downloads no browser).

    Per module: Playwright's synchronous API runs an event loop of its own while it is
    started, so it is stopped before any later test runs an event loop of its own."""
    executable = chromium_executable()
    if executable is None:
        pytest.skip(
            "no Chromium executable on this machine: the viewer's browser tests need one"
            " (apt-get install -y chromium; .ci/run installs it)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    """A fresh page; console errors and page errors collected in ``page.errors``."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    opened.errors = []
    opened.on("pageerror", lambda exc: opened.errors.append(str(exc)))
    try:
        yield opened
    finally:
        context.close()


#: Runs of the paged store (:func:`many_runs`): more than two pages of the run list.
MANY = 130


def many_name(i: int) -> str:
    """The name of run ``i`` of :func:`many_runs`: every fifth is ``smoke``."""
    return "smoke" if i % 5 == 4 else "nightly"


def many_verdict(i: int) -> str:
    """The verdict of run ``i`` of :func:`many_runs`: every seventh night failed."""
    return "failed" if i % 7 == 3 else "passed"


def many_status(i: int) -> str:
    """The status of run ``i`` of :func:`many_runs`: every eleventh was cancelled."""
    return "cancelled" if i % 11 == 6 else "completed"


def many_mean(i: int) -> float:
    """Run ``i``'s mean of ``exact_match`` in :func:`many_runs`."""
    return (i % 10) / 10


@dataclass(frozen=True)
class ManyRuns:
    path: Path
    template: str
    #: Every run's id, newest first (the run list's order): ``run0129`` ... ``run0000``, then
    #: the template run, the oldest.
    order: tuple[str, ...]


@pytest.fixture(scope="session")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> ManyRuns:
    """A store of :data:`MANY` runs and the one they were copied from: ``run_evals`` wrote a
    run of 4 items (``template``, made the oldest), copied in SQL as ``run0000`` (oldest) to
    ``run0129``, a minute apart, named, judged and scored as ``many_*`` say, none with a
    stored baseline (the viewer chooses one), every thirteenth without a dataset fingerprint
    (whether it pairs is then counted from its items). Writing 130 runs through
    ``run_evals`` would take minutes."""
    import duckdb

    from evalkit import run_evals_sync
    from evalkit.scorers import exact_match

    path = tmp_path_factory.mktemp("view-many") / "evalkit.duckdb"
    rows = [{"id": f"q{i}", "input": f"q {i}", "groundTruth": "a", "output": "a"}
            for i in range(4)]  # fmt: skip
    # In a thread of its own: a browser test may be the first to ask for this fixture, while
    # Playwright's event loop runs in this one.
    with ThreadPoolExecutor(1) as thread:
        template = thread.submit(
            lambda: (
                run_evals_sync(
                    rows, [exact_match()], store=path, experiment="template", progress=False
                ).experiment_id
            )
        ).result()
    ids = [f"run{i:04d}" for i in range(MANY)]
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE experiments SET started_at = TIMESTAMP '2025-12-31' WHERE id = ?",
            [template],
        )
        con.execute(
            "CREATE TEMP TABLE copies AS SELECT * FROM (SELECT unnest(?) AS id,"
            " unnest(?) AS name, unnest(?) AS verdict, unnest(?) AS status, unnest(?) AS mean,"
            " unnest(range(?)) AS i)",
            [ids, [many_name(i) for i in range(MANY)], [many_verdict(i) for i in range(MANY)],
             [many_status(i) for i in range(MANY)], [many_mean(i) for i in range(MANY)], MANY],
        )  # fmt: skip
        con.execute(
            "INSERT INTO experiments SELECT e.* REPLACE (c.id AS id, c.name AS name,"
            " c.status AS status, c.verdict AS verdict,"
            " TIMESTAMP '2026-01-01' + to_minutes(c.i) AS started_at,"
            " TIMESTAMP '2026-01-01' + to_minutes(c.i) + INTERVAL 30 SECOND AS completed_at,"
            " CASE WHEN c.i % 13 = 0 THEN NULL ELSE e.dataset_fingerprint END"
            " AS dataset_fingerprint) FROM experiments e, copies c WHERE e.id = ?",
            [template],
        )
        for table in ("experiment_scorers", "experiment_items"):
            con.execute(
                f"INSERT INTO {table} SELECT t.* REPLACE (c.id AS experiment_id)"
                f" FROM {table} t, copies c WHERE t.experiment_id = ?",
                [template],
            )
        con.execute(
            "INSERT INTO scores SELECT s.* REPLACE (c.id AS experiment_id, c.mean AS score)"
            " FROM scores s, copies c WHERE s.experiment_id = ?",
            [template],
        )
    return ManyRuns(path, template, (*reversed(ids), template))


@pytest.fixture(scope="session")
def many_viewer(many_runs: ManyRuns) -> Iterator[str]:
    """The base URL of ``evalkit view`` over :func:`many_runs`."""
    proc, url = start_viewer(many_runs.path)
    try:
        yield url
    finally:
        stop(proc)

"""A run with no judge, no target and no labels imports none of the libraries only judges or
agreement with human labels need, no evalkit module imports pandas as it loads, and
``evalkit --help`` imports only the standard library (issue 31 item 6: the quickstart's 1.86 s
were mostly imports of openai and pandas).

The installed ``evalkit`` command is run with ``PYTHONPROFILEIMPORTTIME``: Python then lists
on stderr every module the process imported, nested under the module whose loading imported
it. pandas is not imported either with DuckDB 2 (the README's first command): evalkit builds
its Arrow columns without pyarrow's pandas probe (evalkit/_arrow_arrays.py) and lists
regressed items only for a scorer that has some. DuckDB 1.5, which the test extras pin
(``ducklake``), imports pandas itself to bind a query parameter, so with it only evalkit's own
imports are checked here; tests/install/test_readme_commands.py checks a run under DuckDB 2.
Speed itself is measured by tests/benchmarks/bench_start.py.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from evalkit.scorers._families import FAMILY_OF
from tests.cli.conftest import Cli, run_command, write_dataset

ROOT = Path(__file__).resolve().parents[2]

#: What only a judge (openai and its transports, jsonschema for its replies) or agreement
#: with human labels (scikit-learn, scipy, krippendorff) needs.
HEAVY = ("aiohttp", "httpx2", "jsonschema", "krippendorff", "openai", "scipy", "sklearn")

#: evalkit's modules (and the libraries) that only a judged or a sharded run uses.
UNUSED_BY_A_LOCAL_CODE_RUN = {
    "evalkit.judge._cache",
    "evalkit.judge._cache_db",
    "evalkit.judge._batch_db",
    "evalkit.run._executors",
    "evalkit.run._sharded",
    "evalkit.run._worker",
    "multiprocessing",
    "concurrent.futures.process",
}

_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|( *)([\w.]+)\s*$", re.MULTILINE)


def loaded_by(stderr: str) -> dict[str, str | None]:
    """Each module of a ``-X importtime`` listing, and the module whose loading imported it
    (None: imported by a call, once every import had finished). A module is listed after
    those it imported, one level less indented."""
    found = [(len(indent) // 2, name) for indent, name in _IMPORTED.findall(stderr)]
    parents: dict[str, str | None] = {}
    for i, (depth, name) in enumerate(found):
        later = (n for d, n in found[i + 1 :] if d == depth - 1)
        parents.setdefault(name, next(later, None) if depth else None)
    return parents


def _installed(
    *args: str, cwd: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str | None]]:
    """The installed command's result and what its process imported (see :func:`loaded_by`)."""
    command = Path(sys.executable).with_name("evalkit")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    done = subprocess.run(
        [str(command), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    imported = loaded_by(done.stderr)
    assert "evalkit.cli" in imported, done.stderr[-2000:]  # the listing is there to be read
    return done, imported


def _packages(imported: dict[str, str | None]) -> set[str]:
    return {name.split(".")[0] for name in imported}


def test_the_listing_tells_who_imported_a_module() -> None:
    listing = "\n".join(
        f"import time: 1 | 1 | {'  ' * depth}{name}"
        for depth, name in [(2, "c"), (1, "b"), (1, "d"), (0, "a"), (0, "e")]
    )
    assert loaded_by(listing) == {"c": "b", "b": "a", "d": "a", "a": None, "e": None}


def test_the_quickstart_and_the_regression_demo_import_no_judge_or_labels_library(
    tmp_path: Path,
) -> None:
    """Both shipped code-scorer experiments: the quickstart has no baseline yet, the demo
    compares with it and fails its gate (slices, a regression, its regressed items listed)."""
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments")
    shutil.copytree(ROOT / "datasets", tmp_path / "datasets")
    for experiment, code in (("quickstart", 0), ("regression-demo", 1)):
        done, imported = _installed(
            "run", f"experiments/{experiment}.toml", "--no-progress", "--slices", cwd=tmp_path
        )
        assert done.returncode == code, done.stderr[-2000:]
        assert "baseline" in done.stdout or experiment == "quickstart"
        assert sorted(_packages(imported).intersection(HEAVY)) == [], experiment
        by_evalkit = {
            name: parent
            for name, parent in imported.items()
            if name.split(".")[0] == "pandas" and (parent or "").startswith("evalkit")
        }
        assert by_evalkit == {}, experiment
        if experiment == "quickstart" and int(duckdb.__version__.split(".")[0]) >= 2:
            # The demo lists its regressed items (diff_items' DataFrame): that one may.
            assert "pandas" not in imported
        # Only the families of the scorers the file uses are imported (issue 31 item 6: every
        # family, the LLM-judged ones with their pydantic reply models, was imported to build
        # three code scorers).
        text = (tmp_path / "experiments" / f"{experiment}.toml").read_text(encoding="utf-8")
        used = {FAMILY_OF[name] for name in re.findall(r'^use = "(\w+)"', text, re.MULTILINE)}
        assert used == {"evalkit.scorers._text", "evalkit.scorers._overlap"}
        families = set(FAMILY_OF.values())
        assert sorted(families.intersection(imported) - used) == [], experiment
        assert "evalkit.scorers._judge_step" not in imported
        # No bar is drawn (--no-progress), no agreement table printed: neither is imported.
        assert "tqdm" not in imported
        assert "evalkit.cli._agreement" not in imported
        # The store's busy retry and commit lock are evalkit's own: tenacity and filelock would
        # add 17 and 30 ms to every run (docs/pages/design/hand-written-pieces.md, H1).
        assert sorted(_packages(imported).intersection({"filelock", "tenacity"})) == []
        # Nor the judge cache (its DuckDB files and batch journal) or the process machinery
        # of a sharded run: a run of code scorers in one process uses neither.
        assert sorted(UNUSED_BY_A_LOCAL_CODE_RUN.intersection(imported)) == [], experiment
    assert len(list((tmp_path / "reports").glob("*.html"))) == 2


def test_help_imports_only_the_standard_library(tmp_path: Path) -> None:
    done, imported = _installed("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: evalkit ")
    # What Python imports before evalkit's first line (site's .pth hooks) is not evalkit's.
    bare = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    outside = _packages(imported) - _packages(loaded_by(bare.stderr))
    outside -= {*sys.stdlib_module_names, "evalkit"}
    # pickle tries Jython's org.python.core, which Python lists though it is not there
    assert sorted(name for name in outside if importlib.util.find_spec(name)) == []


#: A scorer that notes the collector's state while the run scores.
_GC_PROBE = """
import gc, json
from pathlib import Path

from evalkit import create_scorer


def _score(run):
    Path("gc.json").write_text(json.dumps([gc.isenabled(), gc.get_freeze_count()]))
    return 1.0


scorer = create_scorer("Probe", id="probe").generate_score(_score)
"""


def _gc_probe_experiment(folder: Path) -> None:
    write_dataset(folder / "data.parquet", rows=3)
    (folder / "probe.py").write_text(_GC_PROBE, encoding="utf-8")
    (folder / "probe.toml").write_text(
        '[experiment]\nname = "probe"\ndataset = "data.parquet"\nstore = "evalkit.duckdb"\n\n'
        '[[scorers]]\nuse = "probe:scorer"\n',
        encoding="utf-8",
    )


def test_the_command_freezes_what_it_loaded_and_collects_while_it_runs(tmp_path: Path) -> None:
    """The collector scanned the command's ~630 modules' objects while they loaded, a full
    collection among them (docs/pages/design/startup-objects-frozen.md)."""
    _gc_probe_experiment(tmp_path)
    done = run_command(
        [str(Path(sys.executable).with_name("evalkit")), "run", "probe.toml", "--no-progress"],
        cwd=tmp_path,
    )
    assert done.code == 0, done.stderr
    enabled, frozen = json.loads((tmp_path / "gc.json").read_text(encoding="utf-8"))
    assert enabled is True
    assert frozen > 10_000  # DuckDB's, pyarrow's, numpy's, pydantic's and evalkit's objects


def test_the_command_line_called_in_process_leaves_the_collector_alone(
    cli: Cli, tmp_path: Path
) -> None:
    _gc_probe_experiment(tmp_path)
    before = gc.get_freeze_count()
    done = cli("run", "probe.toml", "--no-progress")
    assert done.code == 0, done.stderr
    enabled, frozen = json.loads((tmp_path / "gc.json").read_text(encoding="utf-8"))
    assert (enabled, frozen) == (True, before)
    assert gc.isenabled()


@pytest.mark.parametrize(
    "args",
    [("experiments", "--store", "missing.duckdb"), ("diff", "a", "b", "--store", "missing.duckdb")],
    ids=["imported-when-it-runs", "imported-with-the-parser"],
)
def test_every_command_runs_with_the_collector_on(tmp_path: Path, args: tuple[str, ...]) -> None:
    """The command pauses the collector while it loads: each command, whether its module is
    imported when it runs (``run``, ``experiments``) or with the parser (``diff``, ``view``,
    ``export``), turns it on again before it starts."""
    probe = (
        "import gc, json, sys\nfrom evalkit import _startup_gc\n_startup_gc.pause()\n"
        "from evalkit.cli import main\ncode = main(sys.argv[1:])\n"
        "print(json.dumps([code, gc.isenabled(), gc.get_freeze_count() > 0]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    code, enabled, frozen = json.loads(done.stdout.splitlines()[-1])
    assert code == 2  # the command itself ran, and found no store
    assert "no such score store" in done.stderr
    assert (enabled, frozen) == (True, True)

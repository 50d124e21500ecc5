"""Q1/Q2 — how long the first commands a new user types take: the quickstart and ``--help``.

Run: ``python -m tests.benchmarks.bench_start [--runs N] [--save DIR] [--here]``. The
``evalkit`` command a user installs with the README's first command (``pip install
evalkit-runner``: the base install, the newest DuckDB) runs in a copy of the repository's
``experiments/`` and ``datasets/``; the benchmark installs it into a fresh venv with uv (``pip
install uv`` first; its cache makes that a few seconds). ``--here`` measures the command beside
this interpreter instead (the test extras pin DuckDB 1.5.5, which imports pandas to bind a
query parameter: about 0.3 s more).

- Q1 ``evalkit run experiments/quickstart.toml``: first into an empty store (a fresh clone),
  then again (a baseline to compare with: the regression gate, the regressed items);
- Q2 ``evalkit --help``.

Each is run N times (default 5); the median wall time is the figure, with the median CPU time
of the process (user + system), which other load changes less, and the load average. Then each
runs once more under ``-X importtime`` (``PYTHONPROFILEIMPORTTIME=1``): the slowest imports
(cumulative, as imported by evalkit or at its first call) are printed, and the whole listing is
saved to DIR with ``--save``. Targets (issue 31, a quiet 2-core machine): Q1 <= 0.6 s, Q2 <=
0.3 s. The floor under Q1 is measured too: the interpreter's start, then the same with only the
libraries the quickstart's job is built on imported (`FLOOR`), nothing of evalkit. The
quickstart's progress bar is off (``--no-progress``): here stderr is no terminal.
evalkit's modules are compiled to bytecode first, as ``pip install`` does for a user: an
editable install under ``PYTHONDONTWRITEBYTECODE`` otherwise compiles about 200 modules from
source at every start (about 0.2 s of CPU).
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import evalkit

ROOT = Path(__file__).resolve().parents[2]
COMMAND = Path(sys.executable).with_name("evalkit")  # --here; else set by _base_install
TARGETS = {"Q1": 0.6, "Q2": 0.3}
#: Libraries worth naming when they are imported (issue 31).
WATCHED = ("openai", "pandas", "scipy", "sklearn", "httpx2", "aiohttp", "jinja2", "jsonschema",
           "pydantic", "numpy", "pyarrow", "duckdb", "tqdm", "krippendorff")  # fmt: skip

#: What the quickstart's job cannot run without as it is built: the store (duckdb), the dataset
#: and the store's rows (pyarrow and its Parquet reader; numpy comes with pyarrow and serves the
#: paired comparison), the experiment file's validation (pydantic), the HTML report (jinja2)
#: and the run's concurrency (anyio).
FLOOR = ("duckdb", "pyarrow.parquet", "numpy", "pydantic", "jinja2", "anyio")

_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)([\w.]+)\s*$", re.MULTILINE)


def _once(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one run of the command, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(COMMAND), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: a gate failed, still a whole run
        raise SystemExit(f"evalkit {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def _top_imports(listing: str, count: int = 12) -> list[tuple[str, float]]:
    """The slowest imports that are not nested in another (what evalkit's modules, or its
    calls, imported), cumulative milliseconds."""
    rows = [(name, int(total) / 1000) for _, total, indent, name in _LINE.findall(listing)
            if len(indent) <= 1]  # fmt: skip
    return sorted(rows, key=lambda row: -row[1])[:count]


def _watched(listing: str) -> list[str]:
    found = {name.split(".")[0] for *_, name in _LINE.findall(listing)}
    return [name for name in WATCHED if name in found]


def _measure(
    label: str, args: list[str], folder: Path, runs: int, *, fresh: Path | None, save: Path | None
) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    walls, cpus = [], []
    for _ in range(runs):
        if fresh is not None:  # an empty store: the first run of a fresh clone
            for path in fresh.parent.glob(fresh.name + "*"):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        wall, cpu, _ = _once(args, folder, env)
        walls.append(wall)
        cpus.append(cpu)
    if fresh is not None:
        for path in fresh.parent.glob(fresh.name + "*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    _, _, listing = _once(args, folder, {**env, "PYTHONPROFILEIMPORTTIME": "1"})
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"  {label}: median {wall:.3f} s wall, {cpu:.3f} s CPU of {runs} runs "
          f"(wall {min(walls):.3f}-{max(walls):.3f} s)")  # fmt: skip
    print(f"    imported: {', '.join(_watched(listing)) or 'none of ' + ', '.join(WATCHED)}")
    print("    slowest imports (cumulative ms): " + ", ".join(
        f"{name} {ms:.0f}" for name, ms in _top_imports(listing)))  # fmt: skip
    if save is not None:
        out = save / (re.sub(r"\W+", "-", label).strip("-") + ".importtime.txt")
        out.write_text(listing, encoding="utf-8")
        print(f"    -X importtime listing: {out}")
    return wall


def _floor(runs: int) -> tuple[float, float]:
    """Median wall seconds of the command's interpreter doing nothing, then importing `FLOOR`."""
    python = COMMAND.with_name("python")
    walls: dict[str, list[float]] = {"pass": [], "import " + ", ".join(FLOOR): []}
    for _ in range(runs):
        for code, times in walls.items():
            started = time.perf_counter()
            subprocess.run([str(python), "-c", code], check=True)
            times.append(time.perf_counter() - started)
    bare, libraries = (statistics.median(times) for times in walls.values())
    print(f"  floor: the interpreter alone {bare:.3f} s; importing {', '.join(FLOOR)}:"
          f" {libraries:.3f} s median wall of {runs} runs")  # fmt: skip
    return bare, libraries


def _base_install(venv: Path) -> Path:
    """The README's first command into a fresh ``venv``, compiled to bytecode as pip does;
    its ``evalkit`` command."""
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([*uv, "pip", "install", "--quiet", "--compile-bytecode", "--python",
                    str(venv), "-e", str(ROOT)], check=True)  # fmt: skip
    python = venv / "bin" / "python"
    found = subprocess.run(
        [python, "-c", "import duckdb, pyarrow; print(duckdb.__version__, pyarrow.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    print("installed: duckdb {}, pyarrow {}".format(*found.stdout.split()))  # fmt: skip
    return venv / "bin" / "evalkit"


def main() -> None:
    global COMMAND
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (5)")
    parser.add_argument("--save", type=Path, help="a folder for the -X importtime listings")
    parser.add_argument("--here", action="store_true", help="measure this venv's command")
    args = parser.parse_args()
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
    compileall.compile_dir(Path(evalkit.__file__).parent, quiet=1)  # the installed package
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.here:
            COMMAND = _base_install(folder / "venv")
        elif not COMMAND.is_file():
            raise SystemExit(f"{COMMAND}: no evalkit command; pip install -e . first")
        print(f"load average before: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        shutil.copytree(ROOT / "experiments", folder / "experiments")
        shutil.copytree(ROOT / "datasets", folder / "datasets")
        run = ["run", "experiments/quickstart.toml", "--no-progress"]
        store = folder / "evalkit.duckdb"  # the quickstart's store, beside experiments/
        first = _measure("quickstart, empty store", run, folder, args.runs, fresh=store,
                         save=args.save)  # fmt: skip
        _once(run, folder, dict(os.environ))  # the baseline of the runs that follow
        again = _measure("quickstart, with a baseline", run, folder, args.runs, fresh=None,
                         save=args.save)  # fmt: skip
        help_ = _measure("evalkit --help", ["--help"], folder, args.runs, fresh=None,
                         save=args.save)  # fmt: skip
        bare, libraries = _floor(args.runs)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for key, label, wall in (("Q1", "quickstart (empty store)", first),
                             ("Q1", "quickstart (with a baseline)", again),
                             ("Q2", "evalkit --help", help_)):  # fmt: skip
        target = TARGETS[key]
        verdict = "met" if wall <= target else "NOT met"
        print(f"{key} {label}: {wall:.3f} s median wall, target <= {target} s: {verdict}"
              f" ({wall / target:.2f}x the target)")  # fmt: skip
    print(f"Q1 floor: {libraries:.3f} s before any of evalkit's own work (the interpreter"
          f" {bare:.3f} s, then {', '.join(FLOOR)}): {libraries / TARGETS['Q1']:.2f}x the"
          f" quickstart's target")  # fmt: skip


if __name__ == "__main__":
    main()

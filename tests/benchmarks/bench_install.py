"""I1 — the base install: what ``pip install evalkit-runner`` (no extras) puts on a machine.

The project at a git revision (``--rev``, default the working tree's committed and uncommitted
files) is copied to a temporary folder and installed as a user installs it, not editable,
with ``pip install`` into a fresh venv (Python of this interpreter; ``--installer uv`` uses
``uv pip install``, much faster, same resolution). Printed: the size of the venv's
site-packages as ``du -sk`` counts it, the packages ``pip list`` shows apart from pip and
setuptools (evalkit-runner itself included), the largest of them (the files each one's RECORD
lists), and whether scikit-learn, scipy or krippendorff came in. The figures depend on the
versions the index offers on the day: the page quotes them with the date.

Run: ``python -m tests.benchmarks.bench_install [--rev REV] [--installer pip|uv]``; before and
after a change of ``[project] dependencies``: ``--rev main`` and the working tree.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What issue 31 asked to leave the base install (by distribution name).
STATISTICS = ("scikit-learn", "scipy", "krippendorff")
# Run by the venv's own python: each distribution's size from the files its RECORD lists.
_SIZES = """
import json, importlib.metadata as md
sizes = {}
for dist in md.distributions():
    total = 0
    for f in dist.files or ():
        try:
            total += dist.locate_file(f).stat().st_size
        except OSError:
            pass
    sizes[dist.metadata["Name"]] = total
print(json.dumps(sizes))
"""


def _project_copy(rev: str | None, folder: Path) -> Path:
    """The project's files at ``rev`` (None: the working tree) in ``folder``."""
    folder.mkdir()
    if rev is None:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        for name in filter(None, listed.split("\0")):
            source = ROOT / name
            if source.is_file():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, folder / name)
    else:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _install(venv: Path, project: Path, installer: str) -> float:
    python = venv / "bin" / "python"
    started = time.perf_counter()
    if installer == "uv":
        uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
        command = [uv, "pip", "install", "--quiet", "--python", str(python), str(project)]
    else:
        command = [str(python), "-m", "pip", "install", "--quiet", str(project)]
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def _output(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def measure(rev: str | None, installer: str) -> dict[str, object]:
    """The base install of the project at ``rev``: size, packages, the largest ones."""
    with tempfile.TemporaryDirectory(prefix="evalkit-install-") as scratch:
        project = _project_copy(rev, Path(scratch) / "project")
        venv = Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        seconds = _install(venv, project, installer)
        python = str(venv / "bin" / "python")
        [site] = (venv / "lib").glob("python3*/site-packages")
        kilobytes = int(_output("du", "-sk", str(site)).split()[0])
        listed = json.loads(_output(python, "-m", "pip", "list", "--format=json"))
        sizes = json.loads(_output(python, "-c", _SIZES))
    packages = sorted(p["name"] for p in listed if p["name"] not in ("pip", "setuptools"))
    versions = {p["name"]: p["version"] for p in listed}
    return {
        "rev": rev or "working tree",
        "megabytes": kilobytes / 1024,
        "packages": packages,
        "versions": versions,
        "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:8],
        "statistics": [name for name in STATISTICS if name in versions],
        "install_seconds": seconds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    parser.add_argument("--installer", choices=("pip", "uv"), default="pip")
    args = parser.parse_args()
    found = measure(args.rev, args.installer)
    packages = found["packages"]
    assert isinstance(packages, list)
    print(f"python {sys.version.split()[0]}, {args.installer}, {found['rev']}")
    print(
        f"I1 base install: {found['megabytes']:.0f} MB site-packages (du -sk), "
        f"{len(packages)} packages (pip list without pip and setuptools)"
    )
    print(f"   installed in {found['install_seconds']:.1f} s")
    largest = found["largest"]
    assert isinstance(largest, list)
    print("   largest: " + ", ".join(f"{name} {size / 2**20:.0f} MB" for name, size in largest))
    statistics = found["statistics"]
    assert isinstance(statistics, list)
    print(f"   scikit-learn, scipy, krippendorff installed: {', '.join(statistics) or 'none'}")
    print("   packages: " + ", ".join(packages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

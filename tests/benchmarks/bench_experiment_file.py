"""X1 — loading hostile experiment files: time and peak memory of ``load_experiment_file``.

Each shape is a unit repeated ``n`` times: a ``[a.a.a…]`` header or an ``a.a.a… = 1`` key
of ``n`` segments, arrays or inline tables nested ``n`` deep, ``n`` keys, tables, scorers,
array elements, long dotted headers, string characters, string escapes or comment lines. Each
is loaded twice, each time in a subprocess of its own (so the peak RSS is its own): at 1 MB
(``n`` as large as 1,000,000 bytes allow), and at the ceiling (the largest ``n`` the shape
check of ``evalkit/experiment_file/_guard.py`` lets through to the parser). Printed: the
outcome (loaded, or the error's problem), the load's wall and CPU time (the CPU time does not
grow with other load on the machine), and the process's peak RSS after and before the load.
The choice: docs/pages/design/ceilings-on-inputs.md.

Run: ``python -m tests.benchmarks.bench_experiment_file [--size BYTES]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from evalkit import ExperimentFileError
from evalkit.experiment_file._guard import MAX_FILE_BYTES, check_shape

HEAD = '[experiment]\nname = "x"\ndataset = "data/qa.parquet"\n'
SCORER = '[[scorers]]\nuse = "exact_match"\n'
WIDE = ".".join(["b"] * 45)

SHAPES: dict[str, Callable[[int], str]] = {
    "deep header": lambda n: HEAD + SCORER + "[" + ".".join(["a"] * n) + "]\n",
    "dotted key": lambda n: HEAD + SCORER + ".".join(["a"] * n) + " = 1\n",
    "deep arrays": lambda n: HEAD + SCORER + "params = { a = " + "[" * n + "]" * n + " }\n",
    "deep inline tables": lambda n: HEAD + SCORER + "params = " + "{a=" * n + "1" + "}" * n,
    "many keys": lambda n: (
        HEAD + SCORER + "[scorers.params]\n" + "".join(f"k{i} = 1\n" for i in range(n))
    ),
    "many tables": lambda n: HEAD + SCORER + "".join(f"[t{i}]\n" for i in range(n)),
    "many scorers": lambda n: HEAD + "".join(f'{SCORER}id = "s{i}"\n' for i in range(n)),
    "long array": lambda n: HEAD + SCORER + "params = { a = [" + "1," * n + "] }\n",
    "wide headers": lambda n: HEAD + SCORER + "".join(f"[scorers.{WIDE}.k{i}]\n" for i in range(n)),
    "long string": lambda n: HEAD + 'description = "' + "x" * n + '"\n' + SCORER,
    "escaped string": lambda n: HEAD + 'description = "' + "\\n" * n + '"\n' + SCORER,
    "many comments": lambda n: HEAD + SCORER + "#[[{.\n" * n,
}


def _largest(fits: Callable[[int], bool]) -> int:
    """The largest ``n`` for which ``fits(n)`` holds (``fits`` is monotone, ``fits(1)``)."""
    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _passes_the_check(text: str) -> bool:
    try:
        check_shape("x", text)
    except ExperimentFileError:
        return False
    return len(text.encode()) <= MAX_FILE_BYTES


def _load_one(path: str) -> None:
    """In the subprocess: load the file, print the outcome, seconds and peak RSS as JSON."""
    import resource
    import time

    from evalkit import load_experiment_file

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started, cpu = time.perf_counter(), time.process_time()
    try:
        load_experiment_file(path)
        outcome = "loaded"
    except ExperimentFileError as exc:
        outcome = exc.issues[0].problem[:60]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"outcome": outcome, "seconds": seconds, "cpu": cpu, "before": before, "after": after}
        )
    )


def _measure(folder: Path, text: str) -> dict[str, object]:
    path = folder / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    code = f"from tests.benchmarks.bench_experiment_file import _load_one; _load_one({str(path)!r})"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes of the big files")
    args = parser.parse_args()
    worst_seconds = worst_mb = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "data").mkdir()
        (folder / "data" / "qa.parquet").touch()
        for name, make in SHAPES.items():
            big = _largest(lambda n, make=make: len(make(n).encode()) <= args.size)  # type: ignore[misc]
            ceiling = _largest(lambda n, make=make: _passes_the_check(make(n)))  # type: ignore[misc]
            for label, n in (("1 MB", big), ("ceiling", min(ceiling, big))):
                text = make(n)
                found = _measure(folder, text)
                seconds, cpu = float(found["seconds"]), float(found["cpu"])  # type: ignore[arg-type]
                after = int(found["after"]) / 1024  # type: ignore[call-overload]
                worst_seconds, worst_mb = max(worst_seconds, cpu), max(worst_mb, after)
                print(
                    f"  {name:<19} {label:<8} n={n:>9,} {len(text.encode()):>9,} B "
                    f"{seconds * 1000:7.0f} ms ({cpu * 1000:5.0f} CPU)  peak {after:6.0f} MB "
                    f"(after import {int(found['before']) / 1024:4.0f})  {found['outcome']}",  # type: ignore[call-overload]
                    flush=True,
                )
    print(f"X1 hostile experiment files: slowest load {worst_seconds * 1000:.0f} ms CPU, "
          f"highest peak RSS {worst_mb:.0f} MB (targets: < 1 s, < 200 MB)")  # fmt: skip


if __name__ == "__main__":
    main()

"""R1 — regex engines for ``regex_match``: ``re``, ``regex`` (with ``timeout=``) and ``re2``
(the choice: docs/pages/design/regex-engine-with-a-timeout.md).

Two parts:

- ordinary patterns (what a ground-truth column holds: words, alternatives, digits, anchors)
  searched in and fully matched against a ~45-word answer, and three on short non-ASCII
  answers (where RE2's ASCII-only ``\\w``, ``\\d`` and ``\\b`` differ): µs per match, per engine;
- catastrophic patterns: ``(a+)+$`` on ``"a" * 40 + "!"``, ``^(\\w+\\s?)*$`` on a 40-letter
  word + ``"!"`` (the two of issue 15), and ``(a|aa)+$`` on the same 40 a's (one the ``regex``
  engine's own safeguards do not catch, so its timeout has to), each engine in a subprocess
  killed after ``--cap`` seconds. For ``re`` the time at 20-26 characters is printed too: it
  doubles about every character, which is what 40 characters would take.

Run: ``python -m tests.benchmarks.bench_regex [--cap S] [--repeat N]``. ``re2`` is measured
when the ``google-re2`` package is importable (it is not a dependency of evalkit).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

ANSWER = (
    "The capital of France is Paris. It has been the country's capital since 987 and is home "
    "to about 2.1 million people; the metropolitan area has 12,271,794 inhabitants. Call "
    "555-0199 or write to info@example.org before 2024-06-30 for the tour schedule, yes."
)

ORDINARY = (
    (r"Paris", ANSWER),
    (r"\bParis\b", ANSWER),
    (r"capital of (France|Spain|Italy)", ANSWER),
    (r"\d{3}-\d{4}", ANSWER),
    (r"[\w.]+@[\w.]+\.\w+", ANSWER),
    (r"\d{4}-\d{2}-\d{2}", ANSWER),
    (r"(?i)YES\W*$", ANSWER),
    (r"^The .* Paris\..*$", ANSWER),
    # Non-ASCII answers: Python's \w, \d and \b are Unicode-aware, RE2's are ASCII only.
    (r"^\w+$", "Zürich"),
    (r"\bcafé\b", "Un café, s'il vous plaît"),
    (r"\d+ pommes", "٣ pommes"),
)

CATASTROPHIC = (
    (r"(a+)+$", "a" * 40 + "!"),
    (r"^(\w+\s?)*$", "abcdefghij" * 4 + "!"),
    (r"(a|aa)+$", "a" * 40 + "!"),
)

ENGINES = ("re", "regex", "re2")


def _engine(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _matcher(name: str, module: Any, pattern: str, full: bool) -> Callable[[str], Any]:
    compiled = module.compile(pattern)
    method: Callable[..., Any] = compiled.fullmatch if full else compiled.search
    if name == "regex":
        return lambda text: method(text, timeout=1.0)
    return method


def ordinary(repeat: int) -> None:
    """µs per match of the ordinary patterns, and whether every engine agrees with ``re``."""
    print(f"R1 ordinary patterns: {len(ORDINARY)} patterns x (search, fullmatch), {repeat:,} each")
    baseline: dict[str, float] = {}
    for name in ENGINES:
        module = _engine(name)
        if module is None:
            print(f"  {name:6} not installed")
            continue
        total = 0.0
        disagree = 0
        started = time.perf_counter()
        for pattern, _ in ORDINARY:
            module.compile(pattern)
        compile_us = (time.perf_counter() - started) / len(ORDINARY) * 1e6
        for pattern, text in ORDINARY:
            for full in (False, True):
                match = _matcher(name, module, pattern, full)
                expected = _matcher("re", importlib.import_module("re"), pattern, full)(text)
                got = match(text)
                if (got and got.group(0)) != (expected and expected.group(0)):
                    disagree += 1
                start = time.perf_counter()
                for _ in range(repeat):
                    match(text)
                total += time.perf_counter() - start
        per_match = total / (repeat * len(ORDINARY) * 2) * 1e6
        baseline.setdefault("re", per_match)
        print(
            f"  {name:6} {per_match:6.2f} µs/match ({per_match / baseline['re']:.2f}x re), "
            f"first compile {compile_us:6.1f} µs/pattern, "
            f"{disagree} of {len(ORDINARY) * 2} results differ from re"
        )


def _one(name: str, pattern: str, text: str) -> None:
    module = importlib.import_module(name)
    start = time.perf_counter()
    try:
        found = _matcher(name, module, pattern, False)(text)
        outcome = "match" if found else "no match"
    except TimeoutError:
        outcome = "TimeoutError"
    print(f"{time.perf_counter() - start:.6f} {outcome}")


def catastrophic(cap: float) -> None:
    """Each engine on each catastrophic pattern, in a subprocess killed after ``cap`` s."""
    print(f"R1 catastrophic patterns (each run killed after {cap:g} s; regex with timeout=1.0)")
    for pattern, text in CATASTROPHIC:
        cells: list[str] = []
        for name in ENGINES:
            if _engine(name) is None:
                cells.append(f"{name}: not installed")
                continue
            code = (
                "from tests.benchmarks.bench_regex import _one; "
                f"_one({name!r}, {pattern!r}, {text!r})"
            )
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", code],
                    capture_output=True,
                    text=True,
                    timeout=cap,
                    check=True,
                )
                seconds, outcome = proc.stdout.split(maxsplit=1)
                cells.append(f"{name}: {float(seconds) * 1000:.2f} ms {outcome.strip()}")
            except subprocess.TimeoutExpired:
                cells.append(f"{name}: > {cap:g} s (killed)")
        print(f"  {pattern!r} on {len(text)} chars: " + "; ".join(cells))
    print("  re's growth with the input's length (search, seconds):")
    re = importlib.import_module("re")
    for pattern, text in CATASTROPHIC:
        times = []
        for n in (20, 22, 24, 26):
            short = text[:n] + text[-1]
            start = time.perf_counter()
            re.search(pattern, short)
            times.append(f"{n}: {time.perf_counter() - start:.3f}")
        print(f"    {pattern!r}: " + ", ".join(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cap", type=float, default=20.0, help="seconds before a run is killed")
    parser.add_argument("--repeat", type=int, default=20_000, help="matches per pattern")
    args = parser.parse_args()
    ordinary(args.repeat)
    catastrophic(args.cap)


if __name__ == "__main__":
    main()

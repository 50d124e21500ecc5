"""A writer process for the DuckLake tests: ``python -m tests.store.lake_writer STORE NAME N
[RESUME [DELAY [SLOWED]]]`` runs ``run_evals`` over N items into STORE as experiment NAME,
flushing often; each item's scorer takes DELAY seconds, and a second from index SLOWED on, so a
test can kill the writer before it could possibly finish."""

from __future__ import annotations

import sys
import time

from evalkit import Scorer, create_scorer, run_evals_sync


def rows(count: int) -> list[dict[str, str]]:
    return [{"id": f"i{i:05d}", "input": f"q{i}", "output": f"a{i}"} for i in range(count)]


def scorers(delay: float, slowed: int | None = None) -> list[Scorer]:
    def length(run: object) -> float:
        time.sleep(delay)  # the scorer's work: it spreads the items over many flushes
        if slowed is not None and int(run.output[1:]) >= slowed:  # type: ignore[attr-defined]
            time.sleep(1.0)  # items still end: the run goes on flushing the ones before
        return len(run.output) / 10  # type: ignore[attr-defined]

    return [
        create_scorer("Length", id="length").generate_score(length),
        create_scorer("Even", id="even").generate_score(
            lambda run: float(int(run.output[1:]) % 2 == 0)
        ),
    ]


def main(argv: list[str]) -> None:
    store, name, count = argv[0], argv[1], int(argv[2])
    resume = argv[3] or None if len(argv) > 3 else None
    delay = float(argv[4]) if len(argv) > 4 else 0.0
    slowed = int(argv[5]) if len(argv) > 5 else None
    result = run_evals_sync(
        rows(count), scorers(delay, slowed), store=store, experiment=name, progress=False,
        flush_interval=0.05, concurrency=4, resume=resume, lock_timeout=120,
    )  # fmt: skip
    print(result.experiment_id, result.status, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

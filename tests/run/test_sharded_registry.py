"""Every prebuilt scorer runs sharded (``process`` and ``ray`` workers) exactly as it runs in
one process, the test server judging; a scorer that cannot be shipped is refused by name
before anything is stored; a sharded rerun is served by the judge cache."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit import Judge, create_scorer
from evalkit.errors import ConfigError
from evalkit.run import run_evals_sync
from evalkit.scorers import get_scorer, list_scorers
from evalkit.testing import server_process

NAMES = [info.name for info in list_scorers()]
KEY_ENV = "EVALKIT_SHARDED_REGISTRY_KEY"
# Parameters a scorer needs to score these rows (the others run with their defaults).
PARAMS: dict[str, dict[str, Any]] = {
    "llm_rubric": {"rubric": "The answer is correct."},
    "keyword_coverage": {"keywords": ["Paris"]},
}
ROWS = [
    {
        "id": f"r{i}",
        "input": f"Question {i}: what is the capital of France?",
        "output": "Paris is the capital of France." if i % 2 else "It is Lyon, I think!",
        "groundTruth": "Paris" if i % 3 else "^Paris.*$",
        "requestContext": json.dumps(
            {"context": ["Paris is the capital of France.", "France is in Europe."]}
        ),
    }
    for i in range(8)
]


def scorers(url: str) -> list[Any]:
    judge = Judge("fake-judge", base_url=url, api_key_env=KEY_ENV)
    return [get_scorer(name, judge=judge, **PARAMS.get(name, {})) for name in NAMES]


def rows(store: Path, table: str) -> list[tuple[Any, ...]]:
    column = "score" if table == "scores" else "error_name"
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            f"SELECT scorer_id, item_id, {column} FROM {table} ORDER BY ALL"
        ).fetchall()


def completions(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/_evalkit/stats") as reply:
        return int(json.load(reply)["completions"])


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    folder = tmp_path_factory.mktemp("registry")
    pq.write_table(pa.Table.from_pylist(ROWS), folder / "data.parquet", row_group_size=2)
    with server_process() as url, pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, "test-key")
        yield folder, url


def run(folder: Path, url: str, store: str, **options: Any) -> Any:
    return run_evals_sync(
        folder / "data.parquet", scorers(url), store=folder / store, progress=False,
        cache=False, **options,
    )  # fmt: skip


@pytest.fixture(scope="module")
def local(judged: tuple[Path, str]) -> Path:
    folder, url = judged
    run(folder, url, "local.duckdb")
    return folder / "local.duckdb"


@pytest.fixture(scope="module")
def process(judged: tuple[Path, str]) -> Path:
    folder, url = judged
    result = run(folder, url, "process.duckdb", executor="process", workers=2)
    assert result.status != "failed"
    return folder / "process.duckdb"


@pytest.fixture(scope="module")
def on_ray(judged: tuple[Path, str]) -> Path:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    folder, url = judged
    run(folder, url, "ray.duckdb", executor="ray", workers=2)
    return folder / "ray.duckdb"


def of(scorer: str, found: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [row for row in found if row[0] == scorer]


@pytest.mark.parametrize("name", NAMES)
def test_every_prebuilt_scorer_runs_on_process_workers(
    name: str, local: Path, process: Path
) -> None:
    for table in ("scores", "scorer_errors"):
        assert of(name, rows(process, table)) == of(name, rows(local, table))
    # Every pair ended with a score or an error (some scorers need columns these rows lack).
    assert len(of(name, rows(local, "scores")) + of(name, rows(local, "scorer_errors"))) == 8


@pytest.mark.parametrize("name", NAMES)
def test_every_prebuilt_scorer_runs_on_ray_workers(name: str, local: Path, on_ray: Path) -> None:
    for table in ("scores", "scorer_errors"):
        assert of(name, rows(on_ray, table)) == of(name, rows(local, table))


def test_a_scorer_that_cannot_be_shipped_is_refused_by_name_before_any_row(
    judged: tuple[Path, str],
) -> None:
    folder, _ = judged
    lock = threading.Lock()

    def holds_a_lock(run: Any) -> float:
        with lock:
            return 1.0

    bad = create_scorer("Locked", id="locked").generate_score(holds_a_lock)
    store = folder / "refused.duckdb"
    with pytest.raises(ConfigError, match="scorer 'locked' cannot be shipped to workers"):
        run_evals_sync(folder / "data.parquet", [bad], store=store, executor="process",
                       workers=2, progress=False)  # fmt: skip
    assert not store.exists()


def test_a_sharded_rerun_is_served_by_the_judge_cache(judged: tuple[Path, str]) -> None:
    folder, url = judged
    judge = Judge("fake-judge", base_url=url, api_key_env=KEY_ENV)
    chosen = [get_scorer("faithfulness", judge=judge), get_scorer("toxicity", judge=judge)]
    store = folder / "cached.duckdb"

    def sharded() -> Any:
        return run_evals_sync(folder / "data.parquet", chosen, store=store, executor="process",
                              workers=2, progress=False)  # fmt: skip

    before = completions(url)
    first = sharded()
    asked = completions(url) - before
    assert asked > 0
    second = sharded()
    assert completions(url) - before == asked  # every call of the rerun came from the cache
    assert second.summary.succeeded == first.summary.succeeded
    with duckdb.connect(str(store), read_only=True) as con:
        cached = con.execute(
            "SELECT count(*) FILTER (cached), count(*) FROM judge_executions"
            " WHERE experiment_id = ?",
            [second.experiment_id],
        ).fetchone()
    assert cached is not None
    assert cached[0] == cached[1] > 0

"""A canary API key must not reach any artefact: store, judge cache, reports, output, errors.

The judge and target keys are set to a unique canary, and the servers do their worst with it:
one requires it (so it is really sent), one refuses it with a 401 whose message echoes it in
full (as some providers do), and a target call fails with a 500 echoing it too. Then every
table of the store and of the judge cache is dumped to text through SQL, every file written is
read byte for byte, and the CLI's output and the errors' ``str``/``repr``/``to_dict`` are
searched for the canary.
"""

from __future__ import annotations

import functools
import json
import pickle
import uuid
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import duckdb
import pytest

from evalkit import (
    EvalkitError,
    Judge,
    ScorerRunError,
    run_evals,
    use_judge_cache,
)
from evalkit.scorers import llm_rubric
from evalkit.testing import FakeOpenAIServer, Fault, Rule
from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_CANARY_KEY"


@pytest.fixture
def canary() -> str:
    # Shaped like no known provider key, so only masking of the key actually sent can hide it.
    return f"canary{uuid.uuid4().hex}"


def servers(canary: str) -> tuple[FakeOpenAIServer, FakeOpenAIServer]:
    echo = f"Incorrect API key provided: {canary}. You sent Authorization: Bearer {canary}"
    good = FakeOpenAIServer(
        # The target's call for the first question fails with a 500 that echoes the key.
        [Rule("TARGET: What is 0 + 0?", fault=Fault.http(500, f"upstream refused {canary}"))],
        api_key=canary,
    )
    refusing = FakeOpenAIServer([Rule(fault=Fault.http(401, echo))])
    return good, refusing


def experiment(good: str, refusing: str) -> str:
    return f"""
[experiment]
name = "canary"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 4

[target]
type = "openai"
model = "fake-target"
prompt = "TARGET: {{input}}"
base_url = "{good}"
api_key_env = "{KEY_ENV}"
max_retries = 0

[judge]
model = "fake-judge"
base_url = "{good}"
api_key_env = "{KEY_ENV}"
max_retries = 0

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number." }}

[[scorers]]
use = "llm_rubric"
id = "rubric-refused"
params = {{ rubric = "The answer is a single number." }}
judge = {{ base_url = "{refusing}" }}

[[scorers]]
use = "exact_match"
"""


def dump_duckdb(path: Path) -> str:
    """Every table and view of a DuckDB file, as text (each value cast to text by DuckDB:
    DuckDB 1.5 hands a TIMESTAMPTZ to Python only with pytz installed)."""
    with duckdb.connect(str(path), read_only=True) as con:
        names = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall()
        assert names
        return "\n".join(
            f"{schema}.{name}: "
            + repr(con.execute(f'SELECT COLUMNS(*)::VARCHAR FROM "{schema}"."{name}"').fetchall())
            for schema, name in names
        )


def every_file(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


async def test_the_canary_key_reaches_no_artefact_of_a_cli_run(
    cli: Cli, tmp_path: Path, canary: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=6)
    good, refusing = servers(canary)
    async with good, refusing:
        (tmp_path / "canary.toml").write_text(
            experiment(good.base_url, refusing.base_url), encoding="utf-8"
        )
        env = {KEY_ENV: canary}
        outputs = []
        for args in (
            ("run", "canary.toml", "--no-progress"),
            ("run", "canary.toml", "--no-progress", "--json"),
            ("experiments",),
            ("show", "latest"),
            ("sql", "SELECT * FROM scorer_errors"),
            ("sql", "SELECT * FROM experiment_items"),
        ):
            call = functools.partial(cli, *args, env_extra=env)
            done = await anyio.to_thread.run_sync(call)
            assert "Traceback" not in done.stderr, done.stderr
            outputs.append(done.stdout + done.stderr)
        good_requests, refused_requests = good.stats.completions, refusing.stats.requests

    # The canary was really used: the server requiring it answered, the other one refused it.
    assert good_requests > 0
    assert refused_requests >= 1
    store_text = dump_duckdb(tmp_path / "evalkit.duckdb")
    # The echoed key was recorded, masked: the target's 500 and the judge's 401 are stored.
    assert "upstream refused [REDACTED]" in store_text
    assert "Incorrect API key provided: [REDACTED]" in store_text
    assert "HTTP 401" in store_text

    assert canary not in store_text
    for database in tmp_path.rglob("*.duckdb"):  # the judge cache too, once the CLI keeps one
        assert canary not in dump_duckdb(database), database
    for output in outputs:
        assert canary not in output
    files = every_file(tmp_path)
    assert any(path.suffix == ".html" for path in files)  # the reports were written
    for path, data in files.items():
        assert canary.encode() not in data, path
        assert canary.encode("utf-16-le") not in data, path


async def test_the_canary_key_reaches_no_error_or_judge_cache_in_process(
    tmp_path: Path, canary: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, canary)
    data = [{"id": f"i{i}", "input": f"q{i}", "output": "4", "groundTruth": "4"} for i in range(4)]
    good, refusing = servers(canary)
    async with good, refusing:
        judge = Judge("fake-judge", base_url=good.base_url, api_key_env=KEY_ENV)
        refused = judge.replace(base_url=refusing.base_url)
        scorers = [
            llm_rubric(rubric="A number.", judge=judge),
            llm_rubric(rubric="A number.", judge=refused).with_id("refused"),
        ]
        cache_path = tmp_path / "cache.duckdb"
        async with use_judge_cache(cache_path):
            result = await run_evals(data, scorers, store=tmp_path / "s.duckdb", progress=False)
            with pytest.raises(ScorerRunError) as info:
                await scorers[1].run(input="q", output="4")
        assert good.stats.completions > 0

    texts: list[str] = []
    error: BaseException | None = info.value
    while error is not None:  # the error and its evalkit causes
        if isinstance(error, EvalkitError):
            texts += [str(error), repr(error), json.dumps(error.to_dict(), default=str)]
            texts.append(repr(pickle.loads(pickle.dumps(error)).__dict__))
        error = error.__cause__
    assert info.value.result is not None
    texts.append(json.dumps(info.value.result.to_dict(), default=str))
    for item in result.items:
        for outcome in item.outcomes:
            texts.append(repr(outcome))
            if outcome.error is not None:
                texts.append(json.dumps(outcome.error.to_dict()))
    texts.append(result.to_pandas().to_string())
    assert any("[REDACTED]" in text for text in texts)
    for text in texts:
        assert canary not in text
    assert canary not in dump_duckdb(cache_path)
    assert canary not in dump_duckdb(tmp_path / "s.duckdb")
    for path, content in every_file(tmp_path).items():
        assert canary.encode() not in content, path


def test_repr_of_a_judge_and_its_client_settings_hold_no_key(
    canary: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, canary)
    judge = Judge("m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    shown: list[Any] = [repr(judge), judge.label, str(judge.limiter_key), str(judge.batch_key)]
    assert all(canary not in text for text in shown)

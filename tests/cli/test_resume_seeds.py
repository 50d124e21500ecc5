"""Resuming a run in a new process: sets in the fingerprint must not follow PYTHONHASHSEED.

Each case stores a run under one hash seed and resumes it under another. Between them they hold
every place a judge is set (the ``[judge]`` table, a scorer's override of it, a Python scorer's
judge and its prompt step's), each kind of target and each way a scorer gets parameters. Most
hold a set in the stored config or scorer metadata (a judge's explicitly set fields, a target's
keyword argument, a scorer factory's parameter), which Python iterates in an order that changes
with the seed; the OpenAI target and the prebuilt scorer's parameters hold none today, and the
cases keep it that way.

There were seven cases, one place each, two ``python -m evalkit`` processes a case (8 s each in
the CI's suite): a set in any place changes the one fingerprint a resume compares, so one
experiment holding every place that can share a file finds what the seven found, and the
refusal names what changed. The OpenAI target needs a run of its own (one target a run)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.testing import server_process
from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_SEED_TEST_KEY"

APP = """
from dataclasses import dataclass
from pathlib import Path

from evalkit import Judge, PromptStep, create_scorer
from evalkit.target import FunctionTarget

URL = "{url}"
KEY_ENV = "{key_env}"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def _flaky(run):
    if run.ground_truth in Path("failing.txt").read_text().split():
        raise RuntimeError("flaky failure")
    return 1.0


flaky = create_scorer("Flaky", id="flaky").generate_score(_flaky)


def _answer(value, *, tags):
    return value


target = FunctionTarget(_answer, kwargs={"tags": frozenset(WORDS)})


def _prompt(run):
    return f"Score the answer {run.output} to {run.input}."


judge = Judge(
    "fake-judge",
    "You grade answers.",
    base_url=URL,
    api_key_env=KEY_ENV,
    max_concurrency=4,
    timeout=30.0,
    max_retries=1,
    rpm=6000.0,
)
judged = create_scorer("Judged", id="judged", judge=judge).generate_score(
    PromptStep("Score it", _prompt, judge=Judge(temperature=0.0, max_tokens=32, tpm=100000.0))
)


@dataclass(frozen=True)
class HasWords:
    words: frozenset[str]

    def __call__(self, run):
        return float(any(word in str(run.output) for word in self.words))


def make_words(*, words):
    chosen = frozenset(words)
    return create_scorer("Words", id="words", metadata={"words": chosen}).generate_score(
        HasWords(chosen)
    )
"""

HEAD = """
[experiment]
name = "seeds"
dataset = "data.parquet"
store = "evalkit.duckdb"
max_error_rate = 1.0  # the failed item is on purpose: the test is about resuming, not gating

[[scorers]]
use = "app:flaky"
"""

JUDGE_TABLE = """
[judge]
model = "fake-judge"
base_url = "{url}"
api_key_env = "{key_env}"
max_concurrency = 4
temperature = 0.0
max_tokens = 64
timeout = 30.0
max_retries = 1
rpm = 6000.0
tpm = 100000.0
"""

#: Where a set may hide in the stored config or scorer metadata: the ``[judge]`` table (a judge's
#: explicitly set fields), a scorer's override of it, a Python scorer's judge and its prompt
#: step's, a Python target's keyword argument, a prebuilt scorer's parameters and a scorer
#: factory's parameter.
EVERY_PLACE = (
    JUDGE_TABLE
    + """
[target]
type = "python"
callable = "app:target"

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = { rubric = "The answer is a single number." }

[[scorers]]
use = "llm_rubric"
id = "rubric-override"
params = { rubric = "The answer is a single number." }
judge = { instructions = "Be strict.", max_tokens = 16, rate_limit_retries = 2 }

[[scorers]]
use = "app:judged"

[[scorers]]
use = "keyword_coverage"
params = { keywords = ["alpha", "bravo", "charlie"], ignore_case = false }

[[scorers]]
use = "app:make_words"
params = { words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"] }
"""
)

#: Two runs hold every place: an experiment has one target, and the OpenAI target is the other.
CASES = {
    "every-place-python-target": EVERY_PLACE,
    "target-openai": """
[target]
type = "openai"
model = "fake-target"
base_url = "{url}"
api_key_env = "{key_env}"
max_concurrency = 2
temperature = 0.0
max_tokens = 32

[[scorers]]
use = "exact_match"
""",
}


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    with server_process() as url:
        yield url


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_resumes_under_another_hash_seed(
    cli_process: Cli, tmp_path: Path, judge_url: str, case: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=4)
    for name, text in (("app.py", APP), ("seeds.toml", HEAD + CASES[case])):
        text = text.replace("{url}", judge_url).replace("{key_env}", KEY_ENV)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "failing.txt").write_text("2", encoding="utf-8")

    def run(seed: str, *args: str) -> dict[str, object]:
        # A real process each: PYTHONHASHSEED is read only when an interpreter starts.
        done = cli_process(
            "run", "seeds.toml", "--no-progress", "--json", *args,
            env_extra={KEY_ENV: "test-key", "PYTHONHASHSEED": seed},
        )  # fmt: skip
        assert done.code == 0, done.stderr
        result: dict[str, object] = json.loads(done.stdout)
        return result

    first = run("1")
    assert first["status"] == "completed_with_errors"
    (tmp_path / "failing.txt").write_text("", encoding="utf-8")
    resumed = run("2", "--resume", "--retry-errors")
    assert resumed["experiment_id"] == first["experiment_id"]
    assert resumed["status"] == "completed"

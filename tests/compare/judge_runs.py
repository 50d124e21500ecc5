"""Two real runs of one LLM-judged scorer into one store, their judges answering differently:
the local judge server replies per judge model and item."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from evalkit import Judge, run_evals
from evalkit.scorers import llm_rubric
from evalkit.testing import FakeOpenAIServer, Rule

ROWS = 60
KEY_ENV = "EVALKIT_TEST_JUDGES_KEY"
SCORER = "llm_rubric"


def human(i: int) -> float:
    """The person's label of item ``i``: right on two items of three."""
    return 1.0 if i % 3 else 0.0


#: Per judge model, its score of item ``i``. judge-a agrees with the person but on every
#: tenth item; judge-b says yes to nearly everything; judge-c and judge-d grade in sevenths.
SCORES: Mapping[str, Callable[[int], float]] = {
    "judge-a": lambda i: 1.0 - human(i) if i % 10 == 0 else human(i),
    "judge-b": lambda i: 0.0 if i % 7 == 0 else 1.0,
    "judge-c": lambda i: round((i % 7) / 6, 2),
    "judge-d": lambda i: round(((i * 3 + i // 7) % 7) / 6, 2),
}


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The judge's grade of the item the prompt names, by the model asked."""
    prompt = body["messages"][-1]["content"]
    i = int(prompt.split("<task>\nquestion ")[1].split("\n")[0])
    return {"reasoning": f"{body['model']} on {i}", "score": SCORES[body["model"]](i)}


@pytest.fixture
def key() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, "test-key")
        yield KEY_ENV


def write_data(path: Path, *, outputs: Callable[[int], str] = lambda i: f"answer {i}",
               rows: int = ROWS) -> Path:  # fmt: skip
    pd.DataFrame(
        {
            "id": [f"q{i:03d}" for i in range(rows)],
            "input": [f"question {i}" for i in range(rows)],
            "output": [outputs(i) for i in range(rows)],
            "human": [human(i) for i in range(rows)],
        }
    ).to_parquet(path)
    return path


async def judged_run(
    server: FakeOpenAIServer,
    data: Path,
    store: Path,
    model: str,
    *,
    labels: bool = True,
    rubric: str = "Answers the question.",
    scorer_id: str | None = None,
    **options: Any,
) -> str:
    """Run ``llm_rubric`` (recorded as ``scorer_id``, default its name) judged by ``model``
    over ``data`` into ``store``; the experiment's id."""
    if not server.rules:
        server.add_rule(Rule(reply=reply))
    judge = Judge(model, base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0)
    result = await run_evals(
        data,
        [llm_rubric(id=scorer_id, judge=judge, rubric=rubric)],
        store=store,
        experiment="judged",
        cache=False,
        progress=False,
        labels={scorer_id or SCORER: "human"} if labels else None,
        **options,
    )
    assert result.summary.scorers[scorer_id or SCORER].failed == 0
    return result.experiment_id


def stored_scores(store: Path, experiment_id: str) -> dict[str, float]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT item_id, score FROM scores WHERE experiment_id = ? AND scorer_id = ?",
            [experiment_id, SCORER],
        ).fetchall()
    return dict(rows)


def both(store: Path, baseline: str, candidate: str) -> tuple[list[float], list[float]]:
    """The two runs' scores of the items both scored, in item order."""
    a, b = stored_scores(store, baseline), stored_scores(store, candidate)
    items = sorted(a.keys() & b.keys())
    return [a[i] for i in items], [b[i] for i in items]

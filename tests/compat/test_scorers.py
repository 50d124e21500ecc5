"""evalkit's prebuilt LLM scorers against a real model server: the calls succeed and every
judge execution is recorded completely. Not the model's answer quality: a 270M model is a poor
judge, and a reply that fails a scorer's checks is a recorded format failure, which is fine.
"""

from __future__ import annotations

import collections
import json
import statistics
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

from evalkit import ExperimentResult, Judge, get_scorer, run_evals_sync
from tests.compat._servers import KEY_ENV, SLOTS, RunningServer

ITEMS: list[dict[str, Any]] = [
    {
        "id": "boiling",
        "input": "What is the boiling point of water at sea level, in degrees Celsius?",
        "groundTruth": "100 degrees Celsius.",
        "output": "Water boils at 100 degrees Celsius at sea level.",
        "requestContext": {"context": ["At sea level, pure water boils at 100 °C (212 °F)."]},
    },
    {
        "id": "capital",
        "input": "What is the capital of France?",
        "groundTruth": "Paris.",
        "output": "The capital of France is Paris, on the Seine.",
        "requestContext": {"context": ["Paris is the capital and largest city of France."]},
    },
    {
        "id": "templates",
        "input": "Where do I find note templates?",
        "groundTruth": "New note > Templates.",
        "output": "Open New note and pick Templates. You can also make your own.",
        "requestContext": {"context": ["Templates are under New note > Templates."]},
    },
    {
        "id": "export",
        "input": "Can I export my notes as PDF?",
        "groundTruth": "Yes, with File > Export > PDF.",
        "output": "No, notes cannot be exported.",
        "requestContext": {"context": ["File > Export offers PDF, Markdown and HTML."]},
    },
]
SCORERS: dict[str, dict[str, Any]] = {
    "llm_rubric": {"rubric": "The answer is correct and directly answers the question."},
    "answer_relevancy": {},
    "faithfulness": {},
    "toxicity": {},
}
# What a failed execution may fail on: the model's answer (not JSON, not the schema, cut at
# max_tokens, a refusal). Anything else (an HTTP status, a timeout, a dropped connection, a
# bad response) is the server and evalkit not getting along, which this suite exists to catch.
ANSWER_FAILURES = {"format", "refusal", "truncated"}
MAX_TOKENS = 256


@pytest.fixture(scope="session")
def scorer_run(
    compat_server: RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ExperimentResult, list[dict[str, Any]]]]:
    """One run of every scorer of SCORERS over ITEMS, stored; the result and the store's
    judge_executions rows."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv(KEY_ENV, compat_server.api_key)
    slots = SLOTS if compat_server.name == "llama-server" else 1
    judge = Judge(
        compat_server.model,
        base_url=compat_server.base_url,
        api_key_env=KEY_ENV,
        max_concurrency=slots,
        max_tokens=MAX_TOKENS,
        timeout=300.0,
        temperature=0.0,
    )
    store = tmp_path_factory.mktemp(f"store-{compat_server.name}") / "evalkit.duckdb"
    scorers = [get_scorer(name, judge=judge, **params) for name, params in SCORERS.items()]
    try:
        result = run_evals_sync(
            ITEMS,
            scorers,
            store=store,
            experiment=f"compat-{compat_server.name}",
            concurrency=slots,
            cache=False,
            progress=False,
            max_error_rate=1.0,
        )
        with duckdb.connect(str(store), read_only=True) as con:
            cursor = con.execute("SELECT * FROM judge_executions ORDER BY item_id, scorer_id")
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        yield result, rows
    finally:
        monkeypatch.undo()


def scorer_id(name: str) -> str:
    return get_scorer(name, **SCORERS[name]).id


def _scorer_rows(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [row for row in rows if row["scorer_id"] == scorer_id(name)]


def _median(rows: list[dict[str, Any]], column: str) -> int | None:
    values = [row[column] for row in rows if row.get(column) is not None]
    return round(statistics.median(values)) if values else None


@pytest.fixture
def figures(results: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = results.setdefault("evalkit", {})
    return entry


@pytest.mark.parametrize("name", list(SCORERS))
def test_scorer_calls_succeed(
    name: str,
    scorer_run: tuple[ExperimentResult, list[dict[str, Any]]],
    figures: dict[str, Any],
) -> None:
    result, rows = scorer_run
    outcomes = result.results_for(scorer_id(name))
    mine = _scorer_rows(rows, name)
    codes = collections.Counter(
        str(row["error_code"]) for row in mine if row["status"] != "success"
    )
    figures.setdefault("scorers", {})[name] = {
        "items": len(outcomes),
        "scored": sum(o.status == "success" for o in outcomes),
        "failed": sum(o.status != "success" for o in outcomes),
        "executions": len(mine),
        "model_calls": sum(row["model_call_count"] or 0 for row in mine),
        "failures_by_code": dict(sorted(codes.items())),
        "finish_reasons": dict(
            sorted(collections.Counter(str(row["finish_reason"]) for row in mine).items())
        ),
        "median_duration_ms": _median(mine, "duration_ms"),
        "median_request_ms": _median(mine, "request_ms"),
        "median_queue_ms": _median(mine, "queue_ms"),
    }
    assert len(outcomes) == len(ITEMS)
    assert mine, f"{name}: no judge execution recorded"
    server_failures = {code: n for code, n in codes.items() if code not in ANSWER_FAILURES}
    assert not server_failures, (
        f"{name}: judge calls failed on the exchange, not on the answer: {server_failures}; "
        + "; ".join(
            f"{row['error_code']}: {row['error_message']}"
            for row in mine
            if str(row["error_code"]) in server_failures
        )[:2000]
    )


@pytest.mark.parametrize("name", list(SCORERS))
def test_records_complete(
    name: str, scorer_run: tuple[ExperimentResult, list[dict[str, Any]]]
) -> None:
    """Every judge_executions row says what happened: status, attempts, time, tokens, finish
    reason (on success too), the prompt, and the output or the error."""
    _, rows = scorer_run
    mine = _scorer_rows(rows, name)
    assert mine
    problems: list[str] = []
    for row in mine:
        where = f"{row['item_id']}/{row['step']}#{row['execution_index']}"
        if row["status"] not in ("success", "failed"):
            problems.append(f"{where}: status {row['status']!r}")
        if not (row["attempt_count"] or 0) >= 1 or not (row["model_call_count"] or 0) >= 1:
            problems.append(f"{where}: attempt_count {row['attempt_count']}, calls "
                            f"{row['model_call_count']}")  # fmt: skip
        if not (row["duration_ms"] or 0) > 0:
            problems.append(f"{where}: duration_ms {row['duration_ms']}")
        tokens = (row["input_tokens"], row["output_tokens"], row["total_tokens"])
        if (
            not (tokens[0] or 0) > 0
            or not (tokens[1] or 0) > 0
            or tokens[2] != sum(t or 0 for t in tokens[:2])
        ):
            problems.append(f"{where}: tokens in/out/total {tokens}")
        if not row["finish_reason"]:
            problems.append(f"{where} ({row['status']}): no finish_reason")
        if not row["prompt"]:
            problems.append(f"{where}: no prompt")
        if row["status"] == "success" and row["output"] is None:
            problems.append(f"{where}: a success without output")
        if row["status"] == "failed" and not (row["error_code"] and row["error_message"]):
            problems.append(f"{where}: a failure without error code and message")
        if "request_ms" in row and not (row["request_ms"] or 0) > 0:  # where the store has it
            problems.append(f"{where}: request_ms {row['request_ms']}")
        if "queue_ms" in row and (row["queue_ms"] is None or row["queue_ms"] < 0):
            problems.append(f"{where}: queue_ms {row['queue_ms']}")
        if "attempts" in row:  # per-attempt records, where the store keeps them
            problems += _attempt_problems(where, row)
    assert not problems, f"{name}: {len(problems)} incomplete records:\n" + "\n".join(problems[:30])


def _attempt_problems(where: str, row: dict[str, Any]) -> list[str]:
    attempts = row["attempts"]
    if isinstance(attempts, str):
        attempts = json.loads(attempts)
    if not attempts:
        return [f"{where}: no attempts recorded"]
    out = []
    if len(attempts) != row["attempt_count"]:
        out.append(f"{where}: {len(attempts)} attempts recorded, attempt_count "
                   f"{row['attempt_count']}")  # fmt: skip
    for index, attempt in enumerate(attempts):
        # An attempt that got a reply says how the reply ended; one whose call failed (a
        # refused response format, say) has no reply, and says why instead.
        replied = attempt.get("status") != "failed"
        needed = ("status", "finish_reason", "usage") if replied else ("status", "error")
        missing = [key for key in needed if not attempt.get(key)]
        if missing:
            out.append(f"{where} attempt {index} ({attempt.get('status')}): no "
                       f"{', '.join(missing)}")  # fmt: skip
    return out


def test_rubric_calls_bounded(
    scorer_run: tuple[ExperimentResult, list[dict[str, Any]]], figures: dict[str, Any]
) -> None:
    """llm_rubric costs at most about two requests an item, whatever the server accepts as a
    response format (issue 20's done-when: the fallback is remembered, not rediscovered)."""
    _, rows = scorer_run
    calls = sum(row["model_call_count"] or 0 for row in _scorer_rows(rows, "llm_rubric"))
    figures["llm_rubric_calls_per_item"] = round(calls / len(ITEMS), 2)
    assert calls <= 2 * len(ITEMS) + 1, f"{calls} requests for {len(ITEMS)} items"


def test_structured_calls_succeed(
    scorer_run: tuple[ExperimentResult, list[dict[str, Any]]],
) -> None:
    """Structured output works end to end: some schema steps of some scorer got a reply that
    passed their checks (which ones depends on the model's answers, not on the server)."""
    _, rows = scorer_run
    structured = [row for row in rows if row["step"] in ("preprocess", "analyze")]
    succeeded = [row for row in structured if row["status"] == "success"]
    assert succeeded, f"none of {len(structured)} structured judge executions succeeded"

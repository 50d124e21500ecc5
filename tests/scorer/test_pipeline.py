from __future__ import annotations

import hashlib
import json
import os
import unicodedata
import uuid
from typing import Any

import anyio
import pytest

from evalkit import ConfigError, Scorer, ScorerRun, StepResults, create_scorer
from evalkit.scorer._ids import new_run_id, slugify

ML_OUTPUT = "Machine learning is a subset of artificial intelligence that lets computers learn"


def quality_scorer() -> Scorer:
    # The reference page's example, in SPEC's snake_case.
    return (
        create_scorer(name="Quality Scorer", description="Evaluates response quality")
        .preprocess(lambda run: {"word_count": len(run.output.split())})
        .analyze(
            lambda run, results: {
                "has_substance": results.preprocess_step_result["word_count"] > 10
            }
        )
        .generate_score(
            lambda results: 1.0 if results.analyze_step_result["has_substance"] else 0.0
        )
        .generate_reason(
            lambda score, results: (
                f"Score: {score}. Response has "
                f"{results.preprocess_step_result['word_count']} words."
            )
        )
    )


async def test_reference_quality_scorer() -> None:
    result = await quality_scorer().run(input="What is machine learning?", output=ML_OUTPUT)
    assert result.score == 1.0
    assert result.reason == "Score: 1.0. Response has 12 words."
    assert result.preprocess_step_result == {"word_count": 12}
    assert result.analyze_step_result == {"has_substance": True}
    assert result.input == "What is machine learning?"
    assert result.output == ML_OUTPUT
    assert result.ground_truth is None
    assert result.request_context is None
    assert (
        result.preprocess_prompt,
        result.analyze_prompt,
        result.generate_score_prompt,
        result.generate_reason_prompt,
    ) == (None, None, None, None)
    assert result.judge == {}


async def test_short_answer_scores_zero() -> None:
    result = await quality_scorer().run(input="q", output="too short")
    assert result.score == 0.0
    assert result.reason == "Score: 0.0. Response has 2 words."


def test_id_defaults_to_slug_of_name_and_fields_are_readable() -> None:
    scorer = create_scorer("Quality Scorer", "Evaluates response quality")
    assert (scorer.id, scorer.name, scorer.description) == (
        "quality-scorer",
        "Quality Scorer",
        "Evaluates response quality",
    )
    assert create_scorer("Exact  Match!", id="exact").id == "exact"
    assert create_scorer("Réponse  Exacte (v2)").id == "reponse-exacte-v2"


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Quality Scorer", "quality-scorer"),
        ("Réponse  Exacte (v2)", "reponse-exacte-v2"),
        ("Ångström Ünïcode", "angstrom-unicode"),
        ("Straße", "strasse"),
        ("\uff46\uff55\uff4c\uff4c\u3000\uff57\uff49\uff44\uff54\uff48", "full-width"),
        ("  --Édition--  ", "edition"),
        ("GPT-4o judge", "gpt-4o-judge"),
    ],
)
def test_slugify_folds_to_ascii(name: str, slug: str) -> None:
    assert slugify(name) == slug


@pytest.mark.parametrize("name", ["評価", "!!!", "2024", "Ωμέγα"])
def test_a_name_without_ascii_letters_gets_a_stable_hashed_id(name: str) -> None:
    digest = hashlib.sha256(unicodedata.normalize("NFC", name).encode()).hexdigest()[:8]
    assert slugify(name) == f"scorer-{digest}"
    assert create_scorer(name).id == f"scorer-{digest}"
    assert slugify(unicodedata.normalize("NFD", name)) == slugify(name)
    assert slugify(name + "!") != slugify(name)


@pytest.mark.parametrize("name", ["", "   "])
def test_unusable_name_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError):
        create_scorer(name)


def test_an_empty_id_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="an id must be a non-empty string, got ''"):
        create_scorer("Fine", id="")


async def test_run_id_is_kept_when_given() -> None:
    result = await quality_scorer().run(input="q", output="a", run_id="run-42")
    assert result.run_id == "run-42"


async def test_run_id_is_a_fresh_uuid_per_run() -> None:
    scorer = quality_scorer()
    first = await scorer.run(input="q", output="a")
    second = await scorer.run(input="q", output="a")
    assert first.run_id != second.run_id
    assert uuid.UUID(first.run_id).version == 4


async def test_builder_returns_new_scorers_and_leaves_original_unchanged() -> None:
    base = create_scorer("Base").generate_score(lambda: 0.25)
    with_reason = base.generate_reason(lambda score: f"got {score}")
    replaced = with_reason.generate_score(lambda: 0.75)

    assert list(base.steps) == ["generate_score"]
    assert list(with_reason.steps) == ["generate_score", "generate_reason"]
    assert (await base.run(input=1, output=2)).reason is None
    assert (await with_reason.run(input=1, output=2)).reason == "got 0.25"
    assert (await replaced.run(input=1, output=2)).score == 0.75
    assert (await with_reason.run(input=1, output=2)).score == 0.25


async def test_steps_run_in_canonical_order_whatever_the_chaining_order() -> None:
    calls: list[str] = []

    def step(name: str, value: Any) -> Any:
        def fn() -> Any:
            calls.append(name)
            return value

        return fn

    scorer = (
        create_scorer("Order")
        .generate_reason(step("generate_reason", "why"))
        .generate_score(step("generate_score", 0.5))
        .analyze(step("analyze", "a"))
        .preprocess(step("preprocess", "p"))
    )
    assert list(scorer.steps) == ["preprocess", "analyze", "generate_score", "generate_reason"]
    await scorer.run(input="q", output="a")
    assert calls == ["preprocess", "analyze", "generate_score", "generate_reason"]


async def test_async_steps_are_awaited() -> None:
    async def preprocess(run: ScorerRun) -> int:
        await anyio.sleep(0)
        return len(run.output)

    async def score(results: StepResults) -> float:
        await anyio.sleep(0)
        length: int = results.preprocess_step_result
        return length / 10

    async def reason(score: float) -> str:
        return f"async {score}"

    scorer = (
        create_scorer("Async").preprocess(preprocess).generate_score(score).generate_reason(reason)
    )
    result = await scorer.run(input="q", output="abcde")
    assert (result.preprocess_step_result, result.score, result.reason) == (5, 0.5, "async 0.5")


async def test_steps_receive_only_the_arguments_they_declare() -> None:
    seen: dict[str, Any] = {}

    def preprocess(run: ScorerRun) -> str:
        seen["preprocess"] = run
        return "pre"

    def analyze(results: StepResults, run: ScorerRun) -> str:
        seen["analyze"] = (results.preprocess_step_result, run.ground_truth)
        return "ana"

    def score() -> float:
        return 0.3

    def reason(score: float, results: StepResults, run: ScorerRun) -> str:
        seen["reason"] = (score, results.generate_score_step_result, results.analyze_step_result)
        return "ok"

    def everything(**kwargs: Any) -> str:
        seen["kwargs"] = sorted(kwargs)
        return "kw"

    scorer = (
        create_scorer("Args")
        .preprocess(preprocess)
        .analyze(analyze)
        .generate_score(score)
        .generate_reason(reason)
    )
    await scorer.run(
        input="in", output="out", ground_truth="gt", request_context={"user": "u1"}, run_id="r1"
    )
    run = seen["preprocess"]
    assert (run.input, run.output, run.ground_truth, run.request_context, run.run_id) == (
        "in",
        "out",
        "gt",
        {"user": "u1"},
        "r1",
    )
    assert seen["analyze"] == ("pre", "gt")
    assert seen["reason"] == (0.3, 0.3, "ana")

    await scorer.generate_reason(everything).run(input="in", output="out")
    assert seen["kwargs"] == ["results", "run", "score"]


def test_optional_unknown_parameters_are_left_to_their_defaults() -> None:
    scorer = create_scorer("Defaults").generate_score(lambda results, scale=2.0: scale)
    assert list(scorer.steps) == ["generate_score"]


@pytest.mark.parametrize(
    ("kind", "fn", "message"),
    [
        ("preprocess", lambda data: data, "parameter 'data'"),
        ("generate_score", lambda score: score, "parameter 'score'"),
        ("analyze", 42, "must be a function or a PromptStep"),
    ],
)
def test_bad_step_definitions_are_rejected_when_added(kind: str, fn: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        getattr(create_scorer("Bad Steps"), kind)(fn)
    assert "Bad Steps" in str(info.value)
    assert kind in str(info.value)


async def test_missing_generate_score_names_the_scorer() -> None:
    scorer = create_scorer("No Score").preprocess(lambda run: 1)
    with pytest.raises(ConfigError, match="'No Score' has no generate_score step"):
        await scorer.run(input="q", output="a")


async def test_to_dict_is_json_ready_for_nested_values() -> None:
    scorer = create_scorer("Nested").preprocess(lambda run: {"tags": ("a", "b"), "n": {1}})
    scorer = scorer.generate_score(lambda: 1)
    result = await scorer.run(input={"q": [1, 2]}, output=None, request_context={"k": b"v"})
    data = json.loads(json.dumps(result.to_dict()))
    assert data["preprocess_step_result"] == {"tags": ["a", "b"], "n": [1]}
    assert data["input"] == {"q": [1, 2]}
    assert data["request_context"] == {"k": "v"}
    assert data["score"] == 1.0
    assert isinstance(result.score, float)


async def test_with_id_records_under_a_new_id_and_keeps_everything_else() -> None:
    base = create_scorer("Base", higher_is_better=False).generate_score(lambda: 0.25)
    renamed = base.with_id("base-v2")
    assert (renamed.id, renamed.name, renamed.higher_is_better) == ("base-v2", "Base", False)
    assert base.id == "base"
    assert (await renamed.run(input=1, output=2)).score == 0.25
    with pytest.raises(ConfigError):
        base.with_id("")


@pytest.mark.parametrize(
    ("attribute", "value"),
    [
        ("id", "other"),
        ("name", "Other"),
        ("description", "d"),
        ("judge", None),
        ("higher_is_better", False),
        ("metadata", {}),
    ],
)
def test_scorer_attributes_are_read_only(attribute: str, value: Any) -> None:
    scorer = create_scorer("Fixed", "what it measures").generate_score(lambda: 1.0)
    before = getattr(scorer, attribute)
    with pytest.raises(AttributeError):
        setattr(scorer, attribute, value)
    assert getattr(scorer, attribute) == before


def test_a_scorer_takes_no_new_attributes() -> None:
    scorer = create_scorer("Fixed").generate_score(lambda: 1.0)
    with pytest.raises(AttributeError):
        scorer.extra = 1  # type: ignore[attr-defined]


async def test_a_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def later(value: float) -> float:
        return value

    class AsyncCall:
        async def __call__(self, results: StepResults) -> float:
            tenths: float = results.preprocess_step_result
            return tenths + 0.5

    scorer = (
        create_scorer("Mixed")
        .preprocess(lambda run: later(len(run.output) / 10))
        .generate_score(AsyncCall())
        .generate_reason(lambda score: later(f"{score}"))  # type: ignore[arg-type]
    )
    result = await scorer.run(input="q", output="ab")
    assert (result.preprocess_step_result, result.score, result.reason) == (0.2, 0.7, "0.7")


async def test_run_ids_are_canonical_version_4_uuids_and_unique() -> None:
    scorer = quality_scorer()
    ids = [(await scorer.run(input="q", output="a")).run_id for _ in range(2_000)]
    assert len(set(ids)) == len(ids)
    for text in ids[:50]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)


def test_a_forked_child_draws_other_run_ids_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write, new_run_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    assert uuid.UUID(child).version == 4
    assert child != new_run_id()

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from string import Template
from typing import Any

import pytest

import evalkit
from evalkit import Judge, Scorer, get_scorer, list_scorers, load_experiment_file, scorer_info
from evalkit.scorer._ids import slugify
from evalkit.scorers._context import PRECISION_ANALYZE, RELEVANCE_ANALYZE
from evalkit.scorers._tool_selection import ANALYZE as TOOLS_ANALYZE
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import script

LLM_SCORERS = {
    "answer_relevancy",
    "answer_similarity",
    "bias",
    "context_precision",
    "context_recall",
    "context_relevance",
    "faithfulness",
    "hallucination",
    "llm_rubric",
    "prompt_alignment",
    "rubric",
    "summarization",
    "tool_call_accuracy_llm",
    "toxicity",
}
LOWER_IS_BETTER = {"bias", "hallucination", "toxicity"}
ROOT = Path(__file__).resolve().parents[3]

# What each scorer sends the judge for one fixed row (messages and response formats), hashed.
# When a scorer's prompts, instructions or schemas change, this test fails: bump the scorer's
# registry `version` (its stored identity), then record the new version and hash here. (Only
# if the test server's generated replies changed, which feed the later prompts, re-record the
# hashes without a new version.)
PROMPTS = {
    "answer_relevancy": (2, "d938df77562bc5bd"),
    "answer_similarity": (2, "c786d2fc180efec5"),
    "bias": (1, "d99d4c763369ccd8"),
    "context_precision": (1, "c640f612d046e7f7"),
    "context_recall": (2, "b0fe82cce75a1c99"),
    "context_relevance": (1, "832e501196d40505"),
    "faithfulness": (2, "afb478a9a5d910fe"),
    "hallucination": (2, "6604a58bde513b1c"),
    "llm_rubric": (1, "773f09be91931343"),
    "prompt_alignment": (1, "3d37cc167ff827b2"),
    "rubric": (1, "84c4302e6a77e9ba"),
    "summarization": (2, "c653b4d69f846051"),
    "tool_call_accuracy_llm": (2, "ad45fbb33ce2b47f"),
    "toxicity": (2, "6b7ac55bada2417f"),
}


def test_every_llm_scorer_is_listed() -> None:
    assert {info.name for info in list_scorers(kind="llm")} == LLM_SCORERS


@pytest.mark.parametrize("name", sorted(LLM_SCORERS))
def test_metadata_is_complete(name: str) -> None:
    info = scorer_info(name)
    assert info.kind == "llm"
    assert info.range == (0.0, 1.0)
    assert info.higher_is_better is (name not in LOWER_IS_BETTER)
    assert info.version >= 1
    assert info.description.endswith(".")
    assert info.inputs
    assert slugify(info.title) == name.replace("_", "-")
    assert info.param("scale").default == 1.0
    assert all(param.description for param in info.params)
    assert info.extra is None
    json.dumps(info.to_dict())
    factory = getattr(evalkit.scorers, name)
    assert "judge" in inspect.signature(factory).parameters


@pytest.mark.parametrize("name", sorted(LLM_SCORERS))
def test_get_scorer_passes_the_judge_and_records_the_identity(name: str) -> None:
    judge = Judge("gpt-4o-mini")
    info = scorer_info(name)
    scorer = get_scorer(name, judge=judge, id=f"my-{name}")
    assert isinstance(scorer, Scorer)
    assert (scorer.id, scorer.name, scorer.judge) == (f"my-{name}", info.title, judge)
    assert scorer.higher_is_better is info.higher_is_better
    assert scorer.metadata == {
        "prebuilt": name,
        "version": info.version,
        "params": {param.name: evalkit._json.to_jsonable(param.default) for param in info.params},
    }
    assert "generate_score" in scorer.steps
    assert "generate_reason" in scorer.steps


ROW: dict[str, Any] = {
    "input": "What does the Nimbus Notes Pro plan cost?",
    "output": "Nimbus Notes Pro costs $8 a month. It syncs across devices.",
    "ground_truth": "$8 per month, billed monthly.",
    "request_context": {
        "context": ["Pro costs $8 per month.", "Notes sync across devices."],
        "rubric": "- States the price\n- (optional) Mentions billing",
        "system_prompt": "Answer in one sentence.",
        "tools": {"lookup_price": "Looks up a plan's price."},
    },
}


def _pieces(*fields: tuple[str, Any]) -> list[dict[str, Any]]:
    return [{"context_index": i, **dict(fields)} for i in (1, 2)]


# The server's generated replies hold one entry per array; steps that send a known number of
# items need one answer each (ROW has two context pieces and no tool call).
SCRIPTED: dict[str, dict[Template | str, Any]] = {
    "context_precision": {
        PRECISION_ANALYZE: {"verdicts": _pieces(("reason", "r"), ("verdict", "yes"))}
    },
    "context_relevance": {
        RELEVANCE_ANALYZE: {
            "evaluations": _pieces(
                ("reasoning", "r"), ("relevance_level", "high"), ("was_used", True)
            ),
            "missing_context": [],
            "overall_assessment": "ok",
        }
    },
    "tool_call_accuracy_llm": {TOOLS_ANALYZE: {"evaluations": [], "missing_tools": []}},
}


async def test_prompt_versions(judge: Judge, server: FakeOpenAIServer) -> None:
    changed = {}
    for name in sorted(LLM_SCORERS):
        server.reset()
        script(server, SCRIPTED.get(name, {}))
        await get_scorer(name, judge=judge).run(**ROW)
        # What the model is asked: messages and the structured-output schema of each request.
        sent = [[body["messages"], body.get("response_format")] for body in server.requests]
        digest = hashlib.sha256(json.dumps(sent).encode()).hexdigest()[:16]
        if (scorer_info(name).version, digest) != PROMPTS[name]:
            changed[name] = (scorer_info(name).version, digest)
    assert not changed, f"prompts changed: bump the scorer's version, then record {changed}"


def test_the_nightly_llm_experiment_builds_its_scorers() -> None:
    config = load_experiment_file(ROOT / "experiments" / "nightly-llm.toml").config
    for entry in config.scorers:
        scorer = get_scorer(
            entry.use, id=entry.id, judge=Judge(**config.judge_settings(entry)), **entry.params
        )
        assert (entry.direction == "higher") is scorer.higher_is_better, entry.use
        if scorer_info(entry.use).kind == "llm":
            assert scorer.judge is not None
            assert scorer.judge.model == (entry.judge.model if entry.judge else config.judge.model)  # type: ignore[union-attr]


async def test_an_experiment_file_names_llm_scorers_with_params(
    tmp_path: Path, llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    dataset = tmp_path / "data.parquet"
    dataset.write_bytes(b"")  # the loader only checks that the file exists
    (tmp_path / "exp.toml").write_text(
        f"""
[experiment]
name = "rag"
dataset = "data.parquet"

[judge]
model = "fake-judge"
base_url = "{llm_judge.base_url}"
api_key_env = "{llm_judge.api_key_env}"

[[scorers]]
use = "faithfulness"
threshold = 0.8
params = {{ context_key = "passages", explain = false }}

[[scorers]]
use = "llm_rubric"
id = "polite"
threshold = 0.5
params = {{ rubric = "The answer is polite.", scale = 10 }}
""",
        encoding="utf-8",
    )
    config = load_experiment_file(tmp_path / "exp.toml").config
    scorers = [
        get_scorer(
            entry.use, id=entry.id, judge=Judge(**config.judge_settings(entry)), **entry.params
        )
        for entry in config.scorers
    ]
    assert [scorer.id for scorer in scorers] == ["faithfulness", "polite"]
    row = {
        "input": "Price?",
        "output": "It costs $8, thank you for asking.",
        "request_context": {"passages": ["Pro costs $8 per month."]},
    }
    faithful, polite = [await scorer.run(**row) for scorer in scorers]  # type: ignore[arg-type]
    assert faithful.score == 1.0  # the server's generated reply: one claim, verdict "yes"
    assert list(faithful.judge) == ["preprocess", "analyze"]
    assert polite.score == 5.0  # generated score 0.5, times the scale
    assert list(polite.judge) == ["analyze"]
    assert all(body["model"] == "fake-judge" for body in llm_server.requests)

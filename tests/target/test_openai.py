from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, OpenAITarget, TargetError, create_scorer, run_evals
from evalkit.dataset import Item
from evalkit.testing import FakeOpenAIServer, Fault, Rule


def target_for(server: FakeOpenAIServer, key_env: str, **options: object) -> OpenAITarget:
    return OpenAITarget(
        "app-model",
        system="You answer arithmetic questions.",
        base_url=server.base_url,
        api_key_env=key_env,
        max_retries=0,
        timeout=60.0,  # far above a loaded machine's answer time: no test waits it out
        **options,  # type: ignore[arg-type]
    )


async def test_answer_comes_from_the_model_with_the_system_and_templated_prompt(
    server: FakeOpenAIServer, judge_key: str
) -> None:
    server.add_rule(Rule(match="Question: 2+2 (user u1)", reply="4"))
    target = target_for(
        server, judge_key, prompt="Question: {input} (user {request_context[user]})"
    )
    output = await target(Item("i1", "2+2", request_context={"user": "u1"}))
    assert output == "4"
    (request,) = server.requests
    messages = request["messages"]
    assert messages[0] == {"role": "system", "content": "You answer arithmetic questions."}
    assert messages[1]["content"] == "Question: 2+2 (user u1)"
    assert request["model"] == "app-model"


async def test_a_template_naming_a_missing_column_fails_the_item_clearly(
    server: FakeOpenAIServer, judge_key: str
) -> None:
    target = target_for(server, judge_key, prompt="{question}")
    with pytest.raises(TargetError, match=r"'question'.*the row has .*input"):
        await target(Item("i1", "2+2"))
    assert server.requests == []


async def test_http_errors_become_target_errors(server: FakeOpenAIServer, judge_key: str) -> None:
    server.add_rule(Rule(fault=Fault.http(500)))
    with pytest.raises(TargetError, match="500"):
        await target_for(server, judge_key)(Item("i1", "2+2"))


def test_an_invalid_template_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="not a valid template"):
        OpenAITarget("m", prompt="{input")


@pytest.mark.parametrize(
    ("option", "value"), [("temperature", 5), ("timeout", 0), ("max_retries", -1)]
)
def test_a_setting_out_of_range_is_named_as_the_targets(option: str, value: float) -> None:
    settings: dict[str, Any] = {option: value}
    with pytest.raises(ConfigError, match=rf"^OpenAITarget {option} ") as info:
        OpenAITarget("m", prompt="{input}", **settings)
    assert "Judge" not in str(info.value)


def test_describe_names_the_model_and_never_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_KEY", "sk-secret-canary")
    described = OpenAITarget("m", api_key_env="APP_KEY", base_url="http://h/v1").describe()
    assert described["model"] == "m"
    assert described["api_key_env"] == "APP_KEY"
    assert "sk-secret-canary" not in repr(described)


async def test_run_evals_scores_the_targets_answers(
    server: FakeOpenAIServer, judge_key: str
) -> None:
    server.add_rule(Rule(match="2+2", reply="4"))
    server.add_rule(Rule(match="3+3", reply="7"))
    exact = create_scorer("exact").generate_score(lambda run: float(run.output == run.ground_truth))
    data = [{"input": "2+2", "groundTruth": "4"}, {"input": "3+3", "groundTruth": "6"}]
    result = await run_evals(
        data, [exact], target=target_for(server, judge_key), store=None, progress=False
    )
    assert [item.output for item in result.items] == ["4", "7"]
    assert result.scores == {"exact": 0.5}


async def test_a_refused_key_stops_the_target_after_the_first_call(
    server: FakeOpenAIServer, judge_key: str
) -> None:
    server.add_rule(Rule(fault=Fault.http(401)))
    target = target_for(server, judge_key)
    for n in range(3):
        with pytest.raises(TargetError, match=r"401|auth"):
            await target(Item(f"i{n}", "2+2"))
    assert server.stats.requests == 1

from __future__ import annotations

from typing import Any

import pytest
from openai import AsyncOpenAI

from evalkit import ConfigError, Judge


def test_defaults_match_the_spec() -> None:
    judge = Judge("gpt-4o-mini", "Grade.")
    assert (judge.model, judge.instructions) == ("gpt-4o-mini", "Grade.")
    assert judge.client is None
    assert judge.base_url is None
    assert (judge.api_key_env, judge.provider) == ("OPENAI_API_KEY", "openai")
    assert (judge.temperature, judge.max_tokens, judge.timeout) == (0.0, None, 60.0)
    assert (judge.max_retries, judge.max_concurrency, judge.extra_body) == (2, None, None)
    assert (judge.cache, judge.rpm, judge.tpm, judge.rate_limit_retries) == (None, None, None, 10)
    assert (judge.mode, judge.batch_max_requests) == ("online", 50_000)
    assert (judge.batch_flush_after, judge.batch_poll_interval) == (2.0, 30.0)
    assert judge.caches  # temperature 0
    assert judge.explicit_fields == {"model", "instructions"}


def test_help_shows_default_values() -> None:
    import inspect

    signature = str(inspect.signature(Judge))
    assert "temperature: 'float | None' = 0.0" in signature
    assert "api_key_env: 'str' = 'OPENAI_API_KEY'" in signature


def test_judge_is_a_frozen_hashable_value() -> None:
    first = Judge("m", "i", base_url="http://x/v1", extra_body={"seed": 1})
    second = Judge("m", "i", base_url="http://x/v1", extra_body={"seed": 1})
    assert first == second
    assert hash(first) == hash(second)
    assert len({first, second}) == 1
    assert first != Judge("m", "i", base_url="http://x/v1", extra_body={"seed": 2})
    assert first != Judge("m", "other", base_url="http://x/v1", extra_body={"seed": 1})
    with pytest.raises(AttributeError):
        first.model = "other"  # type: ignore[misc]


def test_explicitly_passed_default_still_counts_as_explicit() -> None:
    # Equal values, but the second one says "temperature 0, whatever the scorer says".
    assert Judge("m") == Judge("m", temperature=0.0)
    scorer_judge = Judge("m", temperature=0.9)
    assert Judge("m").with_defaults(scorer_judge).temperature == 0.9
    assert Judge("m", temperature=0.0).with_defaults(scorer_judge).temperature == 0.0


def test_with_defaults_takes_unset_fields_from_the_base() -> None:
    base = Judge(
        "small",
        "Rubric A",
        base_url="http://local/v1",
        api_key_env="LOCAL_KEY",
        max_concurrency=8,
        timeout=10.0,
    )
    step = Judge("big", max_tokens=50)
    merged = step.with_defaults(base)
    assert merged.model == "big"
    assert merged.max_tokens == 50
    assert merged.instructions == "Rubric A"
    assert (merged.base_url, merged.api_key_env) == ("http://local/v1", "LOCAL_KEY")
    assert (merged.max_concurrency, merged.timeout) == (8, 10.0)
    assert merged.explicit_fields == base.explicit_fields | step.explicit_fields
    assert step.with_defaults(None) is step


def test_replace_marks_fields_explicit_and_validates() -> None:
    judge = Judge("m").replace(temperature=0.5)
    assert judge.temperature == 0.5
    assert "temperature" in judge.explicit_fields
    with pytest.raises(ConfigError, match="no field 'colour'"):
        judge.replace(colour="red")
    with pytest.raises(ConfigError, match="max_concurrency must be an integer >= 1"):
        judge.replace(max_concurrency=0)


def test_limiter_key_ignores_prompt_settings_but_not_the_endpoint() -> None:
    base = Judge("m", "A", base_url="http://x/v1", max_concurrency=4)
    assert base.limiter_key == base.replace(instructions="B", temperature=1.0).limiter_key
    assert base.limiter_key != base.replace(model="n").limiter_key
    assert base.limiter_key != base.replace(base_url="http://y/v1").limiter_key
    assert base.limiter_key != base.replace(api_key_env="OTHER").limiter_key
    assert base.limiter_key != base.replace(max_concurrency=5).limiter_key
    assert base.limiter_key != base.replace(rpm=600).limiter_key
    assert base.limiter_key != base.replace(tpm=10_000).limiter_key
    assert base.limiter_key == base.replace(cache=False, rate_limit_retries=1).limiter_key


async def test_client_must_be_an_async_openai_client() -> None:
    client = AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    try:
        judge = Judge("m", client=client)
        assert judge.client is client
        assert judge.limiter_key != Judge("m").limiter_key
    finally:
        await client.close()
    with pytest.raises(ConfigError, match=r"client must be an openai\.AsyncOpenAI"):
        Judge("m", client="sk-123")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": ""}, "model must be a non-empty string or None"),
        ({"model": 3}, "model must be a non-empty string or None"),
        ({"api_key_env": ""}, "api_key_env must be the name of an environment variable"),
        ({"temperature": "hot"}, "temperature must be a number from 0 to 2, got 'hot'"),
        ({"temperature": True}, "temperature must be a number from 0 to 2, got True"),
        ({"timeout": 0}, "timeout must be a number of seconds above 0 and at most 86,400"),
        ({"timeout": float("inf")}, "timeout = inf is above the ceiling of 86,400 seconds"),
        ({"max_retries": -1}, "max_retries must be an integer from 0 to 100, got -1"),
        ({"max_tokens": 0}, "max_tokens must be an integer from 1 to 1,000,000, got 0"),
        ({"max_concurrency": 2.5}, "max_concurrency must be an integer >= 1 or None"),
        ({"max_concurrency": 10**20}, "max_concurrency = 10{20} is above the ceiling of 10000"),
        ({"extra_body": ["seed"]}, "extra_body must be a mapping or None"),
        ({"cache": "yes"}, "cache must be True, False or None"),
        ({"rpm": 0}, "rpm must be a number from 0.01 to 10,000,000, got 0"),
        ({"rpm": float("nan")}, "rpm must be a number from 0.01 to 10,000,000, got nan"),
        ({"tpm": float("inf")}, "tpm = inf is above the ceiling of 10,000,000,000"),
        ({"tpm": True}, "tpm must be a number from 1 to 10,000,000,000, got True"),
        ({"rate_limit_retries": -1}, "rate_limit_retries must be an integer from 0 to 1,000"),
        ({"mode": "offline"}, "mode must be 'online' or 'batch'"),
        ({"batch_max_requests": 0}, "batch_max_requests must be an integer from 1 to 1,000,000"),
        ({"batch_flush_after": 0}, "batch_flush_after must be a number of seconds above 0"),
        ({"batch_poll_interval": float("inf")}, "batch_poll_interval = inf is above the ceiling"),
    ],
)
def test_invalid_fields_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Judge(**kwargs)


def test_batch_key_groups_judges_by_endpoint_model_and_batch_settings() -> None:
    base = Judge("m", "i", base_url="http://x/v1", mode="batch")
    assert base.batch_key == base.replace(instructions="other", temperature=1.0).batch_key
    assert base.batch_key != base.replace(model="n").batch_key
    assert base.batch_key != base.replace(base_url="http://y/v1").batch_key
    assert base.batch_key != base.replace(batch_flush_after=1.0).batch_key


def test_label_names_model_and_endpoint() -> None:
    assert Judge("m").label == "judge 'm'"
    assert Judge("m", base_url="http://h/v1").label == "judge 'm' at http://h/v1"


def test_a_step_judge_inherits_the_rate_limits_and_cache_setting() -> None:
    base = Judge("m", rpm=600, tpm=50_000, cache=False)
    step = Judge(temperature=0.0).with_defaults(base)
    assert (step.rpm, step.tpm, step.cache) == (600, 50_000, False)
    assert not step.caches
    assert step.limiter_key == base.limiter_key


@pytest.mark.parametrize(
    "value",
    ["sk-proj-Abc123def456ghi789jkl", "Bearer abcdef1234567890", "aB3dE6gH9jK2mN5pQ8rS1t", "x y"],
)
def test_api_key_env_holding_a_key_is_refused_without_echo(value: str) -> None:
    with pytest.raises(ConfigError, match="api_key_env") as info:
        Judge("m", api_key_env=value)
    assert value not in str(info.value)
    assert "value not shown" in str(info.value)


def test_credentials_in_base_url_are_masked_in_label_and_repr() -> None:
    judge = Judge("m", base_url="https://me:hunter2pass@llm.example/v1?api-key=s3cr3tvalue")
    for text in (judge.label, repr(judge)):
        assert "hunter2pass" not in text
        assert "s3cr3tvalue" not in text
        assert "https://me:[REDACTED]@llm.example/v1?api-key=[REDACTED]" in text
    assert judge.base_url == "https://me:hunter2pass@llm.example/v1?api-key=s3cr3tvalue"

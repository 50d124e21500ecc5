"""A chat model call's endpoint settings are declared once for the target and the judge
(issue 32): the experiment file's ``[target]`` and ``[judge]`` tables share one declaration,
and ``OpenAITarget``'s keywords are ``Judge``'s, with its defaults."""

from __future__ import annotations

import inspect

import pytest

from evalkit import Judge, OpenAITarget, TargetError
from evalkit.dataset import Item
from evalkit.experiment_file import JudgeOverride, OpenAITargetSection

ENDPOINT = (
    "base_url", "api_key_env", "max_concurrency", "temperature", "max_tokens", "timeout",
    "max_retries", "rpm", "tpm",
)  # fmt: skip


def _declared_in(table: type, name: str) -> type:
    return next(c for c in table.__mro__ if name in vars(c).get("__annotations__", {}))


def test_the_target_and_judge_tables_declare_the_endpoint_once() -> None:
    for name in ENDPOINT:
        # Inherited from one declaration, not written in each table.
        assert _declared_in(OpenAITargetSection, name) is _declared_in(JudgeOverride, name)
        assert repr(OpenAITargetSection.model_fields[name]) == repr(
            JudgeOverride.model_fields[name]
        )


def test_the_target_takes_the_judges_endpoint_keywords_and_defaults() -> None:
    target = inspect.signature(OpenAITarget).parameters
    judge = inspect.signature(Judge).parameters
    for name in (*ENDPOINT, "client"):
        default = judge[name].default
        default = getattr(default, "value", default)  # Judge marks a default not passed
        if name == "temperature":
            # On purpose: a judge samples at 0 for repeatable verdicts; a target leaves the
            # application's model at the provider's default.
            assert (target[name].default, default) == (None, 0.0)
            continue
        assert target[name].default == default, name


def test_the_target_names_its_endpoint_as_the_judge_does_credentials_masked() -> None:
    # Before issue 32 the target wrote its own label, without Judge.label's masking: a
    # password in base_url reached the TargetError of a prompt that cannot be filled.
    target = OpenAITarget("m", prompt="{nope}", base_url="http://alice:hunter2pass@h:9/v1")
    with pytest.raises(TargetError) as info:
        target.render(Item(id="1", input="hi"))
    message = str(info.value)
    assert message.startswith("target 'm' at http://alice:")
    assert "hunter2pass" not in message

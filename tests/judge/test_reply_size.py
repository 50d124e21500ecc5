"""A judge reply's size is capped while it is read (issue 30 item 11): a reply past
``max_reply_bytes`` fails the call at once, not retried, with its first bytes as the evidence,
and never more than the cap is held; over real sockets, on both send paths. The memory of 12
replies of 10 MB at once is measured by ``tests/benchmarks/bench_judge_replies.py``."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from evalkit import Judge, JudgeError, PromptStep, ScorerRunError, create_scorer
from evalkit.errors import ConfigError, ExperimentFileError
from evalkit.experiment_file import load_experiment_file
from evalkit.judge.policy._call import chat_completion
from evalkit.judge.transport._body import DEFAULT_MAX_REPLY_BYTES, ReplyTooLarge
from evalkit.testing import FakeOpenAIServer, Fault, Rule

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
MiB = 1024 * 1024
#: How the test server's over-size completion starts: the evidence kept.
HEAD = '{"id":"chatcmpl-evalkit-huge","object":"chat.completion"'


@pytest.mark.parametrize("content_length", [False, True], ids=["chunked", "content-length"])
async def test_a_reply_past_the_cap_fails_at_once_with_its_first_bytes(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI, content_length: bool
) -> None:
    server.add_rule(Rule(fault=Fault.huge_body(10_000_000, content_length=content_length)))
    with pytest.raises(JudgeError) as info:
        await chat_completion(
            client, BODY, timeout=30, max_retries=3, label="J", max_reply_bytes=MiB
        )
    error = info.value
    assert error.code == "reply_too_large"
    assert str(error).startswith("J: the reply is larger than max_reply_bytes (1,048,576 bytes)")
    cause = error.__cause__
    assert isinstance(cause, ReplyTooLarge)
    assert cause.limit == MiB
    if content_length:  # told by its length: not read past its first bytes
        assert cause.declared is not None
        assert cause.declared > 10_000_000
    else:
        assert cause.declared is None
    assert cause.excerpt.startswith(HEAD)
    assert len(cause.first) == 1000
    assert HEAD in str(error)
    assert server.stats.requests == 1  # not retried


async def test_a_reply_within_the_cap_is_read_whole(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.add_rule(Rule(reply="a" * 3000))
    reply = await chat_completion(
        client, BODY, timeout=30, max_retries=0, label="J", max_reply_bytes=4096
    )
    assert reply.content == "a" * 3000


async def test_a_connection_lost_while_the_reply_is_read_is_retried_as_one(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    # The body is read apart from the client's own call (to cap it): a connection lost
    # meanwhile is still a retried connection error, not a final unnamed failure.
    server.add_rule(Rule(fault=Fault.cut_body(), times=1))
    reply = await chat_completion(
        client, BODY, timeout=30, max_retries=2, label="J", max_reply_bytes=MiB
    )
    assert reply.content
    assert server.stats.requests == 2


async def test_an_error_reply_past_the_cap_keeps_its_status(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    # Its body is read for the message only (cut at the cap on the direct path); the status
    # decides: a 500 is retried and fails as a 500.
    server.add_rule(Rule(fault=Fault.huge_body(3 * MiB, status=500)))
    with pytest.raises(JudgeError) as info:
        await chat_completion(
            client, BODY, timeout=30, max_retries=1, label="J", max_reply_bytes=MiB
        )
    assert info.value.code == "500"
    assert server.stats.requests == 2


async def test_an_over_size_reply_is_a_scorer_failure_with_its_first_bytes(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    server.add_rule(Rule(fault=Fault.huge_body(10_000_000)))
    scorer = create_scorer("Quality", judge=judge.replace(max_reply_bytes=MiB)).generate_score(
        PromptStep("score", lambda run: f"Rate the answer: {run.output}")
    )
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(input="q", output="a")
    assert "larger than max_reply_bytes (1,048,576 bytes)" in str(info.value)
    assert info.value.result is not None
    (execution,) = info.value.result.judge["generate_score"].executions
    assert execution.status == "failed"
    assert execution.error is not None
    assert (execution.error.name, execution.error.code) == ("ReplyTooLarge", "reply_too_large")
    assert execution.raw_output is not None
    assert execution.raw_output.startswith(HEAD)
    (attempt,) = execution.attempts  # no retry, no format fallback
    assert attempt.raw_excerpt == execution.raw_output
    assert server.stats.requests == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1023, "Judge max_reply_bytes must be an integer of bytes from 1,024 to 1,073,741,824"),
        (2**30 + 1, "is above the ceiling of 1,073,741,824 bytes"),
        (1.5e6, "must be an integer"),
        (True, "must be an integer"),
    ],
)
def test_the_cap_has_a_range(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Judge("m", max_reply_bytes=value)  # type: ignore[arg-type]
    assert Judge("m").max_reply_bytes == DEFAULT_MAX_REPLY_BYTES == 4 * MiB


def test_the_experiment_files_judge_sets_the_cap(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"input": "q", "output": "a"}\n', encoding="utf-8")

    def write(extra: str) -> Path:
        path = tmp_path / "e.toml"
        path.write_text(
            '[experiment]\nname = "e"\ndataset = "d.jsonl"\n'
            f'[judge]\nmodel = "m"\n{extra}\n'
            '[[scorers]]\nuse = "llm_rubric"\nparams = { rubric = "r" }\n'
            "judge = { max_reply_bytes = 2048 }\n",
            encoding="utf-8",
        )
        return path

    config = load_experiment_file(write("max_reply_bytes = 65536")).config
    assert config.judge is not None
    assert config.judge.max_reply_bytes == 65536
    settings = config.judge_settings(config.scorers[0])
    assert Judge(**settings).max_reply_bytes == 2048
    with pytest.raises(ExperimentFileError, match=r"judge\.max_reply_bytes"):
        load_experiment_file(write("max_reply_bytes = 100"))
    with pytest.raises(ExperimentFileError, match=r"judge\.max_reply_bytes"):
        load_experiment_file(write("max_reply_bytes = 1073741825"))


async def test_an_over_size_reply_after_a_refused_one_is_the_evidence_kept(
    server: FakeOpenAIServer, judge: Judge
) -> None:
    # The first reply is no score (asked again), the second is too large: the evidence of the
    # failure is the over-size reply's first bytes, not the earlier reply.
    server.add_rule(Rule(reply="no number here", times=1))
    server.add_rule(Rule(fault=Fault.huge_body(10_000_000)))
    scorer = create_scorer("Quality", judge=judge.replace(max_reply_bytes=MiB)).generate_score(
        PromptStep("score", lambda run: f"Rate the answer: {run.output}")
    )
    with pytest.raises(ScorerRunError) as info:
        await scorer.run(input="q", output="a")
    assert info.value.result is not None
    (execution,) = info.value.result.judge["generate_score"].executions
    assert execution.error is not None
    assert execution.error.code == "reply_too_large"
    assert execution.raw_output is not None
    assert execution.raw_output.startswith(HEAD)

"""Rules files of the local server: what a good file scripts, and every bad file's message."""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from evalkit.errors import ConfigError
from evalkit.testing import FakeOpenAIServer, Fault, Rule, RulesFileError, load_rules

FIELDS = [field.name for field in dataclasses.fields(Rule)]

GOOD = [
    {"match": "capital of France", "reply": {"score": 1}},
    {"match": {"regex": "^explain", "ignore_case": True}, "reply": "Because."},
    {"match": "list please", "reply": [1, 2], "response_format": "json_object"},
    {"match": "refuse me", "refusal": "I cannot help with that.", "finish_reason": "stop"},
    {"match": "cut short", "reply": "Half an ans", "finish_reason": "length"},
    {"match": "flaky", "fault": {"http": 503, "retry_after": 0.5, "code": "overloaded"}},
    {"match": "slow down", "fault": {"rate_limit": None, "headers": {"x-a": "1"}}, "times": 2},
    {"match": "broken", "fault": "malformed_body", "probability": 0.25},
    {"match": "hang up", "fault": {"hang": 0.2}, "latency": 0.01},
    {"match": "vanish", "fault": {"disconnect": True}},
    {"match": "odd counts", "usage": {"completion_tokens": 10**20, "total_tokens": 1e20}},
    {"reply": "fallback"},
]


def write(tmp_path: Path, content: Any, name: str = "rules.json") -> Path:
    path = tmp_path / name
    text = content if isinstance(content, str) else json.dumps(content)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_gives_the_rules_it_writes(tmp_path: Path) -> None:
    rules = load_rules(write(tmp_path, GOOD))
    assert len(rules) == len(GOOD)
    # Rule compares by identity (its reply may be a function): compare the fields.
    assert [getattr(rules[0], f) for f in FIELDS] == [
        getattr(Rule("capital of France", reply={"score": 1}), f) for f in FIELDS
    ]
    assert isinstance(rules[1].match, re.Pattern)
    assert rules[1].match.flags & re.IGNORECASE
    assert rules[1].matches("EXPLAIN this", "text")
    assert not rules[1].matches("please explain", "text")
    assert (rules[2].reply, rules[2].response_format) == ([1, 2], "json_object")
    assert (rules[3].refusal, rules[4].finish_reason) == ("I cannot help with that.", "length")
    assert rules[5].fault == Fault.http(503, retry_after=0.5, code="overloaded")
    assert rules[6].fault == Fault.rate_limit(None, headers={"x-a": "1"})
    assert rules[6].times == 2
    assert (rules[7].fault, rules[7].probability) == (Fault.malformed_body(), 0.25)
    assert (rules[8].fault, rules[8].latency) == (Fault.hang(0.2), 0.01)
    assert rules[9].fault == Fault.disconnect()
    assert rules[10].usage == {"completion_tokens": 10**20, "total_tokens": 1e20}
    assert (rules[11].match, rules[11].reply) == (None, "fallback")


async def test_rules_from_a_file_answer_like_rules_built_in_python(tmp_path: Path) -> None:
    rules = load_rules(write(tmp_path, GOOD))
    async with (
        FakeOpenAIServer(rules) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=60) as http,
    ):

        async def ask(prompt: str) -> httpx2.Response:
            body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
            return await http.post("/chat/completions", json=body)

        scripted = await ask("What is the capital of France?")
        flaky = await ask("flaky one")
        odd = await ask("odd counts please")
        other = await ask("anything else")
    assert json.loads(scripted.json()["choices"][0]["message"]["content"]) == {"score": 1}
    assert flaky.status_code == 503
    assert flaky.headers["retry-after"] == "0.5"
    assert flaky.json()["error"]["code"] == "overloaded"
    assert other.json()["choices"][0]["message"]["content"] == "fallback"
    # The scripted usage is sent as written, the other entries computed (issue 30, item 1).
    usage = odd.json()["usage"]
    assert (usage["completion_tokens"], usage["total_tokens"]) == (10**20, 1e20)
    assert isinstance(usage["prompt_tokens"], int)


@pytest.mark.parametrize(
    ("rules", "where", "problem"),
    [
        ({"match": "x"}, "", "expected a JSON list of rules, got an object"),
        (["x"], "rules[0]", 'expected an object such as {"match": "...", "reply": ...}, got "x"'),
        ([{}, {"mtch": "a"}], "rules[1].mtch", "unknown key (did you mean 'match'?)"),
        ([{"match": 3}], "rules[0].match", 'expected a string or {"regex": "..."}, got 3'),
        ([{"match": {"regex": "("}}], "rules[0].match.regex", "not a valid regex"),
        ([{"match": {"regex": "a", "case": 1}}], "rules[0].match.case", "unknown key"),
        ([{"match": {"regex": "a", "ignore_case": 1}}], "rules[0].match.ignore_case", "true or"),
        ([{"reply": 7}], "rules[0].reply", "expected a string (sent as is) or a JSON object"),
        ([{"refusal": ["no"]}], "rules[0].refusal", "expected the refusal as a string, got a"),
        ([{"finish_reason": ""}], "rules[0].finish_reason", "expected a finish reason"),
        ([{"reply": "a", "fault": "hang"}], "rules[0].fault", "not reply and fault"),
        ([{"fault": {"http": 700}}], "rules[0].fault.http", "status from 400 to 599, got 700"),
        ([{"fault": {"http": "500"}}], "rules[0].fault.http", 'got "500"'),
        ([{"fault": {"http": 500, "retry_after": -1}}], "rules[0].fault.retry_after", "got -1"),
        ([{"fault": {"http": 500, "message": 1}}], "rules[0].fault.message", "a string"),
        ([{"fault": {"http": 500, "code": 1}}], "rules[0].fault.code", "a string"),
        ([{"fault": {"http": 500, "headers": {"a": 1}}}], "rules[0].fault.headers", "strings"),
        ([{"fault": {"http": 500, "seconds": 1}}], "rules[0].fault.seconds", "unknown key"),
        ([{"fault": {"rate_limit": "soon"}}], "rules[0].fault.rate_limit", 'got "soon"'),
        ([{"fault": {"hang": -2}}], "rules[0].fault.hang", "got -2"),
        ([{"fault": {"disconnect": 1}}], "rules[0].fault.disconnect", "expected true"),
        ([{"fault": {"http": 500, "hang": 1}}], "rules[0].fault", "got http and hang"),
        ([{"fault": {"oops": 1}}], "rules[0].fault", "exactly one kind of fault"),
        ([{"fault": "explode"}], "rules[0].fault", 'got "explode"'),
        ([{"fault": 500}], "rules[0].fault", "got 500"),
        ([{"response_format": "xml"}], "rules[0].response_format", 'got "xml"'),
        ([{"times": 1.5}], "rules[0].times", "whole number of times, 0 or more, got 1.5"),
        ([{"times": True}], "rules[0].times", "got true"),
        ([{"probability": 1.5}], "rules[0].probability", "from 0 to 1, got 1.5"),
        ([{"latency": "1s"}], "rules[0].latency", 'expected seconds, 0 or more, got "1s"'),
        ([{"usage": 7}], "rules[0].usage", "expected an object of usage entries such as"),
        ([{"usage": [1]}], "rules[0].usage", 'usage entries such as {"completion_tokens": 12}'),
        (
            '[{"usage": {"total_tokens": 1, "total_tokens": 2}}]',
            "rules[0].usage.total_tokens",
            "appears twice",
        ),
    ],
)
def test_every_wrong_rule_is_named_by_file_index_and_key(
    tmp_path: Path, rules: Any, where: str, problem: str
) -> None:
    path = write(tmp_path, rules)
    with pytest.raises(RulesFileError) as caught:
        load_rules(path)
    prefix = f"{path}: {where}: " if where else f"{path}: "
    assert str(caught.value).startswith(prefix), str(caught.value)
    assert problem in str(caught.value)
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[\n  {"match": "a"\n  "reply": "b"}\n]', ":3: not valid JSON: Expecting ',' delimiter"),
        ('[{"reply": NaN}]', ": not valid JSON: NaN is not a JSON number"),
        ('[{"reply": "a", "reply": "b"}]', ": rules[0].reply: appears twice in the object"),
        ("", ":1: not valid JSON: Expecting value"),
    ],
)
def test_a_file_that_is_no_json_names_the_line(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RulesFileError, match=re.escape(f"{path}{expected}")):
        load_rules(path)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(
        RulesFileError, match=re.escape(f"{missing}: cannot read the file: No such")
    ):
        load_rules(missing)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"[\xff]")
    with pytest.raises(RulesFileError, match=re.escape(f"{binary}: not UTF-8 text")):
        load_rules(binary)


def test_the_error_carries_its_fields_and_pickles(tmp_path: Path) -> None:
    path = write(tmp_path, [{"fault": {"http": 99}}])
    with pytest.raises(RulesFileError) as caught:
        load_rules(path)
    error = caught.value
    assert (error.path, error.index, error.key, error.line) == (str(path), 0, "fault.http", None)
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert copy.to_dict() == error.to_dict()
    assert copy.to_dict()["key"] == "fault.http"


def test_the_test_server_command_imports_no_pydantic() -> None:
    """The rules file is checked by hand, not by a pydantic model: pydantic's import would add
    about 190 ms to each start of the server's command (docs/pages/design/hand-written-pieces.md,
    H1), which a user's test suite may start many times."""
    code = "import sys, evalkit.testing.server; print('pydantic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from evalkit.judge._structured import FormatFailure, ModelSpec, SchemaSpec, ScoreSpec


def strict_of(schema: dict[str, Any]) -> bool:
    spec = SchemaSpec(schema, "test")
    strict: bool = spec.first["response_format"]["json_schema"]["strict"]
    return strict


@pytest.mark.parametrize(
    ("schema", "strict"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, True),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
                "required": ["a"],
            },
            True,
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": True,
            },
            False,
        ),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, False),  # free-form dict
        ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}, False),
        (
            {
                "type": "object",
                "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            },
            True,
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"b": {"type": "integer"}}},
                    }
                },
            },
            True,
        ),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "type": "array",
                        "items": {"type": "object", "additionalProperties": {"type": "integer"}},
                    }
                },
            },
            False,
        ),
    ],
)
def test_schemas_are_strict_only_when_closing_them_is_safe(
    schema: dict[str, Any], strict: bool
) -> None:
    assert strict_of(schema) is strict


def test_strict_copy_requires_every_property_and_leaves_the_user_schema_alone() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "default": "x"}, "b": {"type": "integer"}},
        "required": ["b"],
    }
    spec = SchemaSpec(schema, "test")
    sent = spec.first["response_format"]["json_schema"]["schema"]
    assert sent["required"] == ["a", "b"]
    assert sent["additionalProperties"] is False
    assert "default" not in sent["properties"]["a"]
    assert schema["required"] == ["b"]
    assert "additionalProperties" not in schema
    # Replies are validated against the user's schema, so "a" may still be omitted.
    assert spec.parse('{"b": 1}') == ({"b": 1}, {"b": 1})


class Item(BaseModel):
    name: str
    tags: list[str] = []


def test_pydantic_models_with_defaults_are_asked_strictly() -> None:
    spec = ModelSpec(Item)
    json_schema = spec.first["response_format"]["json_schema"]
    assert json_schema["strict"] is True
    assert json_schema["schema"]["required"] == ["name", "tags"]
    assert spec.parse('{"name": "n"}')[0] == {"name": "n", "tags": []}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the reply is empty"),
        ("   ", "the reply is empty"),
        ("{", "not valid JSON"),
        ('{"score": "1"}', 'not {"score": number}'),
        ('{"score": true}', 'not {"score": number}'),
        ("[0.5]", 'not {"score": number}'),
        ('{"score": NaN}', "not a finite number"),
    ],
)
def test_score_format_failures(content: str, message: str) -> None:
    with pytest.raises(FormatFailure, match=message):
        ScoreSpec().parse(content)


def test_score_accepts_integers_and_extra_keys_are_dropped() -> None:
    assert ScoreSpec().parse('{"score": 1, "why": "x"}') == ({"score": 1}, 1.0)


def test_schema_failures_name_the_path() -> None:
    spec = SchemaSpec({"type": "object", "properties": {"n": {"type": "integer"}}}, "t")
    with pytest.raises(FormatFailure, match="fails the output schema at n: 'x' is not of type"):
        spec.parse('{"n": "x"}')
    with pytest.raises(FormatFailure, match=r"fails Item at name: Field required \(1 error\)"):
        ModelSpec(Item).parse('{"tags": []}')


def test_schema_document_annotations_are_not_sent() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:example:verdict",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
    }
    sent = SchemaSpec(schema, "t").first["response_format"]["json_schema"]["schema"]
    assert "$schema" not in sent
    assert "$id" not in sent
    assert sent["properties"] == {"ok": {"type": "boolean"}}

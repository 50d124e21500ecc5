from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from evalkit.testing import instance_from_schema


class Address(BaseModel):
    street: str
    zip_code: str | None = None


class Person(BaseModel):
    name: str
    age: int
    addresses: list[Address]
    nickname: str | None = None


SCHEMAS: list[dict[str, Any]] = [
    {"type": "number", "minimum": 2, "maximum": 3},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "integer", "maximum": -5},
    {"type": "integer", "minimum": 1, "maximum": 2, "multipleOf": 2},
    {"type": "string", "minLength": 10},
    {"type": "string", "maxLength": 2},
    {"type": "string", "format": "date-time"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": ["null", "integer"], "minimum": 3},
    {"enum": ["red", "green"]},
    {"const": {"fixed": True}},
    {"type": "array", "items": {"type": "integer"}, "minItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": False},
    {"type": "array", "maxItems": 0},
    {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 2}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {
        "allOf": [
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    },
    {"properties": {"nested": {"properties": {"deep": {"type": "boolean"}}}}},
    Person.model_json_schema(),
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_instance_validates_against_its_schema(schema: dict[str, Any]) -> None:
    instance = instance_from_schema(schema)
    jsonschema.validate(instance, schema)


def test_instances_are_deterministic_and_fill_every_property() -> None:
    schema = Person.model_json_schema()
    assert instance_from_schema(schema) == instance_from_schema(schema)
    assert instance_from_schema(schema) == {
        "name": "fake",
        "age": 1,
        "addresses": [{"street": "fake", "zip_code": "fake"}],
        "nickname": "fake",
    }


def test_recursive_schemas_are_refused() -> None:
    schema = {
        "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
        "$ref": "#/$defs/n",
    }
    with pytest.raises(ValueError, match="nests too deeply"):
        instance_from_schema(schema)


def test_only_local_refs_are_followed() -> None:
    with pytest.raises(ValueError, match="only local"):
        instance_from_schema({"$ref": "https://example.com/schema.json"})

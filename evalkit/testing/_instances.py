"""Build a small, valid instance of a JSON Schema, as a model obeying structured output would.

Handles the subset structured-output schemas use: ``type`` (also a list of types),
``properties``/``required``, ``items``/``prefixItems``, ``enum``/``const``, numeric and size
bounds, ``anyOf``/``oneOf``/``allOf``, and local ``$ref`` into ``$defs``/``definitions``.
The result is deterministic, so tests can assert on it.
"""

from __future__ import annotations

from typing import Any

_MAX_DEPTH = 32


def instance_from_schema(schema: Any) -> Any:
    """A deterministic instance that validates against ``schema``.

    Numbers default to 0.5 (integers to 1) clamped into their bounds, strings to ``"fake"``
    (padded or cut to ``minLength``/``maxLength``), booleans to True, arrays to ``minItems``
    elements (at least one), and objects to all their properties.
    """
    return _build(schema, schema, 0)


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"only local $ref are supported, got {ref!r}")
    node = root
    for part in ref.lstrip("#").strip("/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _build(schema: Any, root: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("schema nests too deeply (recursive $ref?)")
    if schema is True or not isinstance(schema, dict):
        return {}
    if "$ref" in schema:
        return _build(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [
                s for s in schema[key] if not (isinstance(s, dict) and s.get("type") == "null")
            ]
            return _build((options or schema[key])[0], root, depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(part["$ref"], root) if "$ref" in part else part
            for key, value in part.items():
                if key in ("properties",) and key in merged:
                    merged[key] = {**merged[key], **value}
                elif key == "required" and key in merged:
                    merged[key] = [*merged[key], *value]
                else:
                    merged.setdefault(key, value)
        return _build(merged, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    return _BUILDERS[kind](schema, root, depth)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    value: float = 1 if integer else 0.5
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None and high is not None:
        value = (low + high) / 2
    elif low is not None:
        value = low + 1
    elif high is not None:
        value = high - 1
    if integer:
        value = round(value)
        if low is not None and high is not None and not low <= value <= high:
            value = low
    multiple = schema.get("multipleOf")
    if multiple:
        value = round(value / multiple) * multiple
    return int(value) if integer else float(value)


def _string(schema: dict[str, Any]) -> str:
    formats = {
        "date-time": "2024-01-01T00:00:00Z",
        "date": "2024-01-01",
        "time": "00:00:00Z",
        "email": "fake@example.com",
        "uri": "https://example.com/",
        "uuid": "00000000-0000-4000-8000-000000000000",
    }
    text = formats.get(schema.get("format", ""), "fake")
    text = text.ljust(schema.get("minLength", 0), "x")
    if (limit := schema.get("maxLength")) is not None:
        text = text[:limit]
    return text


def _array(schema: dict[str, Any], root: Any, depth: int) -> list[Any]:
    prefix = [_build(s, root, depth + 1) for s in schema.get("prefixItems", [])]
    items = schema.get("items", {"type": "string"})
    count = len(prefix) if items is False else max(schema.get("minItems", 1), len(prefix))
    if (limit := schema.get("maxItems")) is not None:
        count = min(count, limit)
    rest = [_build(items, root, depth + 1) for _ in range(count - len(prefix))]
    return (prefix + rest)[:count]


def _object(schema: dict[str, Any], root: Any, depth: int) -> dict[str, Any]:
    return {
        name: _build(sub, root, depth + 1) for name, sub in schema.get("properties", {}).items()
    }


_BUILDERS: dict[str, Any] = {
    "object": _object,
    "array": _array,
    "string": lambda schema, root, depth: _string(schema),
    "number": lambda schema, root, depth: _number(schema, integer=False),
    "integer": lambda schema, root, depth: _number(schema, integer=True),
    "boolean": lambda schema, root, depth: True,
    "null": lambda schema, root, depth: None,
}

"""What a caller asks the judge for, and how a reply is checked.

Three kinds of output: plain text (`OutputSpec`), ``{"score": number}``
(`ScoreSpec`) and a user schema (`schema_spec`: a pydantic model class or a JSON
Schema dict). Which step asks for which, and under what step kind (part of the judge cache
key), is the caller's business: the scorer layer picks the spec and passes the kind in.
Structured outputs are first asked with native structured output (``response_format``
``json_schema``, strict when the schema allows it); a *format* failure — not JSON, empty,
refused, or failing the schema — is retried once with the schema written into the prompt and
JSON mode. How schemas are wrapped and made strict: docs/pages/design/structured-output-schemas.md.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import pydantic
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema import validators

from evalkit.errors import ConfigError

_JSON_MODE: dict[str, Any] = {"response_format": {"type": "json_object"}}
# Keywords OpenAI's strict mode rejects or that change meaning when every property is required.
_NOT_STRICT = frozenset({"allOf", "oneOf", "not", "if", "then", "else", "patternProperties"})
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "prefixItems")


class FormatFailure(Exception):
    """The judge answered, but not in the asked format (this triggers the fallback)."""

    def __init__(self, message: str, *, code: str = "format") -> None:
        self.code = code
        super().__init__(message)


class OutputSpec:
    """Plain text: the reply's content, which must not be empty.

    Args:
        kind: The step kind asking, as the caller names it (part of the judge cache key, and
            recorded with cache entries).
    """

    def __init__(self, *, kind: str = "") -> None:
        #: Extra request fields of the first attempt, and of the fallback (None: no fallback).
        self.first: dict[str, Any] = {}
        self.fallback: dict[str, Any] | None = None
        self.fallback_suffix = ""
        self.describe = "text"
        #: The step kind asking (part of the judge cache key).
        self.kind = kind

    def parse(self, content: str) -> tuple[Any, Any]:
        """``(recorded output, step value)`` of a reply, or `FormatFailure`."""
        if not content.strip():
            raise FormatFailure("the reply is empty")
        return content, content


class JsonSpec(OutputSpec):
    """A JSON value checked against a schema, asked with json_schema then JSON mode."""

    def __init__(self, schema: Mapping[str, Any], name: str, *, kind: str = "") -> None:
        super().__init__(kind=kind)
        # Annotations of the schema document itself are not part of what the model must follow.
        sent = {k: v for k, v in schema.items() if k not in ("$schema", "$id")}
        request_schema, self._wrapped = _object_root(sent)
        strict = _strict_copy(request_schema)
        self.request_schema = strict if strict is not None else request_schema
        json_schema: dict[str, Any] = {
            "name": _format_name(name),
            "schema": self.request_schema,
            "strict": strict is not None,
        }
        self.first = {"response_format": {"type": "json_schema", "json_schema": json_schema}}
        self.fallback = _JSON_MODE
        self.fallback_suffix = (
            "\n\nAnswer with one JSON object and nothing else. It must validate against this "
            "JSON Schema:\n```json\n"
            + json.dumps(self.request_schema, ensure_ascii=False)
            + "\n```"
        )
        self.describe = f"JSON matching the {name!r} schema"

    def parse(self, content: str) -> tuple[Any, Any]:
        if not content.strip():
            raise FormatFailure("the reply is empty")
        try:
            value = json.loads(content)
        except ValueError as exc:
            raise FormatFailure(f"the reply is not valid JSON ({exc})") from None
        if self._wrapped:
            if not isinstance(value, dict) or "value" not in value:
                raise FormatFailure('the reply has no "value" field')
            value = value["value"]
        output = self.validate(value)
        return output, output

    def validate(self, value: Any) -> Any:
        """The validated JSON value, or `FormatFailure`."""
        raise NotImplementedError


class ScoreSpec(JsonSpec):
    """``{"score": number}``: the step value is the finite float.

    Args:
        kind: The step kind asking (see `OutputSpec`).
        score_range: ``(low, high)``: a score outside it (bounds included) is a format
            failure, so the fallback asks once more, with the range written into its prompt.
            The bounds are checked, not declared in the schema sent: some providers' strict
            modes reject ``minimum``/``maximum`` (see
            docs/pages/design/bounds-validated-not-declared.md).
    """

    def __init__(self, *, kind: str = "", score_range: tuple[float, float] | None = None) -> None:
        schema = {
            "type": "object",
            "properties": {"score": {"type": "number"}},
            "required": ["score"],
            "additionalProperties": False,
        }
        super().__init__(schema, "score", kind=kind)
        self.score_range = score_range
        self.describe = '{"score": number}'
        if score_range is not None:
            low, high = score_range
            shown = f"from {_number(low)} to {_number(high)}"
            self.describe = f'{{"score": number {shown}}}'
            self.fallback_suffix += f"\nThe score must be {shown}."

    def parse(self, content: str) -> tuple[Any, Any]:
        output, _ = super().parse(content)
        return output, float(output["score"])

    def validate(self, value: Any) -> Any:
        score = value.get("score") if isinstance(value, dict) else None
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise FormatFailure(f'the reply is not {{"score": number}}: {_short(value)}')
        if not math.isfinite(score):
            raise FormatFailure(f"the score is not a finite number: {score!r}")
        if self.score_range is not None:
            low, high = self.score_range
            if not low <= score <= high:
                raise FormatFailure(
                    f"the score {_number(score)} is outside the step's range "
                    f"{_number(low)} to {_number(high)}"
                )
        return {"score": score}


class SchemaSpec(JsonSpec):
    """A JSON Schema dict, validated with ``jsonschema`` (the draft the schema declares)."""

    def __init__(self, schema: Mapping[str, Any], where: str, *, kind: str = "") -> None:
        schema = dict(schema)
        cls = validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema_exceptions.SchemaError as exc:
            raise ConfigError(
                f"{where}: output_schema is not a valid JSON Schema: {exc.message}"
            ) from None
        self._validator = cls(schema)
        super().__init__(schema, str(schema.get("title") or "output"), kind=kind)

    def validate(self, value: Any) -> Any:
        error = jsonschema_exceptions.best_match(self._validator.iter_errors(value))
        if error is not None:
            at = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise FormatFailure(f"the reply fails the output schema at {at}: {error.message}")
        return value


class ModelSpec(JsonSpec):
    """A pydantic model class; the step value is the model's JSON dump (defaults filled in).

    The reply is validated in pydantic's strict mode, as JSON: a JSON string or boolean is
    never coerced to a number (``"1"`` or ``true`` for a ``float`` field is a format failure,
    as the prebuilt scorers' scores are), while what only JSON can write (a date or an enum
    value as a string) is still read as the model declares it.
    """

    def __init__(self, model: type[pydantic.BaseModel], *, kind: str = "") -> None:
        self._model = model
        super().__init__(model.model_json_schema(), model.__name__, kind=kind)

    def validate(self, value: Any) -> Any:
        # Back to JSON text: strict mode on Python values would refuse a date or an enum
        # written as a string, which is how JSON writes them.
        text = json.dumps(value, ensure_ascii=False)
        try:
            return self._model.model_validate_json(text, strict=True).model_dump(mode="json")
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"]) or "(root)"
            # The offending value, as the judge wrote it (JSON); a missing field has none.
            shown = first["loc"] and first["type"] != "missing"
            got = f" (got {_short_json(first['input'])})" if shown else ""
            raise FormatFailure(
                f"the reply fails {self._model.__name__} at {at}: {first['msg']}{got} "
                f"({exc.error_count()} error{'s' if exc.error_count() > 1 else ''})"
            ) from None


def schema_spec(output_schema: Any, where: str, *, kind: str = "") -> OutputSpec:
    """The spec of a user schema: a pydantic model class or a JSON Schema dict.

    Args:
        output_schema: The schema.
        where: Names the caller in a [`ConfigError`][evalkit.errors.ConfigError].
        kind: The step kind asking (see `OutputSpec`).

    Raises:
        ConfigError: ``output_schema`` is neither, or not a valid JSON Schema.
    """
    if isinstance(output_schema, type) and issubclass(output_schema, pydantic.BaseModel):
        return ModelSpec(output_schema, kind=kind)
    if isinstance(output_schema, Mapping):
        return SchemaSpec(output_schema, where, kind=kind)
    raise ConfigError(
        f"{where}: output_schema must be a pydantic model class or a JSON Schema dict, "
        f"not {type(output_schema).__name__}"
    )


def _object_root(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Structured output needs an object at the root: wrap others as ``{"value": ...}``."""
    if schema.get("type") == "object":
        return schema, False
    defs: dict[str, Any] = {k: schema.pop(k) for k in ("$defs", "definitions") if k in schema}
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"value": schema},
        "required": ["value"],
        "additionalProperties": False,
        **defs,
    }
    return wrapped, True


def _strict_copy(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A copy that OpenAI's strict mode accepts, or None when the schema does not allow it.

    Strict mode needs every object closed (``additionalProperties: false``) with all its
    properties required. Closing an object that did not forbid extras, and requiring optional
    properties, only narrows what the model may answer, so replies still validate against
    the original schema; an object that allows extra properties on purpose cannot be strict.
    """
    strict = copy.deepcopy(schema)
    return strict if _make_strict(strict) else None


def _make_strict(node: Any) -> bool:
    if not isinstance(node, dict):
        return node is True or node is False
    if _NOT_STRICT & node.keys():
        return False
    node.pop("default", None)
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    if is_object or "properties" in node:
        if node.get("additionalProperties", False) is not False or not node.get("properties"):
            return False
        node["additionalProperties"] = False
        node["required"] = list(node["properties"])
    for key in _SUBSCHEMA_MAPS:
        subschemas: dict[str, Any] = node.get(key, {})
        if not all(_make_strict(sub) for sub in subschemas.values()):
            return False
    for key in _SUBSCHEMA_LISTS:
        if not all(_make_strict(sub) for sub in node.get(key, [])):
            return False
    return _make_strict(node["items"]) if isinstance(node.get("items"), dict) else True


def _format_name(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:64] or "output"


def _number(value: float) -> str:
    """``1e+15``, ``0.5``, ``1``: short, unless that would round the value."""
    text = f"{value:g}"
    return text if float(text) == value else repr(value)


def _short_json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 120 else text[:120] + "..."


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:120] + "..."

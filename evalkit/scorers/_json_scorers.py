"""JSON scorers: ``json_valid`` and ``json_match`` (equality or subset, JSONPath selection)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal

from evalkit._json import to_jsonable
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import ground_truth, param_error
from evalkit.scorers._registry import prebuilt

if TYPE_CHECKING:
    from jsonpath_rfc9535 import JSONPathQuery

_FENCE = re.compile(r"\s*```[A-Za-z]*[ \t]*\n(.*?)\n?[ \t]*```\s*", re.DOTALL)


class _NotJson(ValueError):
    """The text is not one strict JSON value; the message says where and why."""


def _reject_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not valid JSON")


def parse_json(text: str, *, allow_code_fence: bool) -> Any:
    """The JSON value of ``text`` (strict: no NaN/Infinity), or `_NotJson`."""
    if allow_code_fence and (fenced := _FENCE.fullmatch(text)):
        text = fenced.group(1)
    if not text.strip():
        raise _NotJson("the output is empty")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _NotJson(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None


def output_json(output: Any, *, allow_code_fence: bool) -> Any:
    """The output as a JSON value: text is parsed, bytes decoded and parsed, other values kept.

    ``None`` is no output (`_NotJson`); dicts, lists, numbers and booleans are already
    JSON values (pydantic models and numpy values are converted).
    """
    if output is None:
        raise _NotJson("the output is empty (None)")
    if isinstance(output, bytes):
        output = output.decode("utf-8", errors="replace")
    if isinstance(output, str):
        return parse_json(output, allow_code_fence=allow_code_fence)
    return to_jsonable(output)


@prebuilt("json_valid", title="JSON Valid", inputs=("output",), version=1)
def json_valid(scorer: Scorer, *, allow_code_fence: bool = False) -> Scorer:
    """1 when the output is valid JSON, else 0.

    Range 0 or 1, higher is better. Needs only the output. Text must be exactly one strict JSON
    value (RFC 8259; any value, including a bare number or string; ``NaN`` and ``Infinity``
    are rejected). An output that is already a dict, list, number or boolean is valid; an empty
    or ``None`` output is not. The reason quotes the parser's error and its position.

    Args:
        allow_code_fence: Accept JSON wrapped in one Markdown code fence (```` ```json ````).
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        try:
            value = output_json(run.output, allow_code_fence=allow_code_fence)
        except _NotJson as exc:
            return {"valid": False, "error": str(exc)}
        return {"valid": True, "type": type(value).__name__}

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        if pre["valid"]:
            return f"The output is valid JSON (a {_json_type(pre['type'])})."
        return f"The output is not valid JSON: {pre['error']}."

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: float(results.preprocess_step_result["valid"]))
        .generate_reason(reason)
    )


def _json_type(python_type: str) -> str:
    names = {"dict": "object", "list": "array", "str": "string", "int": "number"}
    return {"float": "number", "bool": "boolean", "NoneType": "null"}.get(
        python_type, names.get(python_type, python_type)
    )


def _compile(param: str, path: str | None) -> JSONPathQuery | None:
    if path is None:
        return None
    import jsonpath_rfc9535 as jsonpath  # only json_match with a path needs it

    try:
        return jsonpath.compile(path)
    except jsonpath.JSONPathError as exc:
        raise param_error("json_match", param, f"invalid JSONPath {path!r}: {exc}") from None


def _select(query: JSONPathQuery | None, value: Any) -> tuple[bool, Any]:
    # A singular query (names and indexes only) selects one value or nothing; any other query
    # selects a list of values, possibly empty.
    if query is None:
        return True, value
    nodes = query.find(value)
    if query.singular_query():
        return (True, nodes[0].value) if nodes else (False, None)
    return True, nodes.values()


def json_difference(expected: Any, actual: Any, *, subset: bool, path: str = "$") -> str | None:
    """Where ``actual`` first departs from ``expected`` (``"$.a[0]: expected 1, got 2"``).

    JSON semantics: ``true`` is not ``1``, ``1`` equals ``1.0``, object key order does not
    matter, array order does. With ``subset``, objects in ``actual`` may have extra keys at any
    depth; arrays must still have the same length.
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {_describe(actual)}"
        for key, value in expected.items():
            where = f"{path}.{key}" if re.fullmatch(r"[A-Za-z_]\w*", key) else f"{path}[{key!r}]"
            if key not in actual:
                return f"{where}: missing"
            if (
                found := json_difference(value, actual[key], subset=subset, path=where)
            ) is not None:
                return found
        if not subset and (extra := sorted(set(actual) - set(expected))):
            return f"{path}: unexpected key {extra[0]!r}"
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{path}: expected an array, got {_describe(actual)}"
        if len(actual) != len(expected):
            return f"{path}: expected {len(expected)} items, got {len(actual)}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            if (
                found := json_difference(want, got, subset=subset, path=f"{path}[{index}]")
            ) is not None:
                return found
        return None
    same_kind = isinstance(expected, bool) == isinstance(actual, bool)
    if not same_kind or isinstance(actual, (dict, list)) or expected != actual:
        return f"{path}: expected {_describe(expected)}, got {_describe(actual)}"
    return None


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


@prebuilt("json_match", title="JSON Match", inputs=("output", "ground_truth"), version=1)
def json_match(
    scorer: Scorer,
    *,
    mode: Literal["equal", "subset"] = "equal",
    path: str | None = None,
    ground_truth_path: str | None = None,
    allow_code_fence: bool = False,
) -> Scorer:
    """1 when the output's JSON equals (or contains) the ground truth's JSON, else 0.

    Range 0 or 1, higher is better. The output is parsed as for ``json_valid`` (invalid JSON
    scores 0). The ground truth is a JSON value: text is parsed when it is valid JSON, else
    taken as a plain string (so ``"Paris"`` expects the string ``"Paris"``). Comparison
    follows JSON: ``true`` ≠ ``1``, ``1`` = ``1.0``, key order is ignored, array order is not.
    The reason names the first difference by its path. A missing ground truth, or a
    ``ground_truth_path`` that selects nothing in it, fails the run.

    Args:
        mode: ``"equal"``: the same JSON value; ``"subset"``: every key of the expected
            objects is present with a matching value, extra keys allowed at any depth
            (arrays still match position by position).
        path: An RFC 9535 JSONPath (``"$.answer.city"``) selecting what to compare in the
            output; a path with wildcards or filters selects the list of matching values.
            The output scores 0 when a single-value path selects nothing.
        ground_truth_path: The same for the ground truth; by default the whole ground truth
            is the expected value.
        allow_code_fence: Accept output JSON wrapped in one Markdown code fence.
    """
    output_query = _compile("path", path)
    truth_query = _compile("ground_truth_path", ground_truth_path)
    subset = mode == "subset"

    def expected_value(run: ScorerRun) -> Any:
        value = ground_truth(run, "json_match")
        if isinstance(value, (str, bytes)):
            text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
            try:
                value = parse_json(text, allow_code_fence=False)
            except _NotJson:
                value = text
        else:
            value = to_jsonable(value)
        found, selected = _select(truth_query, value)
        if not found:
            raise ScorerInputError(
                "json_match",
                "ground_truth",
                f"ground_truth_path {ground_truth_path!r} selects nothing",
            )
        return selected

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        expected = expected_value(run)
        try:
            document = output_json(run.output, allow_code_fence=allow_code_fence)
        except _NotJson as exc:
            return {"expected": expected, "difference": f"the output is not valid JSON: {exc}"}
        found, actual = _select(output_query, document)
        if not found:
            return {
                "expected": expected,
                "difference": f"path {path!r} selects nothing in the output",
            }
        difference = json_difference(expected, actual, subset=subset)
        return {"expected": expected, "actual": actual, "difference": difference}

    def reason(score: float, results: StepResults) -> str:
        difference = results.preprocess_step_result["difference"]
        where = f" at {path}" if path else ""
        if difference is None:
            relation = "contains" if subset else "equals"
            return f"The output's JSON{where} {relation} the expected value."
        return f"The output's JSON{where} does not match: {difference}."

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: float(results.preprocess_step_result["difference"] is None))
        .generate_reason(reason)
    )

"""Malformed experiment files: one clear error naming the file, line and key — never a crash.

A corpus of hand-written bad files, then hypothesis properties: random TOML-ish text, random
bytes, and documents of the right shape holding random values all end either loaded or as an
``ExperimentFileError`` (and, once loaded, building the scorers and target raises nothing but
``EvalkitError``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalkit import EvalkitError, ExperimentFileError, load_experiment_file
from evalkit.cli._build import build_directions, build_scorers, build_target, build_thresholds

HEAD = '[experiment]\nname = "x"\ndataset = "data/qa.parquet"\n'
SCORER = '[[scorers]]\nuse = "exact_match"\n'


def write(folder: Path, content: str | bytes, name: str = "experiment.toml") -> Path:
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "qa.parquet").touch()
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def load_error(path: Path) -> ExperimentFileError:
    with pytest.raises(ExperimentFileError) as info:
        load_experiment_file(path)
    assert "Traceback" not in str(info.value)
    return info.value


CORPUS: list[tuple[str, str | bytes, int | None, str | None, str]] = [
    # name, content, line, key, problem
    ("empty file", "", None, "experiment", "required table [experiment] is missing"),
    ("only comments", "# nightly\n", None, "experiment", "is missing"),
    ("byte-order mark only", b"\xef\xbb\xbf", None, "experiment", "is missing"),
    ("no scorers", HEAD, None, "scorers", "at least one [[scorers]] table"),
    ("no experiment", SCORER, None, "experiment", "is missing"),
    ("scorers as a table", HEAD + '[scorers]\nuse = "exact_match"\n', 4, "scorers",
     "write each scorer as a [[scorers]] table"),
    ("experiment as an array", '[[experiment]]\nname = "x"\n' + SCORER, 1, "experiment",
     "expected a table, got an array"),
    ("experiment as a string", 'experiment = "x"\n' + SCORER, 1, "experiment",
     'expected a table, got "x"'),
    ("name as a number", '[experiment]\nname = 3\ndataset = "data/qa.parquet"\n' + SCORER, 2,
     "experiment.name", "expected a string, got 3"),
    ("concurrency as text", HEAD + 'concurrency = "8"\n' + SCORER, 4, "experiment.concurrency",
     'expected an integer, got "8"'),
    ("concurrency as a float", HEAD + "concurrency = 8.0\n" + SCORER, 4,
     "experiment.concurrency", "expected an integer"),
    ("concurrency zero", HEAD + "concurrency = 0\n" + SCORER, 4, "experiment.concurrency",
     "greater than or equal to 1"),
    ("slices as a string", HEAD + 'slices = "category"\n' + SCORER, 4, "experiment.slices",
     "expected a valid list"),
    ("slices with an empty key", HEAD + 'slices = [""]\n' + SCORER, 4, "experiment.slices[0]",
     "expected a non-empty string"),
    ("slices with a number", HEAD + "slices = [3]\n" + SCORER, 4, "experiment.slices[0]",
     "expected a string, got 3"),
    ("slices with a repeated key", HEAD + 'slices = ["a", "a"]\n' + SCORER, 4,
     "experiment.slices", "a key appears twice"),
    ("dataset as a date", '[experiment]\nname = "x"\ndataset = 1979-05-27\n' + SCORER, 3,
     "experiment.dataset", "expected a non-empty string (a path)"),
    ("dataset missing", '[experiment]\nname = "x"\ndataset = "nope.parquet"\n' + SCORER, 3,
     "experiment.dataset", "dataset not found"),
    ("dataset with a NUL", '[experiment]\nname = "x"\ndataset = "qa\\u0000.parquet"\n' + SCORER,
     3, "experiment.dataset", "null byte"),
    ("store empty", HEAD + 'store = ""\n' + SCORER, 4, "experiment.store",
     "expected a non-empty string"),
    ("unknown table", HEAD + SCORER + "[extras]\na = 1\n", 6, "extras",
     "unknown table; expected one of: experiment, target, judge, scorers, regression"),
    ("misspelt key", HEAD + "concurency = 3\n" + SCORER, 4, "experiment.concurency",
     "did you mean 'concurrency'?"),
    ("non-ASCII key", HEAD + '"ключ" = 1\n' + SCORER, 4, 'experiment."ключ"', "unknown key"),
    ("CRLF line ends", (HEAD + "bad = 1\n" + SCORER).replace("\n", "\r\n"), 4,
     "experiment.bad", "unknown key"),
    ("threshold NaN", HEAD + SCORER + "threshold = nan\n", 6, "scorers[0].threshold",
     "expected a finite number, got nan"),
    ("threshold inf", HEAD + SCORER + "threshold = -inf\n", 6, "scorers[0].threshold",
     "finite number"),
    ("threshold as text", HEAD + SCORER + 'threshold = "high"\n', 6, "scorers[0].threshold",
     "expected a number or a table such as { min = 0.8 }"),
    ("params not a table", HEAD + SCORER + "params = 3\n", 6, "scorers[0].params",
     "expected a table, got 3"),
    ("step_timeout zero", HEAD + SCORER + "step_timeout = 0\n", 6, "scorers[0].step_timeout",
     "greater than 0"),
    ("step_timeout inf", HEAD + SCORER + "step_timeout = inf\n", 6, "scorers[0].step_timeout",
     "finite number"),
    ("step_timeout as text", HEAD + SCORER + 'step_timeout = "5s"\n', 6,
     "scorers[0].step_timeout", 'expected a number, got "5s"'),
    ("use as a number", HEAD + "[[scorers]]\nuse = 1\n", 5, "scorers[0].use",
     "expected a string, got 1"),
    ("use not a reference", HEAD + '[[scorers]]\nuse = "a:b:c"\n', 5, "scorers[0].use",
     "'module:attribute'"),
    ("judge temperature NaN", HEAD + '[judge]\nmodel = "m"\ntemperature = nan\n' + SCORER, 6,
     "judge.temperature", "finite number"),
    ("judge timeout negative", HEAD + '[judge]\nmodel = "m"\ntimeout = -1\n' + SCORER, 6,
     "judge.timeout", "greater than 0"),
    ("judge mode unknown", HEAD + '[judge]\nmodel = "m"\nmode = "fast"\n' + SCORER, 6,
     "judge.mode", "online"),
    ("target type unknown", HEAD + '[target]\ntype = "bash"\n' + SCORER, 5, "target.type",
     "expected 'openai' or 'python'"),
    ("target without a type", HEAD + '[target]\nmodel = "m"\n' + SCORER, 4, "target.type",
     "required key is missing"),
    ("target prompt braces", HEAD + '[target]\ntype = "openai"\nmodel = "m"\nprompt = "{input"\n'
     + SCORER, 7, "target.prompt", "not a valid template"),
    ("regression out of range", HEAD + SCORER + "[regression]\nconfidence = 1.5\n", 7,
     "regression.confidence", "less than 1"),
    ("TOML: NUL character", '[experiment]\nname = "x\x00"\n', 2, None, "invalid TOML"),
    ("TOML: duplicate key", '[experiment]\nname = "x"\nname = "y"\n', 3, None,
     "Cannot overwrite a value"),
    ("TOML: surrogate escape", '[experiment]\nname = "\\ud800"\n', 2, None, "invalid TOML"),
    ("TOML: unterminated string", '[experiment]\nname = "x\n' + SCORER, 2, None, "invalid TOML"),
    ("TOML: missing value", "[experiment]\nname =\n", 2, None, "invalid TOML"),
    ("TOML: nested 5,000 deep", HEAD + SCORER + "params = { a = " + "[" * 5000 + "]" * 5000
     + " }\n", 6, None, "nested too deeply"),
    ("nested 150 deep", HEAD + SCORER + "params = { a = " + "[" * 150 + "]" * 150 + " }\n", 6,
     "scorers[0].params.a", "nested too deeply"),
    ("Latin-1 text", b'[experiment]\nname = "caf\xe9"\n', 2, None, "not UTF-8"),
    ("UTF-16 text", '[experiment]\nname = "x"\n'.encode("utf-16"), 1, None, "not UTF-8"),
    ("binary junk", bytes(range(256)), 2, None, "not UTF-8"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "line", "key", "problem"),
    [case[1:] for case in CORPUS],
    ids=[case[0] for case in CORPUS],
)
def test_a_bad_file_names_the_line_and_key(
    tmp_path: Path, content: str | bytes, line: int | None, key: str | None, problem: str
) -> None:
    path = write(tmp_path, content)
    error = load_error(path)
    first = error.issues[0]
    assert (first.file, first.line, first.key) == (str(path), line, key)
    assert problem in first.problem
    expected_start = f"{path}:{line}: " if line else f"{path}: "
    assert str(error).startswith(expected_start)


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p / "data", "cannot read the file"),
        (lambda p: p / "missing.toml", "cannot read the file"),
    ],
    ids=["a folder", "a missing file"],
)
def test_a_path_that_is_no_readable_file_is_named(tmp_path: Path, make: Any, problem: str) -> None:
    write(tmp_path, HEAD + SCORER)
    path = make(tmp_path)
    error = load_error(path)
    assert error.file == str(path)
    assert problem in str(error)


def test_every_problem_of_a_file_is_listed_in_file_order(tmp_path: Path) -> None:
    text = (
        '[experiment]\nname = 3\ndataset = "data/qa.parquet"\nconcurency = 2\n'
        "[[scorers]]\nuse = 1\nthreshold = nan\n"
    )
    error = load_error(write(tmp_path, text))
    assert [(i.line, i.key) for i in error.issues] == [
        (2, "experiment.name"),
        (4, "experiment.concurency"),
        (6, "scorers[0].use"),
        (7, "scorers[0].threshold"),
    ]


def test_a_very_long_value_loads(tmp_path: Path) -> None:
    name = "x" * 1_000_000
    loaded = load_experiment_file(write(tmp_path, HEAD.replace('"x"', f'"{name}"') + SCORER))
    assert loaded.config.experiment.name == name


def test_an_api_key_pasted_as_api_key_env_is_refused_without_echo(tmp_path: Path) -> None:
    key = "sk-proj-Q2x9Vb7Lk3Jt8Rw1Zp6Nc4Ym5"
    error = load_error(write(tmp_path, HEAD + f'[judge]\nmodel = "m"\napi_key_env = "{key}"\n'
                            + SCORER))  # fmt: skip
    assert (error.line, error.key) == (6, "judge.api_key_env")
    assert key not in str(error)
    assert key not in json.dumps(error.to_dict())


# -- property tests -----------------------------------------------------------------------------

PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def loads_or_refuses(path: Path) -> Any:
    """Load ``path``; an ExperimentFileError is a fine answer, anything else fails the test."""
    try:
        return load_experiment_file(path)
    except ExperimentFileError as exc:
        error = exc
    assert error.file == str(path)
    assert all(issue.line is None or issue.line >= 1 for issue in error.issues)
    return None


FRAGMENTS = st.sampled_from(
    [
        "[experiment]", "[[scorers]]", "[judge]", "[target]", "[regression]", "[scorers.judge]",
        'name = "x"', 'dataset = "data/qa.parquet"', 'use = "exact_match"', 'use = "toxicity"',
        "threshold = 0.5", "threshold = { max = 0.1 }", 'type = "openai"', 'model = "m"',
        "concurrency = 4", "params = { ignore_case = true }", "=", '"', "'", '"""', "[", "]",
        "{", "}", ",", ".", "#", "\n", "\r\n", "\t", " ", "nan", "inf", "-0", "1979-05-27",
        "07:32:00", "0x1F", "1e400", "true", "key", "\\u0000", "\\", "ключ", "\x00", "\ufeff",
    ]
)  # fmt: skip


@PROPERTY_SETTINGS
@given(parts=st.lists(FRAGMENTS | st.text(max_size=6), max_size=40))
def test_random_toml_ish_text_loads_or_gives_an_experiment_file_error(
    tmp_path: Path, parts: list[str]
) -> None:
    loads_or_refuses(write(tmp_path, "\n".join(parts) if len(parts) % 2 else "".join(parts)))


@PROPERTY_SETTINGS
@given(data=st.binary(max_size=512))
def test_random_bytes_give_an_experiment_file_error(tmp_path: Path, data: bytes) -> None:
    assert loads_or_refuses(write(tmp_path, data)) is None


# Random TOML values: everything TOML can hold (no null), nested a little.
toml_scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(max_size=12)
    | st.datetimes(timezones=st.none() | st.just(dt.UTC))
    | st.dates()
    | st.times()
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def table(keys: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A table holding some of ``keys``."""
    return st.fixed_dictionaries({}, optional=keys)


JUDGE_KEYS = {
    "model": st.sampled_from(["gpt-4o-mini", "m"]),
    "instructions": st.text(max_size=20),
    "base_url": st.sampled_from(["http://127.0.0.1:9/v1", "https://u:p@h/v1?api-key=k"]),
    "api_key_env": st.sampled_from(["OPENAI_API_KEY", "JUDGE_KEY"]),
    "max_concurrency": st.integers(1, 100),
    "temperature": st.floats(0, 2),
    "max_tokens": st.integers(1, 5000),
    "timeout": st.floats(0.1, 100),
    "max_retries": st.integers(0, 5),
    "rpm": st.floats(1, 1e6),
    "cache": st.booleans(),
    "mode": st.sampled_from(["online", "batch"]),
}
SCORER_KEYS = {
    "id": st.text(min_size=1, max_size=8),
    "threshold": st.floats(0, 1)
    | st.fixed_dictionaries({}, optional={"min": st.floats(0, 1), "max": st.floats(0, 1)}),
    "params": st.dictionaries(
        st.sampled_from(["ignore_case", "scale", "pattern", "tolerance", "x"]),
        toml_values,
        max_size=2,
    ),
    "judge": table(JUDGE_KEYS),
    "step_timeout": st.floats(-1, 100),
}
# Only prebuilt names and references to a module the test writes: a random module:attribute
# could import (and call) anything on the machine.
USES = st.sampled_from(
    ["exact_match", "contains", "regex_match", "numeric_match", "toxicity", "rubric",
     "answer_relevancy", "no_such_scorer", "evalkit_fuzz_scorers:factory",
     "evalkit_fuzz_scorers:missing", "evalkit_fuzz_scorers:not_callable", "no_such_module:x"]
)  # fmt: skip


@st.composite
def plausible_documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "experiment": {
            "name": draw(st.text(min_size=1, max_size=10)),
            "dataset": draw(st.sampled_from(["data/qa.parquet", "data"])),
            **draw(
                table(
                    {
                        "description": st.text(max_size=10),
                        "store": st.sampled_from(["s.duckdb", "sub/s.duckdb"]),
                        "concurrency": st.integers(1, 64),
                    }
                )
            ),
        },
        "scorers": draw(
            st.lists(
                st.fixed_dictionaries({"use": USES}, optional=SCORER_KEYS), min_size=1, max_size=3
            )
        ),
    }
    if draw(st.booleans()):
        doc["judge"] = draw(table(JUDGE_KEYS))
    if draw(st.booleans()):
        openai = st.fixed_dictionaries(
            {"type": st.just("openai"), "model": st.just("m")},
            optional={
                "prompt": st.sampled_from(["Q: {input}", "{input}!"]),
                **{k: v for k, v in JUDGE_KEYS.items() if k not in ("model", "cache", "mode")},
            },
        )
        python = st.fixed_dictionaries(
            {
                "type": st.just("python"),
                "callable": st.sampled_from(
                    ["evalkit_fuzz_scorers:answer", "evalkit_fuzz_scorers:nope"]
                ),
            }
        )
        doc["target"] = draw(openai | python)
    if draw(st.booleans()):
        doc["regression"] = draw(
            table(
                {
                    "baseline": st.sampled_from(["latest", "abc"]),
                    "max_drop": st.floats(0, 1),
                    "confidence": st.floats(0.5, 0.99),
                    "resamples": st.integers(1, 100),
                }
            )
        )
    return doc


def _slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a document, nested ones included."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        found.append((value, key))
        if isinstance(item, (dict, list)):
            found.extend(_slots(item))
    return found


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A plausible document with up to three random changes: a value replaced by any TOML
    value, a key removed, or an unknown key added."""
    doc = draw(plausible_documents())
    for _ in range(draw(st.integers(0, 3))):
        slots = _slots(doc)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            container[key] = draw(toml_values)
        elif action == "remove":
            del container[key]
        elif isinstance(container, dict):
            container[draw(st.text(min_size=1, max_size=6))] = draw(toml_values)
    return doc


def toml_text(doc: dict[str, Any]) -> str:
    """``doc`` as TOML: top-level tables as headers, ``scorers`` as ``[[scorers]]``."""
    lines = []
    for name, value in doc.items():
        if (
            name == "scorers"
            and isinstance(value, list)
            and all(isinstance(e, dict) for e in value)
        ):
            for entry in value:
                lines.append("[[scorers]]")
                lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in entry.items())
        elif isinstance(value, dict):
            lines.append(f"[{toml_key(name)}]")
            lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        else:
            lines.insert(0, f"{toml_key(name)} = {toml_value(value)}")  # before any table
    return "\n".join(lines) + "\n"


def toml_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (int,)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


MY_SCORERS = """
from evalkit import create_scorer

not_callable = 42

def factory(scale=1.0, **params):
    return create_scorer("custom", "made by a factory").generate_score(lambda: float(scale))

def answer(input, request_context=None):
    return str(input)
"""


@PROPERTY_SETTINGS
@given(doc=documents())
def test_documents_with_random_values_load_and_build_or_raise_evalkit_errors(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    (tmp_path / "evalkit_fuzz_scorers.py").write_text(MY_SCORERS)
    path = write(tmp_path, toml_text(doc))
    loaded = loads_or_refuses(path)
    event("loaded" if loaded is not None else "refused when loading")
    if loaded is None:
        return
    try:
        scorers = build_scorers(loaded)
        build_thresholds(loaded, scorers)
        build_directions(loaded, scorers)
        build_target(loaded)
    except EvalkitError:
        event("refused when building")
    else:
        event("built")

"""Malformed experiment files: one clear error naming the file, line and key — never a crash.

A corpus of hand-written bad files, then hypothesis properties: random TOML-ish text, random
bytes, and documents of the right shape holding random values all end either loaded or as an
``ExperimentFileError`` (and, once loaded, building the scorers and target raises nothing but
``EvalkitError``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalkit import EvalkitError, ExperimentFileError, load_experiment_file
from evalkit.experiment_file._build import (
    FileBuilder,
    build_directions,
    build_scorers,
    build_target,
    build_thresholds,
)

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
    ("concurrency above the ceiling", HEAD + "concurrency = 10001\n" + SCORER, 4,
     "experiment.concurrency", "less than or equal to 10000"),
    ("concurrency past 64 bits", HEAD + "concurrency = 99999999999999999999\n" + SCORER, 4,
     "experiment.concurrency", "less than or equal to 10000"),
    ("resamples above the ceiling", HEAD + SCORER + "[regression]\nresamples = 1000000000000\n",
     7, "regression.resamples", "less than or equal to 1000000"),
    ("judge max_concurrency above the ceiling",
     HEAD + '[judge]\nmodel = "m"\nmax_concurrency = 100000000000000000000\n' + SCORER, 6,
     "judge.max_concurrency", "less than or equal to 10000"),
    ("judge max_concurrency as a huge float",
     HEAD + '[judge]\nmodel = "m"\nmax_concurrency = 1e20\n' + SCORER, 6,
     "judge.max_concurrency", "expected an integer"),
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
     "expected a number of seconds above 0 and at most 86,400, got 0"),
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
     "judge.timeout", "expected a number of seconds above 0 and at most 86,400, got -1"),
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
    ("blank scorer id", HEAD + "\n" + SCORER + 'id = "   "\n', 7, "scorers[0].id",
     "expected a non-blank id, got '   '"),
    # Hostile shapes (issue 15): refused by the scan before the parser builds any key path.
    ("header of 32,000 segments", HEAD + SCORER + "[" + ".".join(["a"] * 32_000) + "]\n", 6,
     None, "nested too deeply"),
    ("dotted key of 32,000 segments", HEAD + SCORER + ".".join(["a"] * 32_000) + " = 1\n", 6,
     None, "nested too deeply"),
    ("inline tables 5,000 deep", HEAD + SCORER + "params = " + "{ a = " * 5000 + "1"
     + " }" * 5000 + "\n", 6, None, "nested too deeply"),
    ("header of 150 segments", HEAD + SCORER + "[" + ".".join(["a"] * 150) + "]\n", 6,
     "a.a.a.a", "nested too deeply"),
    ("inline tables 150 deep", HEAD + SCORER + "params = " + "{ a = " * 150 + "1" + " }" * 150
     + "\n", 6, "scorers[0].params.a", "nested too deeply"),
    ("brackets in strings do not nest", HEAD + 'description = "' + "[{." * 5000 + '"\n'
     + "x = '''" + "[" * 300 + "'''\n" + SCORER, 5, "experiment.x", "unknown key"),
    ("columns unknown role", HEAD + '[experiment.columns]\nquestion = "q"\n' + SCORER, 5,
     "experiment.columns.question", "unknown key"),
    ("columns misspelt role", HEAD + '[experiment.columns]\ngroundtruth = "a"\n' + SCORER, 5,
     "experiment.columns.groundtruth", "did you mean 'ground_truth'?"),
    ("columns both spellings", HEAD + '[experiment.columns]\ngroundTruth = "a"\n'
     'ground_truth = "b"\n' + SCORER, 6, "experiment.columns.ground_truth", "keep one"),
    ("columns input as a number", HEAD + "[experiment.columns]\ninput = 3\n" + SCORER, 5,
     "experiment.columns.input", "expected a string, got 3"),
    ("columns metadata of numbers", HEAD + '[experiment.columns]\nmetadata = ["a", 2]\n'
     + SCORER, 5, "experiment.columns.metadata[1]", "expected a column name, got 2"),
    ("columns metadata empty", HEAD + "[experiment.columns]\nmetadata = []\n" + SCORER, 5,
     "experiment.columns.metadata", "expected column names"),
    ("columns metadata repeated", HEAD + '[experiment.columns]\nmetadata = ["a", "a"]\n'
     + SCORER, 5, "experiment.columns.metadata", "listed twice"),
    ("columns as a string", HEAD + 'columns = "question"\n' + SCORER, 4, "experiment.columns",
     'expected a table, got "question"'),
    ("format unknown", HEAD + 'format = "xlsx"\n' + SCORER, 4, "experiment.format",
     "'parquet', 'csv', 'tsv', 'jsonl', 'json', 'hf' or 'duckdb'"),
    ("format for a query", '[experiment]\nname = "x"\nquery = "select 1"\nformat = "csv"\n'
     + SCORER, 4, "experiment.format", "format applies to a dataset file"),
    ("duckdb without a query", HEAD + 'format = "duckdb"\n' + SCORER, 1, "experiment.query",
     "needs a query"),
    ("query empty", '[experiment]\nname = "x"\nquery = ""\n' + SCORER, 3, "experiment.query",
     "expected a non-empty string"),
    ("query against a folder", '[experiment]\nname = "x"\ndataset = "data"\n'
     'query = "select 1"\n' + SCORER, 3, "experiment.dataset", "the .duckdb file it reads"),
    ("neither dataset nor query", '[experiment]\nname = "x"\n' + SCORER, 1,
     "experiment.dataset", "required key is missing (or give a query)"),
    ("glob matching nothing", '[experiment]\nname = "x"\ndataset = "data/*.csv"\n' + SCORER,
     3, "experiment.dataset", "the pattern matches no files"),
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


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        (HEAD + SCORER + "[scorers.params]\n" + "".join(f"k{i} = 1\n" for i in range(6000)),
         4999, "more than 20,000 tokens"),
        (HEAD + SCORER + "".join(f"[t{i}]\n" for i in range(7000)), 4999, "more than 20,000"),
        (HEAD + SCORER + "params = { a = [" + "1, " * 20_000 + "] }\n", 6, "more than 20,000"),
        (HEAD + 'description = "' + "\\n" * 20_000 + '"\n' + SCORER, 4, "more than 20,000"),
        (HEAD + "#" * (1 << 20) + "\n" + SCORER, None, "larger than 1,048,576 bytes"),
    ],
    ids=["many keys", "many tables", "a long array", "many escapes", "over 1 MiB"],
)  # fmt: skip
def test_a_file_too_big_to_parse_cheaply_is_refused(
    tmp_path: Path, content: str, line: int | None, problem: str
) -> None:
    error = load_error(write(tmp_path, content))
    assert (error.line, error.key, len(error.issues)) == (line, None, 1)
    assert problem in error.problem


def test_a_deep_header_is_refused_before_anything_quadratic_is_built(tmp_path: Path) -> None:
    # 10,000 segments: the parser and the line locator used to build a key path per prefix
    # (hundreds of MB here, 4.2 GB at 32,000) before the depth check after parsing refused it.
    path = write(tmp_path, HEAD + SCORER + "[" + ".".join(["a"] * 10_000) + "]\n")
    tracemalloc.start()
    try:
        error = load_error(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "nested too deeply" in error.problem
    assert peak < 5_000_000


def test_past_a_hundred_problems_the_rest_are_counted(tmp_path: Path) -> None:
    text = HEAD + SCORER + "".join(f"[t{i}]\n" for i in range(250))
    error = load_error(write(tmp_path, text))
    assert len(error.issues) == 101
    assert [i.key for i in error.issues[:2]] == ["t0", "t1"]
    assert error.issues[-1].problem == "and 150 more problems like these"


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
    # The CLI's way: the build checks run on the valid parts even of a file that is not.
    with contextlib.suppress(EvalkitError):
        load_experiment_file(path, check=FileBuilder())
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


def build_error(path: Path) -> ExperimentFileError:
    """The error of loading ``path`` with the CLI's checks (scorer names, imports, thresholds)."""
    with pytest.raises(ExperimentFileError) as info:
        load_experiment_file(path, check=FileBuilder())
    assert "Traceback" not in str(info.value)
    return info.value


def test_schema_and_build_problems_are_listed_together_in_file_order(tmp_path: Path) -> None:
    # Issue 15 item 14f: a wrong [judge], an unknown scorer, an import that fails and a bare
    # threshold on a lower-is-better scorer, in one error.
    text = (
        HEAD
        + "[judge]\nmodel = 4\n"
        + '[[scorers]]\nuse = "exact_mach"\n'
        + '[[scorers]]\nuse = "evalkit_no_such_module:tone"\n'
        + '[[scorers]]\nuse = "toxicity"\nthreshold = 0.2\n'
        + '[[scorers]]\nuse = "exact_match"\nthreshold = "high"\n'
    )
    error = build_error(write(tmp_path, text))
    assert [(i.line, i.key) for i in error.issues] == [
        (5, "judge.model"),
        (7, "scorers[0].use"),
        (9, "scorers[1].use"),
        (12, "scorers[2].threshold"),
        (15, "scorers[3].threshold"),
    ]
    assert (error.line, error.key) == (5, "judge.model")
    assert "unknown prebuilt scorer" in error.issues[1].problem
    assert "cannot import" in error.issues[2].problem
    assert "max = 0.2" in error.issues[3].problem


def test_a_repeated_id_the_schema_reports_is_not_reported_twice(tmp_path: Path) -> None:
    text = HEAD + "concurrency = 0\n" + SCORER + 'id = "a"\n' + SCORER + 'id = "a"\n'
    error = build_error(write(tmp_path, text))
    assert [i.key for i in error.issues] == ["experiment.concurrency", "scorers[1].id"]


def test_build_problems_count_towards_the_hundred_listed(tmp_path: Path) -> None:
    text = HEAD + "".join(f'[[scorers]]\nuse = "nope_{i}"\n' for i in range(60))
    text += "".join(f"[t{i}]\n" for i in range(60))
    error = build_error(write(tmp_path, text))
    assert len(error.issues) == 101
    assert error.issues[0].key == "scorers[0].use"
    assert error.issues[-1].problem == "and 20 more problems like these"


def test_a_file_whose_checks_pass_loads(tmp_path: Path) -> None:
    built = FileBuilder()
    loaded = load_experiment_file(write(tmp_path, HEAD + SCORER + "threshold = 0.5\n"), check=built)
    assert loaded.config.experiment.name == "x"
    assert [s.id for s in built.scorers] == ["exact_match"]
    assert list(built.thresholds) == ["exact_match"]

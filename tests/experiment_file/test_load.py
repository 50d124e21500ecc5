from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import pytest

from evalkit import ConfigError, ExperimentFileError, Judge, load_experiment_file
from evalkit.experiment_file import ExperimentFile, OpenAITargetSection, PythonTargetSection
from evalkit.experiment_file._load import _syntax_error

GOOD = """\
[experiment]
name = "nightly-qa"
description = "Nightly QA regression check"
dataset = "data/qa.parquet"
store = "../stores/evalkit.duckdb"
concurrency = 16

[target]
type = "openai"
model = "gpt-4o-mini"
system = "You answer questions about our product."
prompt = "Question: {input}"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "MY_KEY"
max_concurrency = 4
temperature = 0
max_tokens = 256

[judge]
model = "gpt-4o-mini"
api_key_env = "JUDGE_KEY"
max_concurrency = 32
temperature = 0.0
instructions = "You are a strict grader."

[[scorers]]
use = "exact_match"
id = "exact"
threshold = 0.8
params = { ignore_case = true }

[[scorers]]
use = "toxicity"
threshold = { max = 0.1 }
judge = { model = "gpt-4o", temperature = 0.2 }

[[scorers]]
use = "my_scorers:tone"
threshold = { min = 0.2, max = 0.9 }

[regression]
baseline = "latest"
max_drop = 0.02
confidence = 0.9
"""


def write(folder: Path, text: str, name: str = "experiment.toml") -> Path:
    """Write an experiment file next to an (empty) dataset file it can point at."""
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "qa.parquet").touch()
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(path: Path) -> ExperimentFileError:
    with pytest.raises(ExperimentFileError) as caught:
        load_experiment_file(path)
    return caught.value


MINIMAL = """\
[experiment]
name = "quick"
dataset = "data/qa.parquet"

[[scorers]]
use = "exact_match"
"""


def test_a_good_file_loads_with_every_value(tmp_path: Path) -> None:
    loaded = load_experiment_file(write(tmp_path, GOOD))
    config = loaded.config
    assert loaded.path == tmp_path / "experiment.toml"
    assert config.experiment.name == "nightly-qa"
    assert config.experiment.concurrency == 16
    assert config.experiment.dataset == tmp_path / "data" / "qa.parquet"
    assert config.experiment.store == (tmp_path.parent / "stores" / "evalkit.duckdb").resolve()
    assert isinstance(config.target, OpenAITargetSection)
    assert (config.target.model, config.target.temperature) == ("gpt-4o-mini", 0.0)
    assert config.target.prompt == "Question: {input}"
    assert config.judge is not None
    assert config.judge.instructions == "You are a strict grader."
    exact, toxicity, tone = config.scorers
    assert (exact.id, exact.params, exact.direction) == ("exact", {"ignore_case": True}, "higher")
    assert exact.threshold is not None
    assert exact.threshold.for_run() == 0.8
    assert toxicity.direction == "lower"
    assert toxicity.threshold is not None
    assert toxicity.threshold.for_run() == {"max": 0.1}
    assert tone.threshold is not None
    assert tone.threshold.for_run() == {"min": 0.2, "max": 0.9}
    assert tone.is_reference
    assert not exact.is_reference
    assert config.regression is not None
    assert (config.regression.max_drop, config.regression.confidence) == (0.02, 0.9)
    assert config.regression.resamples == 10_000


def test_a_scorers_judge_overrides_the_default_field_by_field(tmp_path: Path) -> None:
    config = load_experiment_file(write(tmp_path, GOOD)).config
    assert config.judge_settings(config.scorers[1]) == {
        "model": "gpt-4o",
        "api_key_env": "JUDGE_KEY",
        "max_concurrency": 32,
        "temperature": 0.2,
        "instructions": "You are a strict grader.",
    }
    assert config.judge_settings(config.scorers[0])["model"] == "gpt-4o-mini"


def test_a_judge_can_use_the_batch_api(tmp_path: Path) -> None:
    text = MINIMAL + (
        '[judge]\nmodel = "m"\nmode = "batch"\nbatch_max_requests = 1000\n'
        "batch_flush_after = 5\nbatch_poll_interval = 60.0\n"
    )
    config = load_experiment_file(write(tmp_path, text)).config
    settings = config.judge_settings(config.scorers[0])
    assert settings == {
        "model": "m",
        "mode": "batch",
        "batch_max_requests": 1000,
        "batch_flush_after": 5,
        "batch_poll_interval": 60.0,
    }
    judge = Judge(**settings)
    assert (judge.mode, judge.batch_flush_after) == ("batch", 5)


def test_a_minimal_file_uses_defaults_and_the_working_directorys_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_experiment_file(write(tmp_path, MINIMAL)).config
    assert config.experiment.store == elsewhere / "evalkit.duckdb"
    assert config.target is None
    assert config.judge is None
    assert config.regression is None
    assert config.scorers[0].threshold is None
    assert config.scorers[0].params == {}
    assert config.judge_settings(config.scorers[0]) == {}


def test_relative_paths_resolve_against_the_files_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "datasets").mkdir()
    (project / "datasets" / "qa.parquet").touch()
    path = project / "experiments" / "x.toml"
    path.write_text(
        '[experiment]\nname = "x"\ndataset = "../datasets/qa.parquet"\nstore = "runs.duckdb"\n'
        '[[scorers]]\nuse = "contains"\n'
    )
    monkeypatch.chdir(tmp_path)
    loaded = load_experiment_file("project/experiments/x.toml")
    assert loaded.config.experiment.dataset == project / "datasets" / "qa.parquet"
    assert loaded.config.experiment.store == project / "experiments" / "runs.duckdb"
    assert loaded.display_path == "project/experiments/x.toml"
    assert loaded.folder == project / "experiments"


def test_a_python_target_names_a_callable(tmp_path: Path) -> None:
    text = MINIMAL + '[target]\ntype = "python"\ncallable = "my_app.answer:respond"\n'
    target = load_experiment_file(write(tmp_path, text)).config.target
    assert isinstance(target, PythonTargetSection)
    assert target.callable == "my_app.answer:respond"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('[experiment]\nname = "x\n', 2, "invalid TOML: "),
        ("[experiment]\nname = 'x'\nname = 'y'\n", 3, "invalid TOML: Cannot overwrite a value"),
        ("[experiment]\nconcurrency = \n", 2, "invalid TOML: Invalid value (column 15)"),
        ("[[scorers]\nuse = 'a'\n", 1, "invalid TOML: "),
        ("a = [1,\n2,\n", 3, "(at the end of the file)"),
    ],
)
def test_a_toml_syntax_error_names_its_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    error = problems(write(tmp_path, text))
    assert (error.line, error.key) == (line, None)
    assert problem in error.problem
    assert str(error).startswith(f"{tmp_path / 'experiment.toml'}:{line}: invalid TOML: ")


@pytest.mark.parametrize(
    ("extra", "line", "key", "problem"),
    [
        ("[experiment]\nnmae = 'x'", 2, "experiment.nmae", "unknown key (did you mean 'name'?)"),
        ("[regresion]\nmax_drop = 0.1", 8, "regresion", "unknown table (did you mean"),
        (
            "[[scorers]]\nuse = 'contains'\nthreshold = { mn = 0.5 }",
            10,
            "scorers[1].threshold.mn",
            "unknown key (did you mean 'min'?)",
        ),
        (
            "[[scorers]]\nuse = 'x'\n[scorers.judge]\nzzz = 1",
            11,
            "scorers[1].judge.zzz",
            "unknown key; expected one of: model, instructions, base_url",
        ),
        (
            "[target]\ntype = 'python'\ncallable = 'a:b'\nmodel = 'gpt'",
            11,
            "target.model",
            "unknown key; expected one of: type, callable",
        ),
    ],
)
def test_an_unknown_key_names_its_line(
    tmp_path: Path, extra: str, line: int, key: str, problem: str
) -> None:
    base = MINIMAL if extra.startswith("[") and not extra.startswith("[experiment]") else ""
    text = base + "\n" + extra + "\n" if base else _merge_experiment(extra)
    error = problems(write(tmp_path, text))
    assert (error.line, error.key) == (line, key)
    assert error.problem.startswith(problem)


def _merge_experiment(extra: str) -> str:
    # "[experiment]\nnmae = ..." goes into the experiment table itself.
    return extra + '\nname = "q"\ndataset = "data/qa.parquet"\n[[scorers]]\nuse = "a"\n'


@pytest.mark.parametrize(
    ("snippet", "key", "problem"),
    [
        ('[experiment]\nconcurrency = "16"', "experiment.concurrency", 'an integer, got "16"'),
        ("[experiment]\nconcurrency = 16.0", "experiment.concurrency", "an integer, got 16.0"),
        ("[experiment]\nconcurrency = 0", "experiment.concurrency", "greater than or equal to 1"),
        ("[experiment]\ndescription = 3", "experiment.description", "a string, got 3"),
        ("[experiment]\nname = ''", "experiment.name", "expected a non-empty string"),
        ("[judge]\nmodel = 'm'\ntemperature = true", "judge.temperature", "a number, got true"),
        ("[judge]\nmodel = 'm'\ntemperature = nan", "judge.temperature", "finite number"),
        ("[judge]\nmodel = 'm'\nmax_tokens = 1.5", "judge.max_tokens", "an integer, got 1.5"),
        ("[judge]\nmodel = 'm'\nmode = 'offline'", "judge.mode", "'online' or 'batch'"),
        (
            "[judge]\nmodel = 'm'\nstructured_output = 'grammar'",
            "judge.structured_output",
            "expected 'auto', 'json_schema', 'json_object' or 'prompt', got \"grammar\"",
        ),
        ("[judge]\nmodel = 'm'\nextra_body = 3", "judge.extra_body", "expected a table, got 3"),
        (
            "[judge]\nmodel = 'm'\nbatch_flush_after = 0",
            "judge.batch_flush_after",
            "above 0 and at most 86,400, got 0",
        ),
        ("[target]\ntype = 'anthropic'", "target.type", "'openai' or 'python', got \"anthropic\""),
        ("[target]\nmodel = 'gpt'", "target.type", "required key is missing"),
        ("[target]\ntype = 'python'\ncallable = 'no_colon'", "target.callable", "module:attr"),
        ("[target]\ntype = 'openai'\nmodel = 'm'\nprompt = '{input'", "target.prompt", "template"),
        ("[regression]\nconfidence = 95", "regression.confidence", "less than 1, got 95"),
        ("[regression]\nmax_drop = -0.1", "regression.max_drop", "greater than or equal to 0"),
        ("[regression]\nbaseline = 3", "regression.baseline", "a string, got 3"),
        ("judge = 'gpt-4o'", "judge", 'expected a table, got "gpt-4o"'),
    ],
)
def test_a_wrong_type_or_value_names_the_key_and_its_line(
    tmp_path: Path, snippet: str, key: str, problem: str
) -> None:
    table, _, body = snippet.partition("\n")
    if table == "[experiment]":
        lines = {"name": 'name = "q"', "dataset": 'dataset = "data/qa.parquet"'}
        field = body.split(" =")[0]
        lines[field] = body
        text = "[experiment]\n" + "\n".join(lines.values()) + '\n[[scorers]]\nuse = "a"\n'
    elif table.startswith("["):
        text = MINIMAL + "\n" + snippet + "\n"
    else:
        text = snippet + "\n" + MINIMAL
    path = write(tmp_path, text)
    error = problems(path)
    assert error.key == key
    assert problem in error.problem
    written = path.read_text().splitlines()
    assert error.line is not None
    assert written[error.line - 1].split(" =")[0].strip("[]") in key


@pytest.mark.parametrize(
    ("threshold", "problem"),
    [
        ('"high"', 'expected a number or a table such as { min = 0.8 } or { max = 0.1 }, got "h'),
        ("true", "expected a number or a table"),
        ("{}", "expected min, max or both"),
        ("{ min = 0.9, max = 0.1 }", "min (0.9) is greater than max (0.1)"),
        ("inf", "expected a finite number, got inf"),
    ],
)
def test_a_bad_threshold_is_explained(tmp_path: Path, threshold: str, problem: str) -> None:
    error = problems(write(tmp_path, MINIMAL + f"threshold = {threshold}\n"))
    assert (error.line, error.key) == (7, "scorers[0].threshold")
    assert error.problem.startswith(problem)


@pytest.mark.parametrize(
    ("text", "line", "key", "problem"),
    [
        ('[[scorers]]\nuse = "a"\n', None, "experiment", "required table [experiment] is missing"),
        ('[experiment]\ndataset = "data/qa.parquet"\n[[scorers]]\nuse = "a"\n', 1,
         "experiment.name", "required key is missing"),
        ('[experiment]\nname = "x"\ndataset = "data/qa.parquet"\n', None, "scorers",
         "at least one [[scorers]] table is required"),
        ('scorers = []\n[experiment]\nname = "x"\ndataset = "data/qa.parquet"\n', 1, "scorers",
         "at least one [[scorers]] table is required"),
        ('[experiment]\nname = "x"\ndataset = "data/qa.parquet"\n[scorers]\nuse = "a"\n', 4,
         "scorers", "expected an array of tables: write each scorer as a [[scorers]] table"),
        ('[experiment]\nname = "x"\ndataset = "data/qa.parquet"\n[[scorers]]\nid = "a"\n', 4,
         "scorers[0].use", "required key is missing"),
        (MINIMAL + '[target]\ntype = "openai"\n', 7, "target.model", "required key is missing"),
        (MINIMAL + "[judge]\ntemperature = 0\n", 7, "judge.model", "required key is missing"),
    ],
)  # fmt: skip
def test_a_missing_table_or_key_is_named(
    tmp_path: Path, text: str, line: int | None, key: str, problem: str
) -> None:
    error = problems(write(tmp_path, text))
    assert (error.line, error.key, error.problem) == (line, key, problem)


def test_a_missing_dataset_is_reported_at_its_key(tmp_path: Path) -> None:
    text = MINIMAL.replace("data/qa.parquet", "data/missing.parquet")
    error = problems(write(tmp_path, text))
    assert (error.line, error.key) == (3, "experiment.dataset")
    assert error.problem == f"dataset not found: {tmp_path / 'data' / 'missing.parquet'}"


def test_duplicate_scorer_ids_point_at_the_second_entry(tmp_path: Path) -> None:
    text = MINIMAL + 'id = "same"\n[[scorers]]\nuse = "contains"\nid = "same"\n'
    error = problems(write(tmp_path, text))
    assert (error.line, error.key) == (10, "scorers[1].id")
    assert error.problem.startswith("same scorer id as scorers[0]")


def test_the_same_scorer_twice_without_ids_points_at_the_second_use(tmp_path: Path) -> None:
    error = problems(write(tmp_path, MINIMAL + '[[scorers]]\nuse = "exact_match"\n'))
    assert (error.line, error.key) == (8, "scorers[1].use")


def test_every_problem_is_reported_at_once_in_file_order(tmp_path: Path) -> None:
    text = """\
    [experiment]
    name = 5
    dataset = "data/qa.parquet"
    concurrency = -1

    [[scorers]]
    use = "exact_match"
    treshold = 0.8
    """
    path = write(tmp_path, text)
    error = problems(path)
    assert [(issue.line, issue.key) for issue in error.issues] == [
        (2, "experiment.name"),
        (4, "experiment.concurrency"),
        (8, "scorers[0].treshold"),
    ]
    assert str(error).splitlines() == [str(issue) for issue in error.issues]
    assert str(error).splitlines()[2] == (
        f"{path}:8: scorers[0].treshold: unknown key (did you mean 'threshold'?)"
    )
    assert error.to_dict()["issues"][1]["key"] == "experiment.concurrency"


def test_an_unreadable_file_is_an_experiment_file_error(tmp_path: Path) -> None:
    error = problems(tmp_path / "nope.toml")
    assert (error.line, error.key) == (None, None)
    assert (
        str(error) == f"{tmp_path / 'nope.toml'}: cannot read the file: No such file or directory"
    )
    assert isinstance(error, ConfigError)
    assert isinstance(error, ValueError)


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[experiment]\nname = "caf\xe9"\n')
    error = problems(path)
    assert (error.line, error.problem) == (2, "the file is not UTF-8 text")


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load_experiment_file(path).config.experiment.name == "quick"


def loaded(tmp_path: Path) -> ExperimentFile:
    return load_experiment_file(write(tmp_path, GOOD))


def test_errors_found_after_loading_point_at_the_key(tmp_path: Path) -> None:
    experiment_file = loaded(tmp_path)
    error = experiment_file.error(("scorers", 1, "use"), "unknown scorer 'toxicity'")
    assert str(error) == (
        f"{tmp_path / 'experiment.toml'}:33: scorers[1].use: unknown scorer 'toxicity'"
    )
    # Not written: the line of the entry's [[scorers]] header.
    assert experiment_file.line_of(("scorers", 2, "params")) == 37


@pytest.mark.parametrize("key", ["dataset", "store"])
def test_a_path_under_an_unknown_users_home_is_a_located_problem(tmp_path: Path, key: str) -> None:
    text = MINIMAL
    if key == "dataset":
        text = text.replace('"data/qa.parquet"', '"~nosuchuser-evalkit/qa.parquet"')
    else:
        text = text.replace("[[scorers]]", 'store = "~nosuchuser-evalkit/x.duckdb"\n[[scorers]]')
    error = problems(write(tmp_path, text))
    assert error.key == f"experiment.{key}"
    assert error.line == (3 if key == "dataset" else 5)
    assert error.problem.startswith("cannot resolve the path '~nosuchuser-evalkit/")


SECRET = "sk-proj-Q8x2LmZ0aB7cD9eF1gH3iJ5kL7mN9pR"


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ('[judge]\nmodel = "m"\napi_key_env = "{value}"\n', "judge.api_key_env"),
        ('judge = {{ api_key_env = "{value}" }}\n', "scorers[0].judge.api_key_env"),
        ('[target]\ntype = "openai"\nmodel = "m"\napi_key_env = "{value}"\n', "target.api_key_env"),
    ],
)
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (SECRET, "this looks like an API key, not the name of an environment variable"),
        ("3f9a0c1b2d4e5f60718293a4b5c6d7e8", "this looks like an API key"),
        ("a3f9a0c1b2d4e5f60718293a4b5c6d7e8", "this looks like an API key"),
        ("MY-KEY", "expected the name of an environment variable"),
        ("1KEY", "expected the name of an environment variable"),
        ("OPENAI KEY", "expected the name of an environment variable"),
    ],
)
def test_api_key_env_must_be_a_variable_name_and_is_never_echoed(
    tmp_path: Path, where: str, key: str, value: str, problem: str
) -> None:
    error = problems(write(tmp_path, MINIMAL + where.format(value=value)))
    assert error.key == key
    assert error.problem.startswith(problem)
    assert "value not shown" in error.problem
    assert value not in str(error)
    assert value not in str(error.to_dict())
    assert value not in str(error.__cause__)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "_KEY", "azure_openai_key_2", "KEY2024PROD"])
def test_a_variable_name_is_accepted_as_api_key_env(tmp_path: Path, name: str) -> None:
    text = MINIMAL + f'[judge]\nmodel = "m"\napi_key_env = "{name}"\n'
    config = load_experiment_file(write(tmp_path, text)).config
    assert config.judge is not None
    assert config.judge.api_key_env == name


def test_judge_timeout_and_max_retries_reach_the_judge(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + "judge = { timeout = 5, max_retries = 0 }\n"
        + '[judge]\nmodel = "m"\ntimeout = 12.5\nmax_retries = 4\n'
    )
    config = load_experiment_file(write(tmp_path, text)).config
    assert config.judge is not None
    assert (config.judge.timeout, config.judge.max_retries) == (12.5, 4)
    settings = config.judge_settings(config.scorers[0])
    assert (settings["timeout"], settings["max_retries"]) == (5.0, 0)
    judge = Judge(**settings)
    assert (judge.timeout, judge.max_retries) == (5.0, 0)


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ("timeout = 0", "expected a number of seconds above 0 and at most 86,400, got 0"),
        ("timeout = -1.5", "expected a number of seconds above 0 and at most 86,400, got -1.5"),
        ("timeout = inf", "expected a finite number, got inf"),
        ('timeout = "30"', 'expected a number, got "30"'),
        ("max_retries = -1", "expected an integer from 0 to 100, got -1"),
        ("max_retries = 1.5", "expected an integer, got 1.5"),
    ],
)
def test_a_bad_judge_timeout_or_max_retries_is_named(
    tmp_path: Path, setting: str, problem: str
) -> None:
    error = problems(write(tmp_path, MINIMAL + f'[judge]\nmodel = "m"\n{setting}\n'))
    assert (error.line, error.key) == (9, f"judge.{setting.split(' =')[0]}")
    assert error.problem == problem


def decode_error(message: str, **position: object) -> tomllib.TOMLDecodeError:
    """A TOMLDecodeError as Python 3.14 raises it: its position in attributes."""
    error = tomllib.TOMLDecodeError(message)
    for name, value in position.items():
        setattr(error, name, value)
    return error


def test_a_toml_error_position_is_read_from_its_attributes_when_present() -> None:
    text = "[experiment]\nconcurrency = \n"
    # The attributes win over a message that would say otherwise.
    error = decode_error(
        "Invalid value (at line 9, column 3)", msg="Invalid value", pos=27, lineno=2, colno=15
    )
    located = _syntax_error("x.toml", text, error)
    assert (located.line, located.problem) == (2, "invalid TOML: Invalid value (column 15)")


def test_a_toml_error_at_the_end_uses_its_attributes_too() -> None:
    text = "a = [1,\n2,\n"
    error = decode_error("Unclosed array (at end of document)", pos=len(text), lineno=3, colno=1)
    located = _syntax_error("x.toml", text, error)
    assert (located.line, located.problem) == (
        3,
        "invalid TOML: Unclosed array (at the end of the file)",
    )


BASE_URL_ENV = MINIMAL.replace('use = "exact_match"', 'use = "llm_rubric"') + (
    '[judge]\nmodel = "m"\nbase_url_env = "EVALKIT_TEST_JUDGE_URL"\n'
)


def test_base_url_env_is_read_into_base_url_when_the_judge_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALKIT_TEST_JUDGE_URL", raising=False)
    config = load_experiment_file(write(tmp_path, BASE_URL_ENV)).config  # unset: loads
    assert config.judge is not None
    assert config.judge.base_url_env == "EVALKIT_TEST_JUDGE_URL"
    monkeypatch.setenv("EVALKIT_TEST_JUDGE_URL", " http://127.0.0.1:9/v1 ")
    settings = config.judge_settings(config.scorers[0])
    assert settings == {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    Judge(**settings)  # what Judge takes


@pytest.mark.parametrize("value", [None, "", "  "])
def test_an_unset_base_url_env_names_the_key_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("EVALKIT_TEST_JUDGE_URL", raising=False)
    else:
        monkeypatch.setenv("EVALKIT_TEST_JUDGE_URL", value)
    config = load_experiment_file(write(tmp_path, BASE_URL_ENV)).config
    with pytest.raises(ConfigError) as caught:
        config.judge_settings(config.scorers[0])
    assert str(caught.value).startswith(
        "judge.base_url_env: EVALKIT_TEST_JUDGE_URL is not set: export the judge's base URL"
    )


def test_a_scorers_base_url_or_base_url_env_replaces_both_of_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALKIT_TEST_JUDGE_URL", raising=False)
    monkeypatch.setenv("EVALKIT_OWN_URL", "http://own/v1")
    text = BASE_URL_ENV + (
        '\n[[scorers]]\nuse = "toxicity"\njudge = { base_url = "http://fixed/v1" }\n'
        '\n[[scorers]]\nuse = "answer_relevancy"\njudge = { base_url_env = "EVALKIT_OWN_URL" }\n'
        '\n[[scorers]]\nuse = "faithfulness"\njudge = { base_url_env = "EVALKIT_NOPE_URL" }\n'
    )
    config = load_experiment_file(write(tmp_path, text)).config
    _, fixed, own, unset = config.scorers
    assert config.judge_settings(fixed) == {"model": "m", "base_url": "http://fixed/v1"}
    assert config.judge_settings(own) == {"model": "m", "base_url": "http://own/v1"}
    with pytest.raises(ConfigError, match=r"^scorers\[3\]\.judge\.base_url_env: EVALKIT_NOPE_URL"):
        config.judge_settings(unset)


@pytest.mark.parametrize(
    ("judge", "problem"),
    [
        (
            'base_url = "http://a/v1"\nbase_url_env = "A_URL"',
            "give base_url or base_url_env, not both",
        ),
        ('base_url_env = "http://127.0.0.1:8000/v1"', "expected the name of an environment"),
    ],
)
def test_base_url_env_is_a_variable_name_instead_of_base_url(
    tmp_path: Path, judge: str, problem: str
) -> None:
    text = MINIMAL + f'[judge]\nmodel = "m"\n{judge}\n'
    error = problems(write(tmp_path, text))
    assert (error.key, error.line) == ("judge.base_url_env", text.count("\n"))
    assert error.problem.startswith(problem)

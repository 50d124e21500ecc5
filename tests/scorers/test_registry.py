from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalkit
from evalkit import (
    ConfigError,
    Judge,
    Scorer,
    ScorerInfo,
    get_scorer,
    list_scorers,
    scorer_info,
)
from evalkit.scorer._ids import slugify
from evalkit.scorers import _registry, exact_match
from evalkit.scorers._docstrings import doc_args
from evalkit.scorers._families import FAMILY_OF
from evalkit.scorers._registry import INPUT_FIELDS, prebuilt

CODE_SCORERS = {
    "bleu",
    "chrf",
    "contains",
    "content_similarity",
    "exact_match",
    "json_match",
    "json_valid",
    "keyword_coverage",
    "numeric_match",
    "regex_match",
    "rouge_l",
    "string_similarity",
    "textual_difference",
    "token_f1",
    "tone_consistency",
    "tool_call_accuracy",
}


def test_every_code_scorer_is_listed_by_name() -> None:
    names = [info.name for info in list_scorers()]
    assert names == sorted(names)
    assert {info.name for info in list_scorers(kind="code")} == CODE_SCORERS
    assert all(info.kind == "llm" for info in list_scorers(kind="llm"))


@pytest.mark.parametrize("name", sorted(CODE_SCORERS))
def test_metadata_is_complete(name: str) -> None:
    info = scorer_info(name)
    assert info.kind == "code"
    assert info.range == (0.0, 1.0)
    assert info.higher_is_better is True
    assert info.version >= 1
    assert info.description.endswith(".")
    assert "\n" not in info.description
    assert info.inputs
    assert set(info.inputs) <= set(INPUT_FIELDS)
    assert "output" in info.inputs
    assert slugify(info.title) == name.replace("_", "-")
    for param in info.params:
        assert param.description, f"{name}.{param.name} has no description"
    assert info.available  # the test extra installs every optional group
    json.dumps(info.to_dict())


@pytest.mark.parametrize("name", sorted(CODE_SCORERS))
def test_get_scorer_builds_a_scorer_that_carries_its_identity(name: str) -> None:
    info = scorer_info(name)
    scorer = get_scorer(name)
    assert isinstance(scorer, Scorer)
    assert scorer.id == name
    assert scorer.name == info.title
    assert scorer.description == info.description
    assert scorer.higher_is_better is info.higher_is_better
    assert scorer.metadata == {
        "prebuilt": name,
        "version": info.version,
        "params": {param.name: param.default for param in info.params},
    }
    assert "generate_score" in scorer.steps
    assert "generate_reason" in scorer.steps
    factory = getattr(evalkit.scorers, name)
    assert factory.__doc__
    assert factory.__name__ == name


def test_params_and_id_reach_the_scorer() -> None:
    scorer = get_scorer("contains", id="has-city", values=("Paris",), mode="any")
    assert scorer.id == "has-city"
    assert scorer.metadata["params"] == {"values": ["Paris"], "mode": "any", "ignore_case": False}


def test_code_scorers_ignore_a_judge_from_get_scorer_but_refuse_one_directly() -> None:
    assert get_scorer("exact_match", judge=object()).judge is None
    with pytest.raises(ConfigError, match="scorer 'exact_match' is code-based and takes no judge"):
        exact_match(judge=object())


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("exact_mach", "unknown prebuilt scorer 'exact_mach' (did you mean 'exact_match' or "),
        (
            "Exact-Match",
            "unknown prebuilt scorer 'Exact-Match' (did you mean 'exact_match'?); "
            "list them with `evalkit scorers`",
        ),
        ("zzz", "unknown prebuilt scorer 'zzz'; list them"),
    ],
)
def test_unknown_names_list_close_matches(name: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        get_scorer(name)
    assert str(caught.value).startswith(message)
    with pytest.raises(ConfigError):
        scorer_info(name)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"ignore_cas": True},
            "scorer 'exact_match' has no parameter 'ignore_cas' (did you mean 'ignore_case' or "
            "'ignore_punctuation'?); its parameters are: ignore_case, ignore_whitespace, "
            "ignore_punctuation, strip",
        ),
        (
            {"ignore_case": "yes"},
            "scorer 'exact_match', parameter 'ignore_case': Input should be a valid boolean "
            "(expected bool, got 'yes')",
        ),
        (
            {"ignore_case": 1},
            "scorer 'exact_match', parameter 'ignore_case': Input should be a valid boolean "
            "(expected bool, got 1)",
        ),
        ({"id": ""}, "scorer 'exact_match': id must be a non-empty string, got ''"),
    ],
)
def test_bad_params_name_the_scorer_and_the_param(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        get_scorer("exact_match", **params)
    assert str(caught.value) == message


def test_param_metadata() -> None:
    info = scorer_info("contains")
    assert [(p.name, p.type, p.default) for p in info.params] == [
        ("values", "Sequence[str] | None", None),
        ("mode", "'all' | 'any'", "all"),
        ("ignore_case", "bool", False),
    ]
    assert (
        info.param("mode").description
        == '``"all"``: every string must occur; ``"any"``: one is enough.'
    )
    assert info.inputs_note == "ground_truth unless `values` is given"
    with pytest.raises(ConfigError, match="scorer 'contains' has no parameter 'nope'"):
        info.param("nope")
    assert scorer_info("bleu").extra == "nlp"
    assert scorer_info("exact_match").extra is None


def test_factories_show_their_parameters() -> None:
    signature = inspect.signature(exact_match)
    assert list(signature.parameters) == [
        "ignore_case",
        "ignore_whitespace",
        "ignore_punctuation",
        "strip",
        "id",
    ]
    assert signature.parameters["strip"].default is True
    assert signature.return_annotation is Scorer


def test_the_family_map_names_the_module_that_defines_each_prebuilt_scorer() -> None:
    """The registry imports a family module when one of its scorers is first asked for (issue 31
    item 6), so its map must list every prebuilt scorer under the module that registers it."""
    defined = {
        info.name: _registry.REGISTRY[info.name].factory.__module__ for info in list_scorers()
    }
    assert defined == FAMILY_OF
    assert len(defined) == 30


def test_a_shipped_name_registered_from_another_module_is_refused() -> None:
    def elsewhere(scorer: Scorer) -> Scorer:
        """Not the family module of ``bleu``."""
        return scorer

    with pytest.raises(
        ConfigError, match=r"'bleu' is registered twice \(by evalkit.scorers._metrics\)"
    ):
        prebuilt("bleu", title="B", inputs=("output",), version=1)(elsewhere)


@pytest.fixture
def scratch_names() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        _registry.REGISTRY.pop(name, None)


def test_a_missing_optional_dependency_names_the_extra(scratch_names: list[str]) -> None:
    scratch_names.append("needs_missing_module")

    @prebuilt(
        "needs_missing_module",
        title="Needs Missing Module",
        inputs=("output",),
        version=1,
        extra="nlp",
        modules=("evalkit_no_such_module",),
    )
    def build(scorer: Scorer) -> Scorer:
        """Never built: its module is missing."""
        return scorer.generate_score(lambda: 1.0)

    info = scorer_info("needs_missing_module")
    assert info.available is False
    with pytest.raises(ConfigError) as caught:
        get_scorer("needs_missing_module")
    assert str(caught.value) == (
        "scorer 'needs_missing_module' needs the optional 'nlp' dependencies (missing module "
        "evalkit_no_such_module): pip install 'evalkit-runner[nlp]'"
    )


def test_an_llm_scorer_receives_the_judge_on_its_base_scorer(scratch_names: list[str]) -> None:
    scratch_names.append("fake_llm_scorer")

    @prebuilt(
        "fake_llm_scorer",
        title="Fake LLM Scorer",
        kind="llm",
        inputs=("input", "output"),
        version=3,
        higher_is_better=False,
        range=(0, 1),
    )
    def build(scorer: Scorer, *, scale: float = 1.0) -> Scorer:
        """A stand-in for a judged scorer.

        Args:
            scale: Multiplies the score.
        """
        return scorer.generate_score(lambda: 0.5 * scale)

    judge = Judge("judge-model", "Be strict.")
    scorer = get_scorer("fake_llm_scorer", judge=judge, scale=2)
    assert scorer.judge is judge
    assert scorer.higher_is_better is False
    assert scorer.metadata == {
        "prebuilt": "fake_llm_scorer",
        "version": 3,
        "params": {"scale": 2.0},
    }
    assert "judge" in inspect.signature(_registry.REGISTRY["fake_llm_scorer"].factory).parameters
    assert scorer_info("fake_llm_scorer") in list_scorers(kind="llm")


def test_registration_mistakes_are_caught(scratch_names: list[str]) -> None:
    scratch_names.extend(["undocumented_param", "positional_param"])

    def undocumented(scorer: Scorer, *, level: int = 1) -> Scorer:
        """No Args section."""
        return scorer

    with pytest.raises(ConfigError, match="parameter 'level': not described in the docstring"):
        prebuilt("undocumented_param", title="U", inputs=("output",), version=1)(undocumented)

    def positional(scorer: Scorer, level: int = 1) -> Scorer:
        """Positional.

        Args:
            level: A level.
        """
        return scorer

    with pytest.raises(ConfigError, match="must be keyword-only with a default"):
        prebuilt("positional_param", title="P", inputs=("output",), version=1)(positional)

    with pytest.raises(ConfigError, match="is registered twice"):
        prebuilt("exact_match", title="E", inputs=("output",), version=1)(undocumented)

    with pytest.raises(ConfigError, match="bad name or inputs"):
        prebuilt("Bad-Name", title="B", inputs=("output",), version=1)


def test_docstring_args_are_parsed() -> None:
    doc = """Summary.

    Args:
        first: One line.
        second (int): Spans
            two lines.

    Returns:
        Nothing.
    """
    assert doc_args(inspect.cleandoc(doc)) == {
        "first": "One line.",
        "second": "Spans two lines.",
    }


def test_info_is_frozen() -> None:
    info: ScorerInfo = scorer_info("exact_match")
    with pytest.raises(AttributeError):
        info.version = 2  # type: ignore[misc]


def test_no_import_cycle_runs_through_the_families() -> None:
    """Issue 32: the registry imported a family by name (to rebuild a shipped scorer) while
    every family imports the registry; lookup by name now lives apart (``_lookup``), and no
    family imports it."""
    registry = ast.parse(Path(_registry.__file__).read_text(encoding="utf-8"))
    called = {
        node.func.attr
        for node in ast.walk(registry)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert "import_module" not in called
    for module in set(FAMILY_OF.values()):
        source = Path(importlib.import_module(module).__file__ or "").read_text(encoding="utf-8")
        assert "scorers._lookup" not in source, module
        assert "from evalkit.scorers import" not in source, module

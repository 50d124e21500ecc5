from __future__ import annotations

import pytest

from evalkit import ConfigError, create_scorer


def test_direction_and_metadata_default_to_higher_is_better_and_empty() -> None:
    scorer = create_scorer("Plain").generate_score(lambda: 1.0)
    assert scorer.higher_is_better is True
    assert dict(scorer.metadata) == {}


def test_direction_and_metadata_survive_every_builder_step() -> None:
    base = create_scorer("Toxicity", higher_is_better=False, metadata={"version": 2})
    built = base.preprocess(lambda: 1).analyze(lambda: 2).generate_score(lambda: 0.1)
    built = built.generate_reason(lambda: "ok")
    assert built.higher_is_better is False
    assert built.metadata == {"version": 2}
    assert base.steps == {}  # the builder stays immutable


def test_metadata_is_a_read_only_copy() -> None:
    source = {"version": 1}
    scorer = create_scorer("Copy", metadata=source)
    source["version"] = 2
    assert scorer.metadata["version"] == 1
    with pytest.raises(TypeError):
        scorer.metadata["version"] = 3  # type: ignore[index]


def test_direction_must_be_a_bool() -> None:
    with pytest.raises(ConfigError, match="higher_is_better must be True or False, got 'no'"):
        create_scorer("Bad", higher_is_better="no")  # type: ignore[arg-type]

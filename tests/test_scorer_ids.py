"""The pairing rule of old and new scorer ids, and the close match of a misspelt id."""

from __future__ import annotations

import pytest

from evalkit._scorer_ids import close_id, current_id, renames

OLD = {"prebuilt": "token_f1", "version": 1, "params": {}}


@pytest.mark.parametrize(
    ("stored", "metadata", "current"),
    [
        ("token-f1", OLD, "token_f1"),  # the old default of a prebuilt scorer
        ("token-f1", '{"prebuilt": "token_f1"}', "token_f1"),  # as the store gives it, JSON
        ("token_f1", OLD, "token_f1"),
        ("f1", OLD, "f1"),  # an id of the user's own choosing
        ("token-f1", None, "token-f1"),  # a scorer of the user's own: no metadata
        ("token-f1", {"prebuilt": 3}, "token-f1"),
        ("token-f1", "not json", "token-f1"),
    ],
)
def test_the_current_id_of_a_stored_scorer(stored: str, metadata: object, current: str) -> None:
    assert current_id(stored, metadata) == current  # type: ignore[arg-type]


def test_an_old_id_pairs_with_its_new_spelling_on_either_side() -> None:
    old = {"token-f1": "token_f1", "exact": "exact"}
    new = {"token_f1": "token_f1", "exact": "exact"}
    assert renames(old, new) == ({"token-f1": "token_f1"}, {})
    assert renames(new, old) == ({}, {"token-f1": "token_f1"})
    assert renames(old, old) == ({}, {})


def test_an_id_found_as_it_is_is_never_renamed() -> None:
    # Both spellings in the candidate: the old id pairs with the old id; the new is left alone.
    both = {"token-f1": "token_f1", "token_f1": "token_f1"}
    assert renames({"token-f1": "token_f1"}, both) == ({}, {})


def test_an_ambiguous_pairing_is_left_unpaired() -> None:
    baseline = {"token-f1": "token_f1", "TOKEN-F1": "token_f1"}
    assert renames(baseline, {"token_f1": "token_f1"}) == ({}, {})


@pytest.mark.parametrize(
    ("given", "known", "close"),
    [
        ("token-f1", ["exact", "token_f1"], "token_f1"),
        ("Token_F1", ["exact", "token_f1"], "token_f1"),
        ("exactt", ["exact", "token_f1"], "exact"),
        ("bleu", ["exact", "token_f1"], None),
    ],
)
def test_the_close_match_of_a_misspelt_id(given: str, known: list[str], close: str | None) -> None:
    assert close_id(given, known) == close

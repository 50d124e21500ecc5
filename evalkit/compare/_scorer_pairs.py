"""Which scorer of one stored run pairs with which of another, across the scorer id rule.

A prebuilt scorer's id is its registry name (``token_f1``); runs stored before that rule hold
its name with dashes (``token-f1``). The stored ids stay as they are; a comparison of an old run
with a new one pairs the two spellings (docs/pages/design/one-scorer-id-rule.md).
"""

from __future__ import annotations

import os

import pyarrow as pa

from evalkit._scorer_ids import renamed_ids, scorer_renames


def read_paired_scores(
    store: str | os.PathLike[str], baseline: str, candidate: str
) -> tuple[pa.Table, pa.Table]:
    """Two stored runs' per-item scores
    ([`read_item_scores`][evalkit.store.read_item_scores]), ready for
    [`compare_experiments`][evalkit.compare_experiments]: a prebuilt scorer stored under the old
    id (``token-f1``) in one run and the new one (``token_f1``) in the other is compared under
    the new one.

    Raises:
        StoreError: No experiment has one of the ids.
    """
    from evalkit.store import read_item_scores
    from evalkit.store._internal import connection

    with connection(store, read_only=True) as con:  # one open for the five reads
        before, after = read_item_scores(con, baseline), read_item_scores(con, candidate)
        b_names, c_names = scorer_renames(con, baseline, candidate)
    return renamed_ids(before, b_names), renamed_ids(after, c_names)

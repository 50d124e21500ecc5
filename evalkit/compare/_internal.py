"""What evalkit's own packages use from `evalkit.compare` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.compare`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.compare._baseline import LATEST, LATEST_COMPLETE, not_eligible, pairs_with
    from evalkit.compare._compare import Direction
    from evalkit.compare._diff import ItemDiff
    from evalkit.compare._inputs import ScoreTable
    from evalkit.compare._slices import SliceComparison, compare_slices, slice_values

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.compare._baseline": (
            "LATEST",
            "LATEST_COMPLETE",
            "not_eligible",
            "pairs_with",
        ),
        "evalkit.compare._compare": ("Direction",),
        "evalkit.compare._diff": ("ItemDiff",),
        "evalkit.compare._inputs": ("ScoreTable",),
        "evalkit.compare._slices": (
            "SliceComparison",
            "compare_slices",
            "slice_values",
        ),
    },
)

__all__ = [
    "LATEST",
    "LATEST_COMPLETE",
    "Direction",
    "ItemDiff",
    "ScoreTable",
    "SliceComparison",
    "compare_slices",
    "not_eligible",
    "pairs_with",
    "slice_values",
]

"""What evalkit's own packages use from `evalkit.agreement` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.agreement`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.agreement._gate import agreement_reasons, parse_min_agreement
    from evalkit.agreement._labels import (
        check_label_columns,
        config_of,
        parse_labels,
        with_label_columns,
    )
    from evalkit.agreement._measure import CONSENSUS, RATERS, resolve_kind
    from evalkit.agreement._merged import measure_merged
    from evalkit.agreement._record import (
        measure_labels,
        measure_stability,
        measure_stability_stored,
    )
    from evalkit.agreement._stability import REPEATS, JudgeStability, noise_share

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.agreement._gate": (
            "agreement_reasons",
            "parse_min_agreement",
        ),
        "evalkit.agreement._labels": (
            "check_label_columns",
            "config_of",
            "parse_labels",
            "with_label_columns",
        ),
        "evalkit.agreement._measure": (
            "CONSENSUS",
            "RATERS",
            "resolve_kind",
        ),
        "evalkit.agreement._merged": ("measure_merged",),
        "evalkit.agreement._record": (
            "measure_labels",
            "measure_stability",
            "measure_stability_stored",
        ),
        "evalkit.agreement._stability": (
            "JudgeStability",
            "REPEATS",
            "noise_share",
        ),
    },
)

__all__ = [
    "CONSENSUS",
    "RATERS",
    "REPEATS",
    "JudgeStability",
    "agreement_reasons",
    "check_label_columns",
    "config_of",
    "measure_labels",
    "measure_merged",
    "measure_stability",
    "measure_stability_stored",
    "noise_share",
    "parse_labels",
    "parse_min_agreement",
    "resolve_kind",
    "with_label_columns",
]

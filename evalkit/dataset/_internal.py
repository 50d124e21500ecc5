"""What evalkit's own packages use from `evalkit.dataset` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.dataset`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.dataset._columns import ColumnMap
    from evalkit.dataset._dataset import ItemBatches
    from evalkit.dataset._sources import ColumnBatch, Duplicate, arrow_to_python

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.dataset._columns": ("ColumnMap",),
        "evalkit.dataset._dataset": ("ItemBatches",),
        "evalkit.dataset._sources": (
            "ColumnBatch",
            "Duplicate",
            "arrow_to_python",
        ),
    },
)

__all__ = [
    "ColumnBatch",
    "ColumnMap",
    "Duplicate",
    "ItemBatches",
    "arrow_to_python",
]

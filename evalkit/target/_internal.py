"""What evalkit's own packages use from `evalkit.target` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.target`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.target._dataset_output import DatasetOutput
    from evalkit.target._function import callable_name
    from evalkit.target._resolve import as_target

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.target._dataset_output": ("DatasetOutput",),
        "evalkit.target._function": ("callable_name",),
        "evalkit.target._resolve": ("as_target",),
    },
)

__all__ = [
    "DatasetOutput",
    "as_target",
    "callable_name",
]

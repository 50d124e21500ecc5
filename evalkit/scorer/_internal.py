"""What evalkit's own packages use from `evalkit.scorer` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.scorer`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.scorer._result import STEP_ORDER
    from evalkit.scorer._steps import is_async_callable

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.scorer._result": ("STEP_ORDER",),
        "evalkit.scorer._steps": ("is_async_callable",),
    },
)

__all__ = [
    "STEP_ORDER",
    "is_async_callable",
]

"""``evalkit view``: a local, read-only web application over the score store.

Pages: the runs (with each scorer's trend over the runs of a name), one run (scorers,
coverage, distributions, failure groups), two runs compared (the item diff as a filterable,
sortable grid, paginated on the server) and one item (input, ground truth, outputs, scores,
reasons and every judge execution). Every page is also JSON under ``/api``. The store is
opened read-only for each request only, so a run can write it while the viewer reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.view._app import create_app
    from evalkit.view._port import DEFAULT_PORT
    from evalkit.view._serve import serve

# Lazy: ``evalkit view --help`` reads DEFAULT_PORT without importing aiohttp, DuckDB or pandas.
__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.view._app": ("create_app",),
        "evalkit.view._port": ("DEFAULT_PORT",),
        "evalkit.view._serve": ("serve",),
    },
)

__all__ = ["DEFAULT_PORT", "create_app", "serve"]

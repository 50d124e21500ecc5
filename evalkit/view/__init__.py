"""``evalkit view``: a local, read-only web application over the score store.

Pages: the runs (with each scorer's trend over the runs of a name), one run (scorers,
coverage, distributions, failure groups), two runs compared (the item diff as a filterable,
sortable grid, paginated on the server) and one item (input, ground truth, outputs, scores,
reasons and every judge execution). Every page is also JSON under ``/api``. The store is
opened read-only for each request only, so a run can write it while the viewer reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.view._app import create_app as create_app
    from evalkit.view._port import DEFAULT_PORT as DEFAULT_PORT
    from evalkit.view._serve import serve as serve

# Lazy: ``evalkit view --help`` reads DEFAULT_PORT without importing aiohttp, DuckDB or pandas.
# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())

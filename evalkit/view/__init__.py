"""``evalkit view``: a local, read-only web application over the score store.

Pages: the runs (with each scorer's trend over the runs of a name), one run (scorers,
coverage, distributions, failure groups), two runs compared (the item diff as a filterable,
sortable grid, paginated on the server) and one item (input, ground truth, outputs, scores,
reasons and every judge execution). Every page is also JSON under ``/api``. The store is
opened read-only for each request only, so a run can write it while the viewer reads.
"""

from __future__ import annotations

from evalkit.view._app import create_app
from evalkit.view._serve import DEFAULT_PORT, serve

__all__ = ["DEFAULT_PORT", "create_app", "serve"]

"""The garbage collector paused while the ``evalkit`` command loads, and what it loaded frozen
(docs/pages/design/startup-objects-frozen.md).

Loading ``evalkit run`` imports about 630 modules (DuckDB, pyarrow, numpy, pydantic and
evalkit's own); their classes, functions and validators live as long as the process, yet the
collector scanned them again and again while they were made (a full collection among them).
The command (`evalkit._console`) pauses the collector first; once the command's module is
loaded (`loaded`, called by the command line's handler) what exists is frozen, out of every
later collection, and the collector runs again for what the command does. In a process that
did not pause it (``evalkit.cli.main`` called in process, a test) `loaded` does nothing.
"""

from __future__ import annotations

import gc

_paused = False
_froze = False


def pause() -> None:
    """No collection until `loaded`: called first by the ``evalkit`` command."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def loaded() -> None:
    """The command's modules are loaded: freeze what exists and collect again. Does nothing
    unless `pause` paused the collector."""
    global _paused, _froze
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False
        _froze = True


def froze_at_start() -> bool:
    """Whether `loaded` froze the process's objects: the runner then still freezes the
    results it keeps, and hands them back with the command's modules at its end
    (docs/pages/design/gc-freeze-kept-results.md)."""
    return _froze

"""Importing ``"module:attribute"`` references named in experiment files."""

from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

from evalkit.errors import ConfigError


def import_reference(reference: str, *, folder: str | Path | None = None) -> object:
    """Import the object a ``"module:attribute"`` reference names.

    ``attribute`` may be dotted (``"pkg.mod:Class.method"``). When ``folder`` is given it is put
    first on ``sys.path`` (once, and left there so the module's own later imports of its
    neighbours keep working), which is how ``use = "my_scorers:tone"`` finds ``my_scorers.py``
    beside the experiment file. A module imported before under the same name is reused.

    Args:
        reference: ``"module:attribute"``.
        folder: A folder to search first, usually the experiment file's.

    Returns:
        The object.

    Raises:
        ConfigError: The reference is malformed, the module is missing or fails to import,
            or it has no such attribute. The message names the reference.
    """
    module_name, colon, attribute = reference.partition(":")
    if not (colon and module_name and attribute):
        raise ConfigError(f"expected 'module:attribute', got {reference!r}")
    if folder is not None:
        entry = str(Path(folder).resolve())
        if entry not in sys.path:
            sys.path.insert(0, entry)
    # Files written after the interpreter started are invisible to cached directory listings.
    importlib.invalidate_caches()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            where = f"in {folder} or on sys.path" if folder is not None else "on sys.path"
            raise ConfigError(f"module {exc.name!r} not found {where}") from exc
        raise ConfigError(f"importing module {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        raise ConfigError(
            f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    value: object = module
    path = module_name
    for part in attribute.split("."):
        if not hasattr(value, part):
            names = [name for name in dir(value) if not name.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            owner = f"module {path!r}" if path == module_name else repr(path)
            raise ConfigError(f"{owner} has no attribute {part!r}{hint}")
        value = getattr(value, part)
        path = f"{path}:{part}" if path == module_name else f"{path}.{part}"
    return value

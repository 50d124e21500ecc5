"""Importing ``"module:attribute"`` references named in experiment files."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import sys
from pathlib import Path
from types import ModuleType

from evalkit.errors import ConfigError


def import_reference(reference: str, *, folder: str | Path | None = None) -> object:
    """Import the object a ``"module:attribute"`` reference names.

    ``attribute`` may be dotted (``"pkg.mod:Class.method"``). When ``folder`` is given it is put
    first on ``sys.path`` while the module is imported, which is how ``use = "my_scorers:tone"``
    finds ``my_scorers.py`` beside the experiment file, and the modules it imports at its top
    level find their neighbours too. The folder is then taken off again (the imported modules
    stay in ``sys.modules``): left first on the path, a ``regex.py`` or ``tokenize.py`` beside
    the file would shadow the library every later lazy import asks for. Hence an import made
    later, inside a function, does not see the folder. A folder already on ``sys.path`` is
    left where it is. A module imported before under the same name is reused.

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
    added: str | None = None  # the sys.path entry this call put there, to take off again
    if folder is not None and (entry := str(Path(folder).resolve())) not in sys.path:
        sys.path.insert(0, entry)
        added = entry
    try:
        module = _import(module_name, folder)
    finally:
        if added is not None:
            with contextlib.suppress(ValueError):
                sys.path.remove(added)
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


def _import(module_name: str, folder: str | Path | None) -> ModuleType:
    # Files written after the interpreter started are invisible to cached directory listings.
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            where = f"in {folder} or on sys.path" if folder is not None else "on sys.path"
            raise ConfigError(f"module {exc.name!r} not found {where}") from exc
        raise ConfigError(f"importing module {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        raise ConfigError(
            f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc

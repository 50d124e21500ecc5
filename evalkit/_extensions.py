"""DuckDB's extensions for a DuckLake store, loaded from their PyPI packages, never fetched.

``pip install 'evalkit-runner[ducklake]'`` installs DuckDB with the packages
``duckdb-extension-ducklake``, ``-sqlite``, ``-postgres`` and ``-httpfs`` of the same version.
Each holds its extension file at ``<package>/extensions/v<duckdb version>/<name>.duckdb_extension``;
a store connection LOADs those files by path with DuckDB's automatic install and load switched
off, so opening a store never goes to the network. DuckDB finds an extension's entry point by
its file name, and two packages name their file after the short name (``sqlite``,
``postgres``) rather than the extension's (``sqlite_scanner``, ``postgres_scanner``): those
are loaded through a link of the right name in evalkit's cache folder
(docs/pages/design/store-location.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import uuid
from pathlib import Path

import duckdb

from evalkit._sql import sql_literal
from evalkit._verified_extensions import extension_cache, verify_extension
from evalkit.errors import StoreError

#: DuckDB's extension name -> (PyPI package's import name, the file's name in it).
_PACKAGES = {
    "ducklake": ("duckdb_extension_ducklake", "ducklake"),
    "sqlite_scanner": ("duckdb_extension_sqlite", "sqlite"),
    "postgres_scanner": ("duckdb_extension_postgres", "postgres"),
    "httpfs": ("duckdb_extension_httpfs", "httpfs"),
}

#: The DuckDB version the ``ducklake`` extra pins (pyproject.toml).
PINNED_DUCKDB = "1.5.5"


def _missing(package: str) -> StoreError:
    return StoreError(
        f"a ducklake: store needs DuckDB's extension package {package.replace('_', '-')}"
        f" (and DuckDB {PINNED_DUCKDB}, the version whose extensions are all published):"
        " pip install 'evalkit-runner[ducklake]'"
    )


def extension_file(name: str) -> Path:
    """The installed file of DuckDB's extension ``name``, under the name DuckDB expects.

    Raises:
        StoreError: The extension's package is not installed, or was built for another
            DuckDB version than the one installed.
    """
    package, short = _PACKAGES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise _missing(package)
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    file = root / f"v{duckdb.__version__}" / f"{short}.duckdb_extension"
    if not file.is_file():
        built = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        raise StoreError(
            f"a ducklake: store needs the {name} extension built for the installed DuckDB"
            f" {duckdb.__version__}, but {package.replace('_', '-')} holds it for"
            f" {', '.join(built) or 'no version'}: install matching versions with"
            f" pip install 'evalkit-runner[ducklake]' (DuckDB {PINNED_DUCKDB})"
        )
    return file if short == name else _named_link(file, name)


def _named_link(file: Path, name: str) -> Path:
    folder = extension_cache()
    link = folder / f"{name}.duckdb_extension"
    with contextlib.suppress(OSError):
        if link.resolve(strict=True) == file.resolve():
            return link
    folder.mkdir(parents=True, exist_ok=True)
    # Made under a unique name and renamed into place: processes starting together never see
    # half a link, and the last one to rename wins with the same target.
    temporary = folder / f".{name}.{uuid.uuid4().hex}"
    temporary.symlink_to(file)
    os.replace(temporary, link)
    return link


def load_extensions(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """LOAD each extension into ``con`` from its installed file (see the module's docstring),
    its signature checked by DuckDB first, once per installed file (``_verified.py``)."""
    for name in names:
        path = extension_file(name)
        verify_extension(path)
        try:
            con.execute(f"LOAD {sql_literal(str(path))}")
        except duckdb.Error as exc:
            raise StoreError(f"cannot load DuckDB's {name} extension from {path}: {exc}") from exc


def has_extension(name: str) -> bool:
    """Whether the package of DuckDB's extension ``name`` is installed for this DuckDB."""
    try:
        extension_file(name)
    except StoreError:
        return False
    return True


def ducklake_missing() -> str | None:
    """Why a DuckLake store with a SQLite catalog cannot be opened here (an extension package
    missing, or built for another DuckDB), or None when it can."""
    for name in ("ducklake", "sqlite_scanner"):
        try:
            extension_file(name)
        except StoreError as exc:
            return str(exc)
    return None

"""Where a score store is: a DuckDB file, or a DuckLake (a catalog database and a data path).

Every place that opens, names or looks beside a store goes through
[`StoreLocation`][evalkit.store.StoreLocation] instead of treating the store as a file path: whether
it exists, where rows spilled by a locked writer wait, where the judge cache lives by default, and
how to name it in a message. A DuckLake store is written as DuckLake's own attach string::

    ducklake:sqlite:catalog.sqlite        # catalog in SQLite: one machine, several processes
    ducklake:postgres:dbname=evals host=db # catalog in PostgreSQL: several machines
    ducklake:catalog.ducklake              # catalog in a DuckDB file: one process at a time
    ducklake:team_lake                     # a DuckDB secret of TYPE ducklake (_lake_secret.py)

Credentials never belong in it: a PostgreSQL password comes from ``PGPASSWORD`` (or
``~/.pgpass``) or a DuckDB secret, so a store string can be stored, logged and reported as is.
See docs/pages/design/store-location.md.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evalkit._data_path import is_remote
from evalkit.errors import ConfigError
from evalkit.store._lake_secret import LakeSecret, is_secret_name, read_secret

#: The prefix of a DuckLake store.
DUCKLAKE_PREFIX = "ducklake:"

CatalogKind = Literal["duckdb", "sqlite", "postgres"]

_CATALOGS: dict[str, CatalogKind] = {
    "sqlite:": "sqlite", "postgres:": "postgres", "duckdb:": "duckdb"
}  # fmt: skip
_REFUSED_CATALOGS = ("mysql:", "quack:", "md:", "motherduck:")
# libpq's keys that carry a secret (conninfo "key=value" pairs or a postgresql:// URI).
_PG_SECRET = re.compile(r"(?:^|\s)(password|sslpassword)\s*=", re.IGNORECASE)
_PG_URI_PASSWORD = re.compile(r"^postgres(?:ql)?://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """A score store's location, parsed once.

    Attributes:
        text: The store as evalkit names it (a file path, or the DuckLake attach string with a
            local catalog file made absolute); never holds a password.
        catalog: None for a DuckDB store file; else the kind of the DuckLake's catalog.
        file: The DuckDB store file, or the DuckLake's local catalog file (None for a
            PostgreSQL catalog).
        target: What DuckDB attaches: the file's path, or ``ducklake:<catalog>``.
        secret: The DuckDB secret a lake is named by (``ducklake:<secret>``), if any.
    """

    text: str
    catalog: CatalogKind | None
    file: Path | None
    target: str
    secret: str | None = None

    @property
    def is_lake(self) -> bool:
        """Whether the store is a DuckLake."""
        return self.catalog is not None

    def __str__(self) -> str:
        return self.text

    def exists(self) -> bool:
        """Whether the store is there already (a PostgreSQL catalog is assumed to be: only
        opening it can tell)."""
        return self.file.exists() if self.file is not None else True

    def default_data_path(self) -> str | None:
        """Where a new DuckLake keeps its Parquet files when no data path is given: beside
        a local catalog file, ``<catalog>.files/`` (DuckLake's own default for a DuckDB
        catalog); None for a PostgreSQL catalog, which needs one named, and for a lake named
        by a secret, whose ``DATA_PATH`` DuckLake reads."""
        if self.catalog is None or self.file is None or self.secret is not None:
            return None
        return f"{self.file}.files{os.sep}"

    def local_dir(self) -> Path:
        """The local folder things kept beside the store go to (the judge cache): the store
        file's or catalog file's folder, else the working directory."""
        return self.file.parent if self.file is not None else Path.cwd()

    def recovery_dir(self) -> Path:
        """The folder that holds rows a writer could not write (``<file>.recovery``)."""
        if self.file is not None:
            return Path(f"{self.file}.recovery")
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:12]
        return Path.cwd() / f"evalkit-ducklake-{digest}.recovery"


def is_lake(store: str | os.PathLike[str] | StoreLocation) -> bool:
    """Whether ``store`` names a DuckLake store (``ducklake:…``)."""
    if isinstance(store, StoreLocation):
        return store.is_lake
    return os.fspath(store).startswith(DUCKLAKE_PREFIX)


def store_location(
    store: str | os.PathLike[str] | StoreLocation, *, base: str | os.PathLike[str] | None = None
) -> StoreLocation:
    """Parse ``store``: a DuckDB file path, or a DuckLake attach string (``ducklake:…``).

    A relative file (the store file, a local catalog file) is taken from ``base`` (the
    experiment file's folder), else from the working directory.

    After ``ducklake:``, a name of letters, digits and underscores is a DuckDB secret of
    ``TYPE ducklake`` (as DuckLake reads it), looked up to learn its catalog; a DuckDB catalog
    file of such a name is written ``ducklake:duckdb:NAME``.

    Raises:
        ConfigError: A DuckLake attach string that is malformed, names an unsupported catalog
            or a missing secret, or carries a password.
        StoreError: DuckDB's secrets cannot be read.
    """
    if isinstance(store, StoreLocation):
        return store
    text = os.fspath(store)
    if not text.startswith(DUCKLAKE_PREFIX):
        path = Path(text).expanduser()
        if base is not None and not path.is_absolute():
            path = Path(base) / path
        return StoreLocation(text=os.fspath(path), catalog=None, file=path, target=str(path))
    rest = text[len(DUCKLAKE_PREFIX) :].strip()
    if is_secret_name(rest):
        return _secret_location(read_secret(rest))
    for prefix in _REFUSED_CATALOGS:
        if rest.startswith(prefix):
            raise ConfigError(
                f"store {text!r}: a {prefix.rstrip(':')} catalog is not supported; use"
                " ducklake:sqlite:FILE, ducklake:postgres:CONNINFO or ducklake:FILE.ducklake"
            )
    kind: CatalogKind = "duckdb"
    for prefix, name in _CATALOGS.items():
        if rest.startswith(prefix):
            kind, rest = name, rest[len(prefix) :].strip()
    if not rest:
        raise ConfigError(
            f"store {text!r}: the DuckLake attach string names no catalog; write"
            " ducklake:sqlite:catalog.sqlite, ducklake:postgres:dbname=NAME host=HOST,"
            " ducklake:catalog.ducklake or ducklake:SECRET_NAME (a DuckDB secret)"
        )
    if kind == "postgres":
        _refuse_password(rest)
        return StoreLocation(
            text=f"{DUCKLAKE_PREFIX}postgres:{rest}", catalog=kind, file=None,
            target=f"{DUCKLAKE_PREFIX}postgres:{rest}",
        )  # fmt: skip
    if is_remote(rest):
        raise ConfigError(
            f"store {text!r}: a {kind} catalog must be a local file, not a URL; keep the data"
            " on object storage with store_data_path (--store-data-path) instead"
        )
    path = Path(rest).expanduser()
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    path = path.absolute()
    prefix = "sqlite:" if kind == "sqlite" else ""
    attach = f"{DUCKLAKE_PREFIX}{prefix}{path}"
    return StoreLocation(text=attach, catalog=kind, file=path, target=attach)


def _secret_location(secret: LakeSecret) -> StoreLocation:
    """A lake named by ``secret``: DuckLake reads the secret at attach; its catalog's kind and
    local file are read here (a relative catalog file is DuckLake's: from the working folder)."""
    name, path = f"{DUCKLAKE_PREFIX}{secret.name}", secret.metadata_path.strip()
    kind: CatalogKind = "duckdb"
    for prefix, found in _CATALOGS.items():
        if path.startswith(prefix):
            kind, path = found, path[len(prefix) :].strip()
    if secret.metadata_type in ("sqlite", "postgres", "duckdb"):
        kind = secret.metadata_type  # type: ignore[assignment]
    elif secret.metadata_type is not None or path.startswith(_REFUSED_CATALOGS):
        raise ConfigError(
            f"store {name!r}: the DuckDB secret's catalog ({secret.metadata_type or path}) is"
            " not supported; its METADATA_PATH must name a sqlite:, postgres: or DuckDB catalog"
        )
    if kind != "postgres" and not path:
        raise ConfigError(f"store {name!r}: the DuckDB secret {secret.name!r} has no METADATA_PATH")
    file = None if kind == "postgres" else Path(path).expanduser().absolute()
    return StoreLocation(text=name, catalog=kind, file=file, target=name, secret=secret.name)


def _refuse_password(conninfo: str) -> None:
    found = _PG_SECRET.search(conninfo)
    if found or _PG_URI_PASSWORD.match(conninfo):
        key = found.group(1).lower() if found else "the password in the URI"
        raise ConfigError(
            f"store: the DuckLake attach string carries a password ({key}); it would be"
            " stored, logged and reported with the store's name. Give it through the"
            " environment (PGPASSWORD, or ~/.pgpass) or a DuckDB secret (CREATE SECRET"
            " (TYPE postgres, …)), and name only dbname, host, port and user in the store"
        )

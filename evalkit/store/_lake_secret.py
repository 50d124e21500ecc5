"""A DuckLake store named by a DuckDB secret: ``store = "ducklake:team_lake"``.

DuckLake reads ``ATTACH 'ducklake:NAME'`` as the secret ``NAME`` when NAME is only letters,
digits and underscores (anything else is a path), and takes the catalog (``METADATA_PATH``,
``METADATA_PARAMETERS``) and the data path (``DATA_PATH``) from it; a PostgreSQL catalog's
``METADATA_PARAMETERS`` can name a ``TYPE postgres`` secret that holds the password. evalkit
attaches the same string, so DuckLake does the reading, and only looks into the secret for what
it needs to know beside the lake: the kind of catalog and its local file (the commit lock, the
recovery folder, whether the store exists). evalkit's connections are new databases, so they
see *persistent* secrets, from DuckDB's secret directory (``~/.duckdb/stored_secrets``).
See docs/pages/how-to/team-store-ducklake.md and docs/pages/design/store-location.md.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass

import duckdb

from evalkit.errors import ConfigError, StoreError

#: What DuckLake reads as a secret's name after ``ducklake:`` (its ``PathIsSecret``).
_SECRET_NAME = re.compile(r"[A-Za-z0-9_]+")
# A field of DuckDB's secret_string ("key=value" or a bare "key", joined by ";").
_FIELD = re.compile(r"[a-z_]+(?:=|$)")
_TYPE_PARAMETER = re.compile(r"(?:^|[{,]\s*)type=([A-Za-z_]+)", re.IGNORECASE)
# Reading secrets needs no extension: nothing is installed or loaded (as evalkit._duckdb.OFFLINE).
_SETTINGS = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


@dataclass(frozen=True, slots=True)
class LakeSecret:
    """The parts of a ``TYPE ducklake`` secret evalkit needs (never a password).

    Attributes:
        name: The secret's name.
        metadata_path: Its ``METADATA_PATH`` (the catalog as in ``ducklake:…``, or ``''``).
        metadata_type: The ``TYPE`` in its ``METADATA_PARAMETERS`` (``postgres``…), if any.
        directory: DuckDB's secret directory it was read from.
    """

    name: str
    metadata_path: str
    metadata_type: str | None
    directory: str


def is_secret_name(text: str) -> bool:
    """Whether ``text`` (what follows ``ducklake:``) names a secret, as DuckLake reads it."""
    return bool(_SECRET_NAME.fullmatch(text))


_CACHE: dict[tuple[str, str | None, str], LakeSecret] = {}
_CACHE_LOCK = threading.Lock()


def read_secret(name: str) -> LakeSecret:
    """The persistent DuckDB secret ``name`` of type ``ducklake`` (read once per process,
    home folder and working directory).

    Raises:
        ConfigError: There is no such secret, or it is not of type ducklake.
        StoreError: DuckDB's secrets cannot be read.
    """
    key = (name.lower(), os.environ.get("HOME"), os.getcwd())
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = _read(name)
        with _CACHE_LOCK:
            _CACHE[key] = found
    return found


def _read(name: str) -> LakeSecret:
    con = duckdb.connect(":memory:", config=dict(_SETTINGS))
    try:
        directory = str(con.execute("SELECT current_setting('secret_directory')").fetchall()[0][0])
        rows = con.execute(
            "SELECT type, secret_string FROM duckdb_secrets() WHERE lower(name) = lower(?)",
            [name],
        ).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"store 'ducklake:{name}': cannot read DuckDB's secrets: {exc}") from exc
    finally:
        con.close()
    if not rows:
        raise ConfigError(
            f"store 'ducklake:{name}': no DuckDB secret named {name!r}. After ducklake: a name"
            " of letters, digits and underscores is a secret, as DuckLake reads it; evalkit sees"
            f" persistent secrets, from {directory} (CREATE PERSISTENT SECRET {name} (TYPE"
            " ducklake, METADATA_PATH '…', DATA_PATH '…')). A DuckDB catalog file of that name"
            f" is written ducklake:duckdb:{name}"
        )
    kind, text = rows[0]
    if kind != "ducklake":
        raise ConfigError(
            f"store 'ducklake:{name}': the DuckDB secret {name!r} is of type {kind}; a store"
            " names a secret of TYPE ducklake (whose METADATA_PARAMETERS may name a"
            f" {kind} secret: MAP {{'TYPE': '{kind}', 'SECRET': '{name}'}})"
        )
    fields = _fields(str(text))
    found = _TYPE_PARAMETER.search(fields.get("metadata_parameters", ""))
    return LakeSecret(
        name=name,
        metadata_path=fields.get("metadata_path", ""),
        metadata_type=found.group(1).lower() if found else None,
        directory=directory,
    )


def _fields(secret_string: str) -> dict[str, str]:
    """DuckDB's ``secret_string`` (``name=x;type=ducklake;…;metadata_path=…``) as a dict; a
    ``;`` inside a value stays in it."""
    parts: list[str] = []
    for part in secret_string.split(";"):
        if parts and not _FIELD.match(part):
            parts[-1] += ";" + part
        else:
            parts.append(part)
    fields = {}
    for part in parts:
        key, _, value = part.partition("=")
        fields[key] = value
    return fields

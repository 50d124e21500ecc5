"""DuckDB connections that never install or load an extension from the network, and write
new files in a storage format every supported DuckDB reads.

DuckDB installs a known extension from its repository the first time a query needs one
(``read_csv('http://…')`` fetches ``httpfs``): a query in an experiment file would then reach
the network, and a store connection would depend on it. Every connection evalkit opens has
automatic installing and loading switched off; the extensions evalkit needs (``parquet``,
``json``, ``icu``) are built into the ``duckdb`` wheel, and the others come from the installed
``duckdb-extension-*`` packages (``evalkit/_extensions.py``).

Installs of evalkit hold different DuckDB releases (the ``ducklake`` extra pins 1.5.5, a base
install takes the newest), and a DuckDB cannot read a file in a newer release's storage
format. Every file evalkit creates is therefore written in a format that the oldest DuckDB
pyproject.toml allows reads (`STORAGE_VERSION`, DuckDB 1.2's), and a file in a format too new
for the installed DuckDB is refused naming both releases (`too_new`); see
docs/pages/design/one-storage-version.md.
"""

from __future__ import annotations

import os
import struct

import duckdb

#: The storage format of every DuckDB file evalkit creates: the one of DuckDB 1.2, which every
#: later release reads and writes on in that format, the oldest release pyproject.toml allows
#: (``duckdb>=1.5.5``) included. DuckDB 2.0 would otherwise write its own format (``latest``),
#: which no 1.x release reads. A file that exists keeps the format it has (DuckDB never lowers it).
STORAGE_VERSION = "v1.2.0"

#: Settings of every DuckDB database evalkit makes: nothing installed or loaded behind its
#: back, and a new file written in `STORAGE_VERSION`.
OFFLINE = {
    "autoinstall_known_extensions": "false",
    "autoload_known_extensions": "false",
    "storage_compatibility_version": STORAGE_VERSION,
}

#: The number in a DuckDB file's header -> the DuckDB release that introduced that storage
#: format (DuckDB's storage_info.cpp; every later release reads it). 64 is what every 1.x
#: release writes by default; 999 is DuckDB 2.0's own format, its default.
_FORMAT_OF = {64: "0.9", 65: "1.2", 66: "1.3", 67: "1.4", 68: "1.5", 999: "2.0"}
#: A release line -> the newest storage number it reads.
_READS_UP_TO = {(1, 2): 65, (1, 3): 66, (1, 4): 67, (1, 5): 68, (2, 0): 999}


def connect_offline(
    database: str = ":memory:", *, read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with `OFFLINE` settings."""
    return duckdb.connect(database, read_only=read_only, config=dict(OFFLINE))


def _file_header(path: str | os.PathLike[str]) -> tuple[int, str] | None:
    """A DuckDB file's storage number and the release that created it (``v2.0.1``), from its
    main header, or None for a file that is not a DuckDB database (or is unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(84)
    except OSError:
        return None
    if len(head) < 20 or head[8:12] != b"DUCK":
        return None
    number = struct.unpack("<Q", head[12:20])[0]
    # Since DuckDB 0.10 the header goes on with flags (4 x 8 bytes), then the creating
    # release's name (32 bytes, NUL-padded).
    created = head[52:84].rstrip(b"\0").decode("ascii", "replace") if len(head) >= 84 else ""
    return number, created


def _release_line(version: str) -> tuple[int, int]:
    parts = [int("".join(c for c in part if c.isdigit()) or 0) for part in version.split(".")]
    return parts[0], parts[1] if len(parts) > 1 else 0


def too_new(path: str | os.PathLike[str]) -> str | None:
    """Why the installed DuckDB cannot read the DuckDB file ``path``, when its storage format
    is newer than the installed release reads; None when it is not (or cannot be told).

    Called after DuckDB refused to open the file: DuckDB decides what it reads, this only
    names the releases and the command that fixes it.
    """
    header = _file_header(path)
    if header is None:
        return None
    number, created = header
    installed = duckdb.__version__
    line = _release_line(installed)
    known = [reads for release, reads in _READS_UP_TO.items() if release <= line]
    if line > max(_READS_UP_TO) or not known or number <= max(known):
        return None
    release = _FORMAT_OF.get(number)
    written = f"DuckDB {release}'s storage format" if release else "a newer DuckDB's storage format"
    upgrade = f"pip install 'duckdb>={release}'" if release else "pip install --upgrade duckdb"
    made = f"; the file was created by DuckDB {created.lstrip('v')}" if created else ""
    return (
        f"it is in {written} (version number {number}{made}), which the installed DuckDB"
        f" {installed} cannot read. Install a DuckDB that reads it: {upgrade} (the ducklake"
        " extra needs DuckDB 1.5.5)"
    )


def store_too_new(path: str | os.PathLike[str]) -> str | None:
    """`too_new` for a score store, with the command that converts it."""
    reason = too_new(path)
    if reason is None:
        return None
    return (
        f"{reason}, or, with that DuckDB, copy its runs into a store that every DuckDB from 1.2"
        f" on reads: evalkit store copy {path} NEW.duckdb"
        " (docs/pages/design/one-storage-version.md)"
    )

"""Each DuckDB extension file's signature checked once per installed file, not at every LOAD.

DuckDB checks an extension's signature at each LOAD by hashing the whole file (35 MB for
``ducklake``): about 0.13 s of CPU an extension, which every process opening a lake paid two or
three times, as much as a shard job's first flushes (benchmark DL2). So before evalkit loads
one of the installed ``duckdb-extension-*`` files, DuckDB checks its signature in a throwaway
database of its own, once: the verdict is kept in evalkit's cache folder under the file's
identity (device, inode, size, modification and change times; a change time cannot be set
back), so a file changed in any way is checked again, and one whose signature fails is never
loaded. Lake connections then load the checked files with ``allow_unsigned_extensions``
(`LAKE_SETTINGS`); a private database (``evalkit sql``, whose user may LOAD with
``--write``) leaves DuckDB's check on. The trust is that given to the installed packages and to
evalkit's cache folder, which holds the verdicts and the links to two of the files
(docs/pages/design/store-location.md).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import duckdb

from evalkit._duckdb import OFFLINE
from evalkit._sql import sql_literal
from evalkit.errors import StoreError

#: Settings of every DuckDB database evalkit makes for a lake: nothing installed or loaded
#: behind its back (:data:`OFFLINE`), and the extension files it checked
#: (:func:`verify_extension`) loaded without DuckDB hashing them again.
LAKE_SETTINGS = {**OFFLINE, "allow_unsigned_extensions": "true"}

_CHECKED: set[tuple[str, tuple[int, ...]]] = set()


def _identity(path: Path) -> tuple[int, ...]:
    found = os.stat(path)
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def extension_cache() -> Path:
    """evalkit's cache folder for the installed DuckDB's extensions."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "evalkit" / "duckdb-extensions" / f"v{duckdb.__version__}"


def verdicts_file() -> Path:
    """Where the checked files' identities are kept."""
    return extension_cache() / "verified.json"


def _read() -> dict[str, list[int]]:
    try:
        known = json.loads(verdicts_file().read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _write(known: dict[str, list[int]]) -> None:
    file = verdicts_file()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_name(f".{file.name}.{uuid.uuid4().hex}")
        temporary.write_text(json.dumps(known))
        os.replace(temporary, file)  # a reader sees the old list or the new one, never half
    except OSError:
        pass  # a read-only home: the file is checked again next time


def verify_extension(path: Path) -> None:
    """Have DuckDB check the signature of the extension file ``path``, unless it checked this
    very file before.

    Raises:
        StoreError: DuckDB refused the file (a bad or missing signature), naming it.
    """
    key, identity = str(path.resolve()), _identity(path)
    if (key, identity) in _CHECKED:
        return
    known = _read()
    if tuple(known.get(key, ())) != identity:
        con = duckdb.connect(":memory:", config=dict(OFFLINE))
        try:
            con.execute(f"LOAD {sql_literal(str(path))}")
        except duckdb.Error as exc:
            raise StoreError(
                f"{path}: DuckDB refused this extension file, so evalkit does not load it: {exc}"
            ) from exc
        finally:
            con.close()
        known[key] = list(identity)
        _write(known)
    _CHECKED.add((key, identity))

"""A DuckLake store's data path: where its Parquet files go, a local folder or an object store.

Shared by the store and the experiment file (which resolves it from the file's folder), so in
the root layer: docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from evalkit.errors import ConfigError

_REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def resolve_data_path(
    data_path: str | os.PathLike[str] | None, *, base: str | os.PathLike[str] | None = None
) -> str | None:
    """A DuckLake data path as DuckLake is given it: an object-store URL as is, a local folder
    absolute (from ``base``, else the working directory) and ending in a separator, so every
    process finds the same folder whatever its working directory."""
    if data_path is None:
        return None
    text = os.fspath(data_path)
    if not text.strip():
        raise ConfigError("store_data_path: must not be empty")
    if _REMOTE.match(text):
        return text if text.endswith("/") else f"{text}/"
    path = Path(text).expanduser()
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    return f"{path.absolute()}{os.sep}"


def is_remote(data_path: str) -> bool:
    """Whether a data path is an object-store or web URL (``s3://``, ``gs://``, ``https://``)."""
    return bool(_REMOTE.match(data_path))

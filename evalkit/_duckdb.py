"""DuckDB connections that never install or load an extension from the network.

DuckDB installs a known extension from its repository the first time a query needs one
(``read_csv('http://…')`` fetches ``httpfs``): a query in an experiment file would then reach
the network, and a store connection would depend on it. Every connection evalkit opens has
automatic installing and loading switched off; the extensions evalkit needs (``parquet``,
``json``, ``icu``) are built into the ``duckdb`` wheel, and the others come from the installed
``duckdb-extension-*`` packages (``evalkit/store/_extensions.py``).
"""

from __future__ import annotations

import duckdb

#: Settings of every DuckDB database evalkit makes: nothing installed or loaded behind its back.
OFFLINE = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


def connect_offline(
    database: str = ":memory:", *, read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with `OFFLINE` settings."""
    return duckdb.connect(database, read_only=read_only, config=dict(OFFLINE))

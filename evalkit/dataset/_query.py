"""A DuckDB query as a dataset: ``select … from read_parquet('s3://…')``, or a ``.duckdb`` file.

The query runs on a fresh connection for each pass (counting, the id check, the rows), so its
result should come in a stable order for the fingerprint and the item indexes to be stable:
a plain scan keeps the order of its files, a join or ``group by`` needs an ``order by``.
Against a database file, the file is opened read-only, so a query cannot change it. See
docs/pages/design/datasets-read-by-duckdb.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from evalkit._duckdb import connect_offline
from evalkit._extensions import has_extension, load_extensions
from evalkit.dataset._duckdb_read import DuckDBSource
from evalkit.errors import DatasetError


class QuerySource(DuckDBSource):
    """The rows of a DuckDB ``SELECT``, optionally against a DuckDB database file.

    Args:
        query: The query; DuckDB's table functions (``read_parquet``, ``read_csv``…) work.
        database: A ``.duckdb`` file the query reads, opened read-only; None for none.
        folder: Where the query's relative file names are looked for (DuckDB's
            ``file_search_path``; an experiment file's folder); None for the working folder.

    Raises:
        DatasetError: The database file is missing or the query fails, naming the query.
    """

    def __init__(
        self,
        query: str,
        *,
        database: str | os.PathLike[str] | None = None,
        folder: str | os.PathLike[str] | None = None,
    ) -> None:
        text = query.strip().rstrip(";").strip()
        if not text:
            raise DatasetError("<query>", "the query is empty")
        self.query = text
        self.database = None if database is None else Path(database)
        if self.database is not None and not self.database.is_file():
            raise DatasetError(str(database), "no such database file")
        self.folder = None if folder is None else str(folder)
        one_line = " ".join(text.split())
        name = one_line if self.database is None else f"{self.database}: {one_line}"
        super().__init__(name, f"({text})", connect=self._open)

    def _open(self) -> duckdb.DuckDBPyConnection:
        if self.database is None:
            con = connect_offline()
        else:
            con = connect_offline(str(self.database), read_only=True)
        if self.folder is not None:
            con.execute("set file_search_path = ?", [self.folder])
        if "://" in self.query and has_extension("httpfs"):
            # Remote files (s3://, https://) need httpfs, which DuckDB would otherwise fetch
            # from the network: it is loaded from its installed package only (evalkit/_duckdb.py).
            load_extensions(con, "httpfs")
        return con

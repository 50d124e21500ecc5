"""SQL text built by hand where DuckDB takes no parameter: identifiers (table, view and
column names) and the string literals of ``ATTACH`` and ``LOAD``. Every value a query can take
as a parameter goes as one; these two are the only ways evalkit writes a name or a string into
SQL text, for every package (the store, the viewer, the dataset readers).
"""

from __future__ import annotations


def quote_ident(name: str) -> str:
    """Quote an SQL identifier (table, view or column name) for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal, for the statements that take no parameters (ATTACH
    and LOAD in DuckDB before 2.0)."""
    return "'" + text.replace("'", "''") + "'"

"""A DuckLake data path on object storage: DuckDB's httpfs loaded, credentials found.

Credentials never go in the experiment file or the store string. DuckDB takes them from its
secrets: a persistent secret whose scope covers the data path (``CREATE PERSISTENT SECRET
(TYPE s3, …)``, kept under ``~/.duckdb/stored_secrets``) is used as it is. Without one, an
``s3://`` data path takes the AWS SDK's environment variables, made into a temporary secret of
the process's database (never written anywhere): ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``) and,
for S3-compatible stores (MinIO, Ceph, R2…), ``AWS_ENDPOINT_URL_S3`` (or ``AWS_ENDPOINT_URL``).
Google Cloud Storage (``gs://``) takes a DuckDB secret (``TYPE gcs``, HMAC keys).

The environment is read again at each use (`refresh_credentials`), not once per process:
a session token that expires in the middle of a long run (CI's OIDC tokens last about an hour)
is replaced by whatever the environment holds at the next flush.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import duckdb

from evalkit._data_path import is_remote
from evalkit._extensions import load_extensions
from evalkit._sql import sql_literal
from evalkit.errors import StoreError

#: The schemes DuckDB's httpfs reads and writes, by the secret type that serves them.
SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "r2": "r2"}

#: The temporary secret made from the environment.
ENV_SECRET = "evalkit_env_s3"


def use_object_store(
    con: duckdb.DuckDBPyConnection, data_path: str, environ: Mapping[str, str] = os.environ
) -> None:
    """Make ``con`` able to read and write ``data_path``: httpfs loaded and, for ``s3://``
    with no DuckDB secret covering it, a temporary secret from the AWS environment variables.

    Raises:
        StoreError: The scheme is not one DuckDB's httpfs serves (naming it and the path).
    """
    scheme = urlsplit(data_path).scheme.lower()
    kind = SCHEMES.get(scheme)
    if kind is None:
        raise StoreError(
            f"store_data_path {data_path!r}: {scheme}:// is not an object store evalkit's"
            f" DuckDB extensions write to; use {', '.join(f'{s}://' for s in SCHEMES)}, or a"
            " local folder"
        )
    load_extensions(con, "httpfs")
    refresh_credentials(con, data_path, environ)


def refresh_credentials(
    con: duckdb.DuckDBPyConnection, data_path: str, environ: Mapping[str, str] = os.environ
) -> None:
    """Make ``con``'s temporary secret for an ``s3://`` ``data_path`` from the AWS variables
    the environment holds now (httpfs loaded already, `use_object_store`); nothing when
    a DuckDB secret of the user's covers the path, or the environment has no key."""
    if SCHEMES.get(urlsplit(data_path).scheme.lower()) != "s3":
        return
    if not environ.get("AWS_ACCESS_KEY_ID"):
        return
    covered = con.execute("SELECT name FROM which_secret(?, 's3')", [data_path]).fetchall()
    if covered and covered[0][0] != ENV_SECRET:
        return  # a DuckDB secret of the user's covers it
    options = {
        "KEY_ID": environ["AWS_ACCESS_KEY_ID"],
        "SECRET": environ.get("AWS_SECRET_ACCESS_KEY", ""),
        "SESSION_TOKEN": environ.get("AWS_SESSION_TOKEN"),
        "REGION": environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION"),
    }
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options["ENDPOINT"] = url.netloc
        options["USE_SSL"] = "true" if url.scheme == "https" else "false"
        options["URL_STYLE"] = "path"  # what S3-compatible servers take
    settings = ", ".join(
        f"{key} {value if key == 'USE_SSL' else sql_literal(value)}"
        for key, value in options.items()
        if value
    )
    con.execute(f"CREATE OR REPLACE TEMPORARY SECRET {ENV_SECRET} (TYPE s3, {settings})")


def lake_data_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The data path of ``con``'s current database, a lake, as its catalog holds it."""
    rows = con.execute(
        "SELECT value FROM ducklake_options(current_database()) WHERE option_name = 'data_path'"
    ).fetchall()
    return str(rows[0][0]) if rows and rows[0][0] else None


def credentials_hint(con: duckdb.DuckDBPyConnection, exc: BaseException) -> str:
    """What to add to ``exc``'s message when it is an object store refusing or not reached
    while ``con``'s lake reads or writes its data path there; else ``""``."""
    text = str(exc)
    if not any(sign in text for sign in ("HTTP", "hostname", "403", "Forbidden", "AccessDenied")):
        return ""
    try:
        data_path = lake_data_path(con)
    except duckdb.Error:
        return ""
    if data_path is None or not is_remote(data_path):
        return ""
    return (
        f"\n(the store's Parquet files are under {data_path}: its credentials come from a"
        " DuckDB secret whose scope covers it, or, for s3://, from AWS_ACCESS_KEY_ID and"
        " AWS_SECRET_ACCESS_KEY, with AWS_ENDPOINT_URL for an S3-compatible server)"
    )

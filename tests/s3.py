"""A throwaway S3-compatible server for tests: moto's server on a free loopback port.

It speaks S3's HTTP API (what DuckDB's httpfs calls), holds its buckets in memory and is
stopped afterwards. Its keys reach DuckDB the way a user's do: through the AWS environment
variables (``AWS_ENDPOINT_URL`` for the server) or a DuckDB secret, never a store string.

One server serves a whole test session (starting one costs about a second); each test has a
bucket of its own (:meth:`S3Server.with_bucket`), so no test sees another's objects.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import boto3  # type: ignore[import-untyped]  # boto3 ships no type stubs
from moto.server import ThreadedMotoServer

BUCKET = "evals"


@dataclass(frozen=True, slots=True)
class S3Server:
    endpoint: str
    key_id: str
    secret: str
    bucket: str = BUCKET

    def _client(self) -> Any:
        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret, region_name="us-east-1",
        )  # fmt: skip

    def with_bucket(self) -> S3Server:
        """This server with a new, empty bucket of its own as :attr:`bucket`."""
        bucket = f"evals-{uuid.uuid4().hex[:12]}"
        self._client().create_bucket(Bucket=bucket)
        return replace(self, bucket=bucket)

    @property
    def url(self) -> str:
        """The bucket's URL, ``s3://BUCKET/``."""
        return f"s3://{self.bucket}/"

    @property
    def environ(self) -> dict[str, str]:
        """The AWS SDK's environment variables that point a client at this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def objects(self, prefix: str = "") -> list[str]:
        """The object keys of the bucket under ``prefix``."""
        pages = (
            self._client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=self.bucket, Prefix=prefix)
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """An S3 server with an empty bucket :data:`BUCKET` (more with :meth:`S3Server.with_bucket`)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        s3 = S3Server(f"http://{host}:{port}", "AKIA" + secrets.token_hex(8).upper(),
                      secrets.token_urlsafe(24))  # fmt: skip
        s3._client().create_bucket(Bucket=BUCKET)
        yield s3
    finally:
        server.stop()

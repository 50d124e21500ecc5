"""A throwaway S3-compatible server for tests: moto's server on a free loopback port.

It speaks S3's HTTP API (what DuckDB's httpfs calls), holds its buckets in memory and is
stopped afterwards. Its keys reach DuckDB the way a user's do: through the AWS environment
variables (``AWS_ENDPOINT_URL`` for the server) or a DuckDB secret, never a store string.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import boto3  # type: ignore[import-untyped]  # boto3 ships no type stubs
from moto.server import ThreadedMotoServer

BUCKET = "evals"


@dataclass(frozen=True, slots=True)
class S3Server:
    endpoint: str
    key_id: str
    secret: str

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
        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
            region_name="us-east-1",
        )
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """An S3 server with an empty bucket :data:`BUCKET`."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        s3 = S3Server(f"http://{host}:{port}", "AKIA" + secrets.token_hex(8).upper(),
                      secrets.token_urlsafe(24))  # fmt: skip
        boto3.client(
            "s3", endpoint_url=s3.endpoint, aws_access_key_id=s3.key_id,
            aws_secret_access_key=s3.secret, region_name="us-east-1",
        ).create_bucket(Bucket=BUCKET)  # fmt: skip
        yield s3
    finally:
        server.stop()

"""A throwaway S3-compatible server for tests: moto's server on a free loopback port.

It speaks S3's HTTP API (what DuckDB's httpfs calls), holds its buckets in memory and is
stopped afterwards. Its keys reach DuckDB the way a user's do: through the AWS environment
variables (``AWS_ENDPOINT_URL`` for the server) or a DuckDB secret, never a store string.

One server serves a whole test session (starting one costs about a second); each test has a
bucket of its own (:meth:`S3Server.with_bucket`), so no test sees another's objects.

moto takes any key. A test that needs a key to stop working (an expired session token) makes
keys of its own (:meth:`S3Server.new_keys`) and revokes them (:meth:`S3Server.revoke`): the
server then answers a request signed with one 403 ``ExpiredToken``, as AWS does.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import boto3  # type: ignore[import-untyped]  # boto3 ships no type stubs
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

BUCKET = "evals"

# The key id of a request signed with AWS Signature 4 (header or presigned URL).
_CREDENTIAL = re.compile(r"Credential=([^/,\s&]+)")

_EXPIRED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ExpiredToken</Code>'
    b"<Message>The provided token has expired.</Message></Error>"
)


class _Revoking:
    """moto's WSGI app, answering 403 to a request signed with a revoked key."""

    def __init__(self, app: Callable[..., Iterable[bytes]], revoked: set[str]) -> None:
        self.app = app
        self.revoked = revoked

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        signed = environ.get("HTTP_AUTHORIZATION", "") + " " + environ.get("QUERY_STRING", "")
        found = _CREDENTIAL.search(signed.replace("%2F", "/"))
        if found and found.group(1) in self.revoked:
            start_response(
                "403 Forbidden",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(_EXPIRED)))],
            )
            return [_EXPIRED]
        return self.app(environ, start_response)


class _Server(ThreadedMotoServer):
    """moto's threaded server with :class:`_Revoking` in front of its app."""

    def __init__(self, revoked: set[str]) -> None:
        super().__init__(ip_address="127.0.0.1", port=0, verbose=False)
        self.revoked = revoked

    def _server_entry(self) -> None:
        app = _Revoking(DomainDispatcherApplication(create_backend_app), self.revoked)
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()


@dataclass(frozen=True, slots=True)
class S3Server:
    endpoint: str
    key_id: str
    secret: str
    bucket: str = BUCKET
    #: Key ids the server refuses (shared by every copy of this server's handle).
    revoked: set[str] = field(default_factory=set, compare=False)

    def new_keys(self) -> tuple[str, str]:
        """A key id and secret of their own (moto takes any), for a test to revoke."""
        return "AKIA" + secrets.token_hex(8).upper(), secrets.token_urlsafe(24)

    def revoke(self, key_id: str) -> None:
        """Refuse every later request signed with ``key_id`` (403 ``ExpiredToken``)."""
        self.revoked.add(key_id)

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
    revoked: set[str] = set()
    server = _Server(revoked)
    server.start()
    try:
        host, port = server.get_host_and_port()
        s3 = S3Server(f"http://{host}:{port}", "AKIA" + secrets.token_hex(8).upper(),
                      secrets.token_urlsafe(24), revoked=revoked)  # fmt: skip
        s3._client().create_bucket(Bucket=BUCKET)
        yield s3
    finally:
        server.stop()

"""A throwaway PostgreSQL server for tests: ``initdb`` and ``pg_ctl`` in a temporary folder.

The server listens on a free loopback port (and a unix socket in the same folder), holds one
database, and is stopped and deleted afterwards. Its password is random and reaches clients
through ``PGPASSWORD`` only (libpq, and so DuckDB's postgres extension, reads it from the
environment), never through a connection string that a store, a log or a report could keep.

PostgreSQL refuses to run as root, and CI containers usually are root: there the server runs
as an unprivileged user (``postgres`` when the Debian package created it, else ``nobody``)
through ``subprocess``'s ``user=``/``group=``, which needs neither ``runuser`` nor ``sudo``.
Without server binaries (``initdb``, ``pg_ctl`` on ``PATH`` or under
``/usr/lib/postgresql/<version>/bin``) the fixture skips, saying so; any other failure fails
the test with the server's log.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

DEBIAN_BIN_DIRS = "/usr/lib/postgresql"
DATABASE = "evalkit_test"
USER = "evalkit"
_START_ATTEMPTS = 3


class NoPostgres(Exception):
    """No PostgreSQL server binaries on this machine."""


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A running server: connect with :attr:`dsn` and ``PGPASSWORD`` = :attr:`password`."""

    host: str
    port: int
    dbname: str
    user: str
    password: str
    socket_dir: Path
    bin_dir: Path

    @property
    def dsn(self) -> str:
        """A libpq connection string without the password (it comes from ``PGPASSWORD``)."""
        return self.dsn_of(self.dbname)

    def dsn_of(self, dbname: str) -> str:
        """The connection string of another database of this server."""
        return f"dbname={dbname} host={self.host} port={self.port} user={self.user}"

    def create_database(self, dbname: str) -> str:
        """Create another database (an empty catalog); returns its connection string."""
        done = subprocess.run(
            [str(self.bin_dir / "createdb"), "-h", self.host, "-p", str(self.port), "-U",
             self.user, dbname],
            env={**os.environ, "PGPASSWORD": self.password}, check=False, capture_output=True,
            text=True,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"createdb {dbname} failed: {done.stderr}")
        return self.dsn_of(dbname)

    def stop(self) -> None:
        """Stop the server (``pg_ctl stop``, its default fast mode), as an outage does: its
        clients' connections drop and new ones are refused until :meth:`start`. Not
        ``-m immediate``: with this throwaway server's durability off, that crash loses the
        last commits, which a real server keeps."""
        _Runner(self.bin_dir, _server_user(), self.password)(
            "pg_ctl", "stop", "-D", str(self.socket_dir / "data"), "-m", "fast", "-w"
        )

    def start(self) -> None:
        """Start the server again after :meth:`stop`, on its own port, with its databases."""
        _Runner(self.bin_dir, _server_user(), self.password)(
            "pg_ctl", "start", "-D", str(self.socket_dir / "data"),
            "-l", str(self.socket_dir / "server.log"), "-w", "-t", "60",
            "-o", _options(self.port, self.socket_dir),
        )  # fmt: skip

    def with_database(self) -> PostgresServer:
        """This server with a new, empty database of its own as :attr:`dbname`."""
        dbname = f"test_{uuid.uuid4().hex[:12]}"
        self.create_database(dbname)
        return replace(self, dbname=dbname)


def find_bin_dir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``: ``PATH`` first, then Debian's newest
    ``/usr/lib/postgresql/<version>/bin``.

    Raises:
        NoPostgres: Neither has them.
    """
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    versions = sorted(
        (p for p in Path(DEBIAN_BIN_DIRS).glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if versions and (versions[-1] / "pg_ctl").exists():
        return versions[-1]
    raise NoPostgres(
        "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or under"
        f" {DEBIAN_BIN_DIRS}/<version>/bin: install them (Debian: apt-get install postgresql)"
    )


def _server_user() -> tuple[int, int] | None:
    """The (uid, gid) the server runs as when this process is root, else ``None``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise RuntimeError("running as root, and neither a postgres nor a nobody user exists")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class _Runner:
    """Runs the server's commands as the server's user, with a clean libpq environment."""

    def __init__(self, bin_dir: Path, ids: tuple[int, int] | None, password: str) -> None:
        self.bin_dir = bin_dir
        self.ids = ids
        # Only what the tools need: no PG* variables of the caller's leak in.
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "PGPASSWORD": password,
        }

    def __call__(self, tool: str, *args: str, check: bool = True) -> str:
        command = [str(self.bin_dir / tool), *args]
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
            timeout=120,
            cwd="/",
            user=self.ids[0] if self.ids else None,
            group=self.ids[1] if self.ids else None,
            extra_groups=[] if self.ids else None,
        )
        if check and proc.returncode:
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr or proc.stdout}")
        return proc.stdout


@contextmanager
def postgres_server(bin_dir: Path | None = None) -> Iterator[PostgresServer]:
    """Start a throwaway server with one database, yield it, stop it and delete its folder.

    Args:
        bin_dir: The folder of ``initdb`` and ``pg_ctl`` (default: :func:`find_bin_dir`).

    Raises:
        NoPostgres: No server binaries on this machine.
        RuntimeError: The server did not start (its log is in the message).
    """
    bin_dir = bin_dir or find_bin_dir()
    ids = _server_user()
    password = secrets.token_urlsafe(18)
    # Not under pytest's tmp_path: its parents are private to root, the server's user must
    # reach its own folder.
    base = tempfile.gettempdir()
    if ids and not os.stat(base).st_mode & 0o001:
        base = "/tmp"  # a private TMPDIR the server's user could not enter
    folder = Path(tempfile.mkdtemp(prefix="evalkit-pg-", dir=base))
    run = _Runner(bin_dir, ids, password)
    try:
        data, log, pwfile = folder / "data", folder / "server.log", folder / "pwfile"
        pwfile.write_text(password + "\n")
        pwfile.chmod(0o600)
        if ids:
            os.chown(folder, *ids)
            os.chown(pwfile, *ids)
        run("initdb", "-D", str(data), "-U", USER, "--pwfile", str(pwfile), "--auth",
            "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync")  # fmt: skip
        pwfile.unlink()
        port = _start(run, data, folder, log)
        try:
            run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", USER, DATABASE)
            yield PostgresServer("127.0.0.1", port, DATABASE, USER, password, folder, bin_dir)
        finally:
            run("pg_ctl", "stop", "-D", str(data), "-m", "immediate", "-w", check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _options(port: int, folder: Path) -> str:
    """The server's options: its port and socket folder; a throwaway server, so durability
    off for speed."""
    return (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        " -c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
    )


def _start(run: _Runner, data: Path, folder: Path, log: Path) -> int:
    """Start the server on a free port (another port if that one was taken meanwhile)."""
    for attempt in range(_START_ATTEMPTS):
        port = _free_port()
        try:
            run("pg_ctl", "start", "-D", str(data), "-l", str(log), "-w", "-t", "60",
                "-o", _options(port, folder))  # fmt: skip
            return port
        except RuntimeError:
            if attempt == _START_ATTEMPTS - 1:
                text = log.read_text() if log.exists() else "(no log)"
                raise RuntimeError(f"PostgreSQL did not start; its log:\n{text}") from None
    raise AssertionError("unreachable")

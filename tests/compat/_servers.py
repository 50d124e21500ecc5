"""The two real model servers of the compatibility suite, started on loopback with the model.

``tests/compat/install.sh PREFIX`` puts what they need under ``PREFIX`` (the
``EVALKIT_COMPAT_PREFIX`` variable, default ``~/.cache/evalkit-compat``):
``bin/llama-server``, ``venv/bin/python`` with ``llama_cpp`` installed, and
``models/gemma-3-270m-q4_k_m.gguf``. Each server is started as a child process with an API key
(so a wrong key can be tried), a free port and its log in a file, and stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PREFIX_ENV = "EVALKIT_COMPAT_PREFIX"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_ALIAS = "gemma-3-270m"
API_KEY = "compat-suite-key"
KEY_ENV = "EVALKIT_COMPAT_KEY"
SLOTS = 4
# llama-server splits its context between its slots: 4 x 2,048 tokens. llama-cpp-python serves
# one request at a time with the whole context.
SLOT_CONTEXT = 2048
STARTUP_TIMEOUT_S = 180.0
SERVER_NAMES = ("llama-server", "llama-cpp-python")


class CompatSetupError(RuntimeError):
    """What the suite needs is not installed, or a server did not come up."""


@dataclass(frozen=True, slots=True)
class Installed:
    """Where install.sh put the servers and the model."""

    prefix: Path
    llama_server: Path
    python: Path
    model: Path

    @classmethod
    def find(cls) -> Installed:
        prefix = Path(
            os.environ.get(PREFIX_ENV) or Path.home() / ".cache" / "evalkit-compat"
        ).expanduser()
        found = cls(
            prefix=prefix,
            llama_server=prefix / "bin" / "llama-server",
            python=prefix / "venv" / "bin" / "python",
            model=prefix / "models" / MODEL_FILE,
        )
        missing = [
            str(p) for p in (found.llama_server, found.python, found.model) if not p.exists()
        ]
        if missing:
            raise CompatSetupError(
                f"the compatibility suite needs {', '.join(missing)}: run "
                f"`tests/compat/install.sh {prefix}` (or set {PREFIX_ENV} to where it installed)"
            )
        return found


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A model server the suite started: where to reach it and what it is."""

    name: str
    base_url: str
    api_key: str
    model: str
    version: str
    command: tuple[str, ...]
    log: Path
    notes: dict[str, str] = field(default_factory=dict)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def llama_server_command(installed: Installed, port: int) -> list[str]:
    return [
        str(installed.llama_server),
        "--model", str(installed.model),
        "--alias", MODEL_ALIAS,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--parallel", str(SLOTS),
        "--ctx-size", str(SLOTS * SLOT_CONTEXT),
        "--threads", "2",
        "--api-key", API_KEY,
    ]  # fmt: skip


def llama_cpp_python_command(installed: Installed, port: int) -> list[str]:
    return [
        str(installed.python), "-m", "llama_cpp.server",
        "--model", str(installed.model),
        "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(SLOT_CONTEXT),
        "--n_threads", "2",
        "--api_key", API_KEY,
    ]  # fmt: skip


def server_version(name: str, installed: Installed) -> str:
    """The server's version as it reports it (and, for llama-server, the sdist it came from)."""
    if name == "llama-server":
        proc = subprocess.run(
            [str(installed.llama_server), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if "version" in line]
        source = installed.prefix / "bin" / "llama-server.source"
        built_from = ""
        if source.exists():
            built_from = f" (built from the PyPI sdist {source.read_text().strip()})"
        reported = lines[0].strip().removeprefix("version: ") if lines else "unknown"
        return f"llama-server {reported}{built_from}"
    proc = subprocess.run(
        [str(installed.python), "-c", "import llama_cpp; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return f"llama-cpp-python {proc.stdout.strip() or 'unknown'}"


def _wait_until_up(base_url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    request = urllib.request.Request(
        f"{base_url}/models", headers={"Authorization": f"Bearer {API_KEY}"}
    )
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CompatSetupError(
                f"the server exited with {proc.returncode} while starting; its log ({log}) "
                f"ends with:\n{_tail(log)}"
            )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise CompatSetupError(
        f"the server did not answer in {STARTUP_TIMEOUT_S:.0f} s; its log ({log}) ends with:\n"
        f"{_tail(log)}"
    )


def _tail(log: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


@contextlib.contextmanager
def running_server(name: str, installed: Installed, log_dir: Path) -> Iterator[RunningServer]:
    """Starts ``name`` ("llama-server" or "llama-cpp-python"), waits until it answers
    ``GET /v1/models``, yields it, then stops it (SIGTERM, then SIGKILL after 10 s)."""
    port = free_port()
    if name == "llama-server":
        command = llama_server_command(installed, port)
    elif name == "llama-cpp-python":
        command = llama_cpp_python_command(installed, port)
    else:
        raise ValueError(f"unknown server {name!r}; expected one of {SERVER_NAMES}")
    log = log_dir / f"{name}.log"
    base_url = f"http://127.0.0.1:{port}/v1"
    # Both servers use OpenMP; its threads spin while they wait, which on a busy machine (other
    # processes on the same cores) made prompt processing 50x slower (1.7 against 90 tokens/s
    # measured here). Passive waiting costs nothing when the machine is quiet.
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_until_up(base_url, proc, log)
        yield RunningServer(
            name=name,
            base_url=base_url,
            api_key=API_KEY,
            model=MODEL_ALIAS,
            version=server_version(name, installed),
            command=tuple(command),
            log=log,
            notes={
                "slots": str(SLOTS if name == "llama-server" else 1),
                "context": str(SLOT_CONTEXT),
            },
        )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

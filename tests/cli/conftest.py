from __future__ import annotations

import contextlib
import io
import locale
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pytest


@dataclass(frozen=True)
class Completed:
    code: int
    stdout: str
    stderr: str


Cli = Callable[..., Completed]

#: What ``python -m evalkit`` exits with after a Ctrl-C it could not handle (``__main__``).
_EXIT_INTERRUPTED = 130
#: The handlers a command may replace: put back after each in-process call.
_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)
#: How long a non-daemon thread a command leaves behind may take to end: a process would
#: wait for it before exiting.
_THREAD_GRACE = 60.0


def _without_openai_keys(env_extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env.update(env_extra or {})
    return env


@contextlib.contextmanager
def _process_like(cwd: Path, env_extra: dict[str, str] | None) -> Iterator[None]:
    """This process's cwd, environment, standard streams, signal handlers and warning filters
    set up as a fresh ``python -m evalkit`` child of the test would see them, and all put back
    afterwards."""
    saved_cwd = os.getcwd()
    saved_env = dict(os.environ)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_signals = {}
    if threading.current_thread() is threading.main_thread():  # elsewhere none can be set
        saved_signals = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    with warnings.catch_warnings():
        _interpreter_warning_filters()
        try:
            os.chdir(cwd)
            env = _without_openai_keys(env_extra)  # read before the environment is cleared
            os.environ.clear()
            os.environ.update(env)
            # A child's stdout is a pipe, so Python sizes it 80x24 (argparse's help, the progress
            # bar), whatever terminal the test runs in.
            os.environ.setdefault("COLUMNS", "80")
            os.environ.setdefault("LINES", "24")
            yield
        finally:
            for signum, handler in saved_signals.items():
                if handler is not None:  # None: set from outside Python, cannot be put back
                    signal.signal(signum, handler)
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            os.environ.clear()
            os.environ.update(saved_env)
            os.chdir(saved_cwd)


def _interpreter_warning_filters() -> None:
    """The warning filters a fresh interpreter starts with, in place of the suite's ``error``: a
    library's warning (aiohttp's ResourceWarning on a 1 MB judge prompt) is not an exception in
    a user's ``evalkit run``, so it must not be one here either."""
    warnings.resetwarnings()
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    for ignored in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", ignored, append=True)


def _pipe(encoding: str, errors: str) -> io.TextIOWrapper:
    """A stream such as a child's stdout or stderr is when piped: not a terminal, the locale's
    encoding (``errors`` as Python sets it for that stream), block-buffered."""
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=errors, newline="")


def _read(stream: io.TextIOWrapper, encoding: str) -> str:
    """What ``subprocess.run(..., text=True)`` returns for what was written: decoded with the
    locale's encoding and universal newlines (a progress bar's ``\\r`` becomes ``\\n``)."""
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    text = buffer.getvalue().decode(encoding)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _exit_code(exc: SystemExit, stderr: io.TextIOWrapper) -> int:
    """The exit code the interpreter makes of a ``SystemExit`` (a message goes to stderr)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=stderr)
    return 1


#: Where the interpreter's and the installed libraries' modules live (and evalkit's own).
_INSTALLED = tuple(
    str(Path(folder).resolve())
    for folder in (sys.prefix, sys.base_prefix, Path(__file__).resolve().parents[2] / "evalkit")
)


def _forget_user_modules(before: set[str]) -> None:
    """Unload the modules the command imported from outside the installed libraries (an
    experiment's ``app.py``, ``my_scorers.py``): a fresh process would import the ones the
    next test writes, under the same names, instead of reusing these."""
    for name in set(sys.modules) - before:
        file = getattr(sys.modules[name], "__file__", None)
        if file is not None and not str(Path(file).resolve()).startswith(_INSTALLED):
            del sys.modules[name]


def _join_threads(before: set[threading.Thread]) -> None:
    """Wait, as a process's exit would, for the non-daemon threads the command started."""
    for thread in set(threading.enumerate()) - before:
        if not thread.daemon:
            thread.join(_THREAD_GRACE)
            assert not thread.is_alive(), f"the command left thread {thread.name} running"


def run_cli(*args: str, cwd: Path, env_extra: dict[str, str] | None = None) -> Completed:
    """Run ``evalkit ARGS`` in ``cwd`` without OpenAI keys: ``evalkit.cli.main`` called in this
    process, showing what ``python -m evalkit`` with piped output would (its exit code, its
    stdout and stderr, a traceback for an exception that escapes ``main``), at no start-up cost.

    Use :func:`run_cli_process` where a test is about the process itself (signals, kills, locks
    held by another process, what a fresh interpreter imports, the entry points)."""
    encoding = locale.getpreferredencoding(False)  # what the parent decodes a pipe with
    # PYTHONIOENCODING=ENCODING[:ERRORS] sets the child's streams, as Python documents it.
    wanted, _, errors = (env_extra or {}).get("PYTHONIOENCODING", "").partition(":")
    stdout = _pipe(wanted or encoding, errors or "strict")
    stderr = _pipe(wanted or encoding, "backslashreplace")
    threads = set(threading.enumerate())
    modules = set(sys.modules)
    with _process_like(cwd, env_extra):
        sys.stdin = io.StringIO("")  # the child inherited the test's stdin, which has no input
        sys.stdout, sys.stderr = stdout, stderr
        try:
            from evalkit.cli import main

            code = main(list(args))
        except SystemExit as exc:
            code = _exit_code(exc, stderr)
        except KeyboardInterrupt:  # as ``evalkit/__main__.py`` handles it
            code = _EXIT_INTERRUPTED
        except Exception:  # the interpreter prints what escapes ``main`` and exits 1
            traceback.print_exc(file=stderr)
            code = 1
        _join_threads(threads)
        _forget_user_modules(modules)
    return Completed(code, _read(stdout, encoding), _read(stderr, encoding))


def run_cli_process(*args: str, cwd: Path, env_extra: dict[str, str] | None = None) -> Completed:
    """Run the real ``python -m evalkit`` in a subprocess, in ``cwd``, without OpenAI keys."""
    return run_command([sys.executable, "-m", "evalkit", *args], cwd=cwd, env_extra=env_extra)


def run_command(
    command: list[str], *, cwd: Path, env_extra: dict[str, str] | None = None
) -> Completed:
    """Run ``command`` (an evalkit entry: ``python -m evalkit``, the installed ``evalkit``) in
    a subprocess, in ``cwd``, without OpenAI keys."""
    done = subprocess.run(
        command,
        cwd=cwd,
        env=_without_openai_keys(env_extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Completed(done.returncode, done.stdout, done.stderr)


def start_cli(
    *args: str, cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start the real ``python -m evalkit`` without OpenAI keys, in a session of its own (so
    a signal can be sent to its whole process group), its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "evalkit", *args],
        cwd=cwd,
        env=_without_openai_keys(env_extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Run ``evalkit`` in this process (see :func:`run_cli`), in ``tmp_path`` by default."""

    def run(*args: str, cwd: Path = tmp_path, env_extra: dict[str, str] | None = None) -> Completed:
        return run_cli(*args, cwd=cwd, env_extra=env_extra)

    return run


@pytest.fixture
def cli_process(tmp_path: Path) -> Cli:
    """Run the real ``python -m evalkit`` in a subprocess, in ``tmp_path`` by default."""

    def run(*args: str, cwd: Path = tmp_path, env_extra: dict[str, str] | None = None) -> Completed:
        return run_cli_process(*args, cwd=cwd, env_extra=env_extra)

    return run


def write_dataset(path: Path, *, wrong: int = 0, rows: int = 60, hostile: bool = False) -> Path:
    """``rows`` questions whose output equals the ground truth, except the first ``wrong``."""
    data = {
        "id": [f"q{i:03d}" for i in range(rows)],
        "input": [f"What is {i} + {i}?" for i in range(rows)],
        "groundTruth": [str(2 * i) for i in range(rows)],
        "output": [str(2 * i + 1) if i < wrong else str(2 * i) for i in range(rows)],
    }
    if hostile:
        data["output"][0] = "<script>alert('pwned')</script>"
    pd.DataFrame(data).to_parquet(path)
    return path


def write_experiment(
    folder: Path,
    *,
    name: str = "nightly",
    dataset: str = "data.parquet",
    threshold: float = 0.5,
    extra: str = "",
) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f"""
[experiment]
name = "{name}"
dataset = "{dataset}"
store = "evalkit.duckdb"
concurrency = 4

[[scorers]]
use = "exact_match"
id = "exact"
threshold = {threshold}

[[scorers]]
use = "token_f1"

[regression]
baseline = "latest"
max_drop = 0.02
{extra}
""",
        encoding="utf-8",
    )
    return path


def wait_for(
    check: Callable[[], bool],
    what: str,
    child: subprocess.Popen[str] | None = None,
    *,
    timeout: float = 90,
) -> None:
    """Until ``check()`` holds (the store may be busy being written: try again), failing if
    ``child`` ends first or after ``timeout`` seconds (far above a loaded machine's need)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child is not None and child.poll() is not None:
            pytest.fail(f"the run ended before {what}: {child.communicate()}")
        try:
            if check():
                return
        except (duckdb.Error, OSError):
            pass
        time.sleep(0.1)
    if child is not None:
        os.killpg(child.pid, signal.SIGKILL)
    pytest.fail(f"no {what} within {timeout:g} s")

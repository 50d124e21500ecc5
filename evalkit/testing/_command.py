"""One command run while the local server is up: ``python -m evalkit.testing.server ... -- CMD``.

The command gets the server's address in its environment (`URL_ENV` and
``OPENAI_BASE_URL``, with a key in `KEY_ENV` and ``OPENAI_API_KEY``, so a plain
``openai`` client talks to the server too), runs with the server's standard streams, and its
exit code becomes the server's; the server stops once it has exited.

Signals: a Ctrl-C at a terminal reaches every process of the foreground group, the command
included, so the server only waits for the command to finish. A SIGINT sent to the server
process alone (no terminal, or the server is not in the terminal's foreground group) and
every SIGTERM are forwarded to the command, which decides how to stop.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence

import anyio

#: The variable holding the server's base URL (``http://127.0.0.1:PORT/v1``) in the command.
URL_ENV = "EVALKIT_TEST_SERVER_URL"
#: The variable holding the API key the server accepts (``--api-key``, else a placeholder).
KEY_ENV = "EVALKIT_TEST_SERVER_KEY"
#: The key exported when the server takes any key.
ANY_KEY = "evalkit-test"

# The exit codes of a shell that cannot run a command.
_NOT_EXECUTABLE = 126
_NOT_FOUND = 127


def command_environment(
    base_url: str, api_key: str | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``environ`` (the current environment by default) plus the server's address and key."""
    env = dict(os.environ if environ is None else environ)
    key = api_key or ANY_KEY
    env.update(
        {URL_ENV: base_url, "OPENAI_BASE_URL": base_url, KEY_ENV: key, "OPENAI_API_KEY": key}
    )
    return env


def _terminal_sends_ctrl_c() -> bool:
    """Whether this process is in the foreground group of its terminal, so that a Ctrl-C
    typed there reaches the command (same group) without being forwarded."""
    for stream in (sys.stdin, sys.stderr, sys.stdout):
        try:
            fd = stream.fileno()
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except (AttributeError, OSError, ValueError):
            continue
    return False


def exit_code_of(returncode: int) -> int:
    """A child's return code as a shell reports it: ``128 + N`` for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


async def run_command(command: Sequence[str], env: Mapping[str, str], *, prog: str) -> int:
    """Run ``command`` with ``env`` and the standard streams inherited; its exit code.

    Signals are handled as the module docstring says. A command that cannot be started
    gives 127 (not found) or 126 (not executable), as a shell does, with a message on stderr.
    """
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        try:
            process = await anyio.open_process(
                list(command), stdin=None, stdout=None, stderr=None, env=dict(env)
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"{prog}: error: cannot run {command[0]!r}: {reason}", file=sys.stderr)
            return _NOT_FOUND if isinstance(exc, FileNotFoundError) else _NOT_EXECUTABLE

        async def forward() -> None:
            async for signum in signals:
                if signum == signal.SIGINT and _terminal_sends_ctrl_c():
                    continue
                if process.returncode is None:
                    process.send_signal(signum)

        async with process, anyio.create_task_group() as group:
            group.start_soon(forward)
            returncode = await process.wait()
            group.cancel_scope.cancel()
    return exit_code_of(returncode)

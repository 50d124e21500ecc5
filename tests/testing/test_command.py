"""``python -m evalkit.testing.server ... -- COMMAND``: one command run while the server is up."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

SERVER = [sys.executable, "-m", "evalkit.testing.server", "--port", "0"]

# The child asks the server with the URL and key it was given, then records what it saw.
CHILD = """
import json, os, sys
import httpx2
url = os.environ["EVALKIT_TEST_SERVER_URL"]
body = {"model": "m", "messages": [{"role": "user", "content": "the magic word"}]}
answer = httpx2.post(
    url + "/chat/completions", json=body,
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}, timeout=60,
).json()
seen = {name: os.environ.get(name) for name in (
    "EVALKIT_TEST_SERVER_URL", "OPENAI_BASE_URL", "EVALKIT_TEST_SERVER_KEY", "OPENAI_API_KEY",
    "KEPT")}
seen["content"] = answer["choices"][0]["message"]["content"]
print(json.dumps(seen))
sys.exit(int(sys.argv[1]))
"""

# The child says it is ready, then waits to be stopped, saying how.
# The command's handlers are in place before it says it is ready: a SIGINT landing between
# "ready" and a ``try:`` raised KeyboardInterrupt outside it (about 1 run in 3 on a busy
# machine). It first checks that it got Ctrl-C as a program started from a shell does.
WAITER = """
import signal, sys, time
if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
    print("child: SIGINT is not Python's default handler", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, lambda *_: (print("child: terminated", flush=True), sys.exit(7)))
signal.signal(signal.SIGINT, lambda *_: (print("child: interrupted", flush=True), sys.exit(130)))
print("child: ready", flush=True)
time.sleep(60)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "EVALKIT_TEST"))}
    return {**env, "KEPT": "yes"}


def _refused(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex((parts.hostname or "", parts.port or 0)) != 0


@pytest.mark.parametrize("code", [0, 3])
def test_the_command_gets_the_url_and_its_exit_code_is_the_servers(
    tmp_path: Path, code: int
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"match": "magic word", "reply": "please"}]), encoding="utf-8")
    done = subprocess.run(
        [
            *SERVER,
            "--api-key",
            "k-123",
            "--rules",
            str(rules),
            "--",
            sys.executable,
            "-c",
            CHILD,
            str(code),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        check=False,
    )
    assert done.returncode == code, done.stderr
    seen = json.loads(done.stdout)  # the server's own line went to stderr
    url = seen["EVALKIT_TEST_SERVER_URL"]
    assert url.startswith("http://127.0.0.1:")
    assert url.endswith("/v1")
    assert seen["OPENAI_BASE_URL"] == url
    assert seen["EVALKIT_TEST_SERVER_KEY"] == seen["OPENAI_API_KEY"] == "k-123"
    assert seen["KEPT"] == "yes"
    assert seen["content"] == "please"
    assert f"evalkit test server listening on {url}" in done.stderr
    assert _refused(url)  # stopped once the command had exited


def test_without_an_api_key_the_command_gets_a_placeholder_key() -> None:
    done = subprocess.run(
        [*SERVER, "--", sys.executable, "-c", CHILD, "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["OPENAI_API_KEY"] == seen["EVALKIT_TEST_SERVER_KEY"] == "evalkit-test"


@pytest.mark.parametrize(
    ("command", "code", "message"),
    [
        ([], 2, "error: nothing to run after --"),
        (["evalkit-no-such-command"], 127, "cannot run 'evalkit-no-such-command'"),
    ],
)
def test_a_command_that_cannot_run_is_a_clear_error(
    command: list[str], code: int, message: str
) -> None:
    done = subprocess.run(
        [*SERVER, "--", *command], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == code
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_rules_file_stops_before_the_command_runs(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text('[{"reply": "a"}, {"fault": {"http": 700}}]', encoding="utf-8")
    marker = tmp_path / "ran"
    done = subprocess.run(
        [
            *SERVER,
            "--rules",
            str(rules),
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w').close()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"python -m evalkit.testing.server: error: {rules}: rules[1].fault.http: "
        "expected an HTTP status from 400 to 599, got 700\n"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("signum", "said", "code"),
    [(signal.SIGINT, "child: interrupted", 130), (signal.SIGTERM, "child: terminated", 7)],
)
def test_a_signal_to_the_server_alone_is_forwarded_to_the_command(
    signum: signal.Signals, said: str, code: int
) -> None:
    # A session of its own: no terminal, so a SIGINT to the server is not also the command's.
    proc = subprocess.Popen(
        [*SERVER, "--", sys.executable, "-c", WAITER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        listening = proc.stderr.readline()
        url = listening.rsplit(" ", 1)[1].strip()
        assert proc.stdout.readline() == "child: ready\n"
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert stdout == f"{said}\n"
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    assert _refused(url)


def test_a_command_killed_by_a_signal_exits_as_a_shell_says() -> None:
    kill_self = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    done = subprocess.run(
        [*SERVER, "--", sys.executable, "-c", kill_self],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr

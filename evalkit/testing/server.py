"""``python -m evalkit.testing.server``: run the local OpenAI-compatible test server.

Example: ``python -m evalkit.testing.server --port 8000 --latency 0.05``. It prints the base URL
once it listens, then serves until SIGINT/SIGTERM. ``--rules FILE.json`` scripts replies and
faults (see ``_rules_file.py``). With a command after ``--``
(``python -m evalkit.testing.server --port 0 -- evalkit run x.toml``) it serves
while that command runs, exports its URL to it and exits with its exit code (see
``_command.py``). See [`evalkit.testing.FakeOpenAIServer`][evalkit.testing.FakeOpenAIServer].
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

import anyio

from evalkit.testing._command import KEY_ENV, URL_ENV, command_environment, run_command
from evalkit.testing._profiles import PROFILES
from evalkit.testing._rules import Fault, RateLimitPolicy, Rule
from evalkit.testing._rules_file import RulesFileError, load_rules
from evalkit.testing._server import FakeOpenAIServer

PROG = "python -m evalkit.testing.server"

_FAULTS = {
    "500": Fault.http(500),
    "503": Fault.http(503),
    "429": None,  # built from --retry-after
    "malformed": Fault.malformed_body(),
    "hang": Fault.hang(),
    "disconnect": Fault.disconnect(),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [options] [-- COMMAND [ARG ...]]",
        description="Run evalkit's local OpenAI-compatible test server until interrupted, or "
        "while COMMAND runs.",
        epilog=f"With -- COMMAND, the server runs COMMAND with {URL_ENV} and OPENAI_BASE_URL "
        f"set to its base URL and {KEY_ENV} and OPENAI_API_KEY to its key, stops when it "
        "exits and exits with its exit code.",
    )
    parser.add_argument(
        "--rules",
        metavar="FILE",
        default=None,
        help="a JSON list of rules scripting replies and faults, tried in order",
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="openai",
        help="answer as this server does (formats, length field, errors, usage)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument("--fault", choices=sorted(_FAULTS), help="fault injected at --fault-rate")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of faulty requests")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After of 429s")
    parser.add_argument("--seed", type=int, default=None, help="seed of the fault draws")
    parser.add_argument("--cost-per-token", type=float, default=None, help="report usage.cost")
    parser.add_argument("--cache-ratio", type=float, default=0.0, help="cached prompt share")
    parser.add_argument("--reasoning-tokens", type=int, default=0, help="per reply")
    parser.add_argument("--limit-requests", type=int, default=None, help="requests per window")
    parser.add_argument("--limit-tokens", type=int, default=None, help="tokens per window")
    parser.add_argument("--limit-window", type=float, default=60.0, help="window in seconds")
    parser.add_argument(
        "--batch-delay", type=float, default=0.0, help="seconds before a batch can complete"
    )
    parser.add_argument(
        "--batch-errors-in",
        choices=["error_file", "output_file"],
        default="error_file",
        help="where a batch puts requests answered with an HTTP error",
    )
    return parser


def _split(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """The server's options and the command after the first ``--`` (None without one)."""
    if "--" not in argv:
        return list(argv), None
    at = list(argv).index("--")
    return list(argv[:at]), list(argv[at + 1 :])


async def _serve(args: argparse.Namespace, rules: list[Rule], command: list[str] | None) -> int:
    if args.fault and args.fault_rate > 0:
        # First, so --fault-rate is a share of every request, scripted or not.
        fault = _FAULTS[args.fault] or Fault.rate_limit(args.retry_after)
        rules = [Rule(fault=fault, probability=args.fault_rate), *rules]
    server = FakeOpenAIServer(
        rules,
        host=args.host,
        port=args.port,
        latency=args.latency,
        api_key=args.api_key,
        seed=args.seed,
        cache_ratio=args.cache_ratio,
        reasoning_tokens=args.reasoning_tokens,
        cost_per_token=args.cost_per_token,
        rate_limit=(
            RateLimitPolicy(args.limit_requests, args.limit_tokens, args.limit_window)
            if args.limit_requests or args.limit_tokens
            else None
        ),
        batch_delay=args.batch_delay,
        batch_errors_in=args.batch_errors_in,
        profile=args.profile,
    )
    if command is not None:
        async with server:
            # On stderr: the command's stdout (a --json report, say) stays its own.
            print(f"evalkit test server listening on {server.base_url}", file=sys.stderr)
            env = command_environment(server.base_url, args.api_key)
            return await run_command(command, env, prog=PROG)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with server:
            print(f"evalkit test server listening on {server.base_url}", flush=True)
            async for _ in signals:
                break
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evalkit.testing.server``: the exit code (the command's,
    with ``-- COMMAND``; 2 for a wrong option or rules file)."""
    options, command = _split(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(options)
    if command == []:
        parser.error("nothing to run after --")
    rules: list[Rule] = []
    if args.rules is not None:
        try:
            rules = load_rules(args.rules)
        except RulesFileError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
    return anyio.run(_serve, args, rules, command)


if __name__ == "__main__":
    sys.exit(main())

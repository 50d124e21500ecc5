"""``python -m evalkit.testing.server``: run the local OpenAI-compatible test server.

Example: ``python -m evalkit.testing.server --port 8000 --latency 0.05``. It prints the base URL
once it listens, then serves until SIGINT/SIGTERM. See :class:`evalkit.testing.FakeOpenAIServer`.
"""

from __future__ import annotations

import argparse
import signal

import anyio

from evalkit.testing._rules import Fault, RateLimitPolicy, Rule
from evalkit.testing._server import FakeOpenAIServer

_FAULTS = {
    "500": Fault.http(500),
    "503": Fault.http(503),
    "429": None,  # built from --retry-after
    "malformed": Fault.malformed_body(),
    "hang": Fault.hang(),
    "disconnect": Fault.disconnect(),
}


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m evalkit.testing.server",
        description="Run evalkit's local OpenAI-compatible test server until interrupted.",
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
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    rules: list[Rule] = []
    if args.fault and args.fault_rate > 0:
        fault = _FAULTS[args.fault] or Fault.rate_limit(args.retry_after)
        rules.append(Rule(fault=fault, probability=args.fault_rate))
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
    )
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with server:
            print(f"evalkit test server listening on {server.base_url}", flush=True)
            async for _ in signals:
                return


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m evalkit.testing.server``."""
    anyio.run(_serve, _parse_args(argv))


if __name__ == "__main__":
    main()

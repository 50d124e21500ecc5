"""What L-S (``bench_llama_server``) needs besides its rounds: the requests evalkit sends to the
real server, recorded by a pass-through, and how busy the server's slots were, read from its log.

- :class:`RecordingProxy` forwards every request to the real ``llama-server`` unchanged and
  keeps the chat-completion bodies in the order they arrived (the order evalkit sent them),
  with the completion tokens of each reply. The capture round runs evalkit through it
  (untimed); the client rounds replay exactly those bodies, straight to the server.
- :func:`depends_on` finds, for each recorded body, the earlier attempt of the same item (a
  re-ask or format fallback repeats the item's prompt with text added): a client doing the
  same work cannot send a re-ask before the reply that caused it either.
- :func:`slot_use` reads the server's log (timestamped ``launch_slot_`` / ``release`` lines and
  each task's token counts) for one round: how much of the round the 4 slots were busy, and
  how long a slot stayed idle between a reply and the next request it was given.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import statistics
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp import web

CHAT_PATH = "/chat/completions"


@dataclass(frozen=True, slots=True)
class Sent:
    """One chat-completion request as it reached the server, and its reply's length."""

    body: dict[str, Any]
    completion_tokens: int
    status: int


def user_text(body: dict[str, Any]) -> str:
    """The last user message of a request body (the judge step's prompt)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def depends_on(bodies: list[dict[str, Any]]) -> list[int | None]:
    """For each body, the index of the latest earlier body whose prompt it extends (the same
    item's previous attempt), or None for an item's first attempt."""
    texts = [user_text(body) for body in bodies]
    found: list[int | None] = []
    for index, text in enumerate(texts):
        earlier = [i for i in range(index) if text.startswith(texts[i])]
        found.append(earlier[-1] if earlier else None)
    return found


def item_tokens(sent: list[Sent]) -> dict[str, tuple[int, ...]]:
    """Completion tokens of each item's attempts, in order, by the item's first prompt."""
    parents = depends_on([s.body for s in sent])
    roots: list[int] = []
    by_item: dict[str, list[int]] = {}
    for index, parent in enumerate(parents):
        root = index if parent is None else roots[parent]
        roots.append(root)
        by_item.setdefault(user_text(sent[root].body), []).append(sent[index].completion_tokens)
    return {prompt: tuple(tokens) for prompt, tokens in by_item.items()}


class RecordingProxy:
    """A local pass-through to ``upstream`` (``http://host:port``) that records chat bodies."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        # In the order the requests arrived (not the order their replies came back).
        self._sent: list[Sent | None] = []
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.base_url = ""

    @property
    def sent(self) -> list[Sent]:
        """The chat requests answered so far, in the order they arrived."""
        return [s for s in self._sent if s is not None]

    async def __aenter__(self) -> RecordingProxy:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        data = await request.read()
        chat = request.method == "POST" and request.rel_url.path.endswith(CHAT_PATH)
        if chat:
            arrived = len(self._sent)
            self._sent.append(None)
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() in ("authorization", "content-type", "accept")
        }
        async with self._session.request(
            request.method, self.upstream + request.rel_url.path, data=data, headers=headers
        ) as response:
            content = await response.read()
            status = response.status
            kind = response.headers.get("Content-Type", "application/json")
        if chat:
            tokens = 0
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                tokens = int((json.loads(content).get("usage") or {}).get("completion_tokens", 0))
            self._sent[arrived] = Sent(json.loads(data), tokens, status)
        return web.Response(body=content, status=status, headers={"Content-Type": kind})


_STAMP = r"^(\d+)\.(\d+)\.(\d+)\.(\d+) "
_LAUNCH = re.compile(_STAMP + r"I slot launch_slot_: id\s+(\d+) \| task (\d+)")
_RELEASE = re.compile(_STAMP + r"I slot\s+release: id\s+(\d+) \| task (\d+)")
_PROMPT = re.compile(r"\| task (\d+) \| prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_EVAL = re.compile(r"\| task (\d+) \|\s+eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def _seconds(match: re.Match[str]) -> float:
    minutes, secs, ms, us = (int(match.group(i)) for i in range(1, 5))
    return minutes * 60 + secs + ms / 1e3 + us / 1e6


@dataclass(slots=True)
class SlotUse:
    """The server's view of one round (from its log)."""

    tasks: int = 0
    busy_s: float = 0.0  # slot-seconds spent on tasks
    span_s: float = 0.0  # first launch to last release
    all_busy_s: float = 0.0  # time with every slot busy
    prompt_tokens: int = 0  # prompt tokens evaluated (not taken from a slot's cache)
    prompt_ms: float = 0.0
    generated_tokens: int = 0
    generation_ms: float = 0.0
    gaps_ms: list[float] = field(default_factory=list)  # a release to the next launch

    def describe(self, slots: int, seconds: float) -> str:
        """One line: occupancy over the round's ``seconds``, idle gaps, the work done."""
        gap = statistics.median(self.gaps_ms) if self.gaps_ms else float("nan")
        return (
            f"server: {self.tasks} tasks, slots busy {self.busy_s / (slots * seconds):.1%} of "
            f"the round, all {slots} busy {self.all_busy_s / seconds:.1%}, first launch to last "
            f"release {self.span_s:.1f} s; a reply to the next launch: median {gap:.1f} ms, "
            f"max {max(self.gaps_ms, default=float('nan')):.0f} ms; prompt "
            f"{self.prompt_tokens} tokens in {self.prompt_ms / 1000:.1f} s, generated "
            f"{self.generated_tokens} in {self.generation_ms / 1000:.1f} s "
            f"({self.generation_ms / max(1, self.generated_tokens):.0f} ms a token in a slot)"
        )


def slot_use(log_text: str, slots: int) -> SlotUse:
    """Read one round's part of the ``llama-server`` log (see the module docstring)."""
    use = SlotUse()
    starts: dict[str, float] = {}
    events: list[tuple[float, int]] = []  # (time, +1 launch / -1 release)
    for line in log_text.splitlines():
        if match := _LAUNCH.match(line):
            starts[match.group(6)] = _seconds(match)
            events.append((_seconds(match), 1))
        elif (match := _RELEASE.match(line)) and match.group(6) in starts:
            end = _seconds(match)
            use.busy_s += end - starts[match.group(6)]
            events.append((end, -1))
        elif match := _PROMPT.search(line):
            use.prompt_ms += float(match.group(2))
            use.prompt_tokens += int(match.group(3))
        elif match := _EVAL.search(line):
            use.generation_ms += float(match.group(2))
            use.generated_tokens += int(match.group(3))
    use.tasks = len(starts)
    if not events:
        return use
    events.sort()
    use.span_s = events[-1][0] - events[0][0]
    busy, last = 0, events[0][0]
    releases: list[float] = []
    for when, change in events:
        if busy == slots:
            use.all_busy_s += when - last
        busy += change
        last = when
        if change < 0:
            releases.append(when)
        elif releases:
            use.gaps_ms.append((when - releases.pop(0)) * 1000)
    return use

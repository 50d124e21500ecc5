"""The local server's ``POST /v1/chat/completions``: which rule answers, the rate budget, counters.

`CompletionService` checks a request's key and body, records it, holds it to the
server's ``rate_limit`` (``x-ratelimit-*`` headers, 429s beyond it), waits the latency and
answers with the first matching [`Rule`][evalkit.testing.Rule], or with a generated reply when none
matches (``_chat.py`` builds the bodies). Lines of a batch go through
`CompletionService.batch_line`: the same rules, without the rate limit.
"""

from __future__ import annotations

import json
import random
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import anyio

from evalkit.testing._batch_records import LineResult
from evalkit.testing._chat import (
    UsageModel,
    completion,
    conversation_text,
    fault_response,
    generated_content,
    response_format_kind,
    rule_content,
)
from evalkit.testing._http import Request, Response, error_body
from evalkit.testing._limits import WindowBudget
from evalkit.testing._profiles import ServerProfile
from evalkit.testing._rules import RateLimitPolicy, Rule


class ReplySettings(Protocol):
    """What each reply reads from the server, which lets users change it at any time."""

    latency: float
    usage: UsageModel
    profile: ServerProfile


class CompletionService:
    """Serves ``POST /v1/chat/completions`` (and batch lines) for a
    [`FakeOpenAIServer`][evalkit.testing.FakeOpenAIServer].

    Args:
        rules: The constructor's rules, restored by `reset`.
        settings: The latency and usage model, read at each reply.
        refuse: Returns an error response when a request may not use the API, else None.
        seed: Seed of the generator used by rules with a ``probability`` below 1.
        history: How many request bodies (and arrival times) are kept.
    """

    def __init__(
        self,
        rules: tuple[Rule, ...],
        settings: ReplySettings,
        refuse: Callable[[Request], Response | None],
        *,
        seed: int | None,
        history: int,
    ) -> None:
        self._initial_rules = rules
        self._settings = settings
        self._refuse = refuse
        self._seed = seed
        self.history: deque[dict[str, Any]] = deque(maxlen=history)
        self.arrivals: deque[float] = deque(maxlen=history)
        self.reset(None)

    def reset(self, rate_limit: RateLimitPolicy | None) -> None:
        """Zero the counters, forget recorded requests, restore the constructor's rules and
        start a fresh budget for ``rate_limit``."""
        self.rules: list[Rule] = list(self._initial_rules)
        self._uses: list[int] = [0] * len(self.rules)
        self._random = random.Random(self._seed)
        self.history.clear()
        self.arrivals.clear()
        self.requests = self.completions = self.faults = self.rate_limited = 0
        self.in_flight = self.max_in_flight = 0
        self._budget = WindowBudget(rate_limit) if rate_limit is not None else None

    def add_rule(self, rule: Rule) -> None:
        """Append ``rule`` to the rules tried for each request."""
        self.rules.append(rule)
        self._uses.append(0)

    def _pick_rule(self, text: str, kind: str) -> Rule | None:
        for index, rule in enumerate(self.rules):
            if not rule.matches(text, kind):
                continue
            if rule.times is not None and self._uses[index] >= rule.times:
                continue
            if rule.probability < 1.0 and self._random.random() >= rule.probability:
                continue
            self._uses[index] += 1
            return rule
        return None

    async def handle(self, request: Request) -> Response:
        """Answer one chat completion request."""
        self.arrivals.append(time.monotonic())
        self.requests += 1
        number = self.requests
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            response = await self._answer(request, number)
        finally:
            self.in_flight -= 1
        if response.status == 200 and not response.abort and response.body.endswith(b"}"):
            self.completions += 1
        return response

    async def _answer(self, request: Request, number: int) -> Response:
        if (refused := self._refuse(request)) is not None:
            return refused
        try:
            body = request.json()
        except ValueError:
            return _bad_request("The request body is not valid JSON")
        problem = _check_body(body)
        if problem:
            return _bad_request(problem)
        self.history.append(body)
        profile = self._settings.profile
        refused = profile.refuse(body, UsageModel.prompt_tokens(body["messages"]))
        if refused is not None:
            return refused
        budget = self._budget
        if budget is None:
            return await self._reply(body, number)
        refused = budget.admit()
        if refused is not None:
            self.rate_limited += 1
            return refused
        response = await self._reply(body, number)
        if response.status == 200 and budget.policy.tokens is not None:
            budget.charge(_total_tokens(response))
        budget.annotate(response)
        return response

    async def _reply(self, body: dict[str, Any], number: int) -> Response:
        text = conversation_text(body["messages"])
        kind = response_format_kind(body)
        return await self._respond(body, number, self._pick_rule(text, kind), text, kind)

    async def batch_line(self, body: dict[str, Any], number: int) -> LineResult:
        """Answer one line of a batch with the chat handler (no rate limit: batches have
        their own pool, as at OpenAI)."""
        problem = _check_body(body)
        if problem:
            return LineResult(400, error_body(problem, "invalid_request_error"))
        self.history.append(body)
        self.arrivals.append(time.monotonic())
        text = conversation_text(body["messages"])
        kind = response_format_kind(body)
        rule = self._pick_rule(text, kind)
        if rule is not None and rule.fault is not None and rule.fault.kind in _NO_ANSWER:
            # A request that never gets an answer ends as an error line, not a hung batch.
            self.faults += 1
            code = "request_timeout" if rule.fault.kind == "hang" else "server_error"
            return LineResult(None, error=(code, f"The test server injected a {rule.fault.kind}"))
        response = await self._respond(body, number, rule, text, kind)
        if response.parts is not None:  # a huge body: a line holds it whole
            response.body, response.parts = b"".join(response.parts), None
        try:
            decoded = json.loads(response.body)
        except ValueError:
            return LineResult(response.status, response.body.decode(errors="replace"))
        return LineResult(response.status, decoded)

    async def _respond(
        self, body: dict[str, Any], number: int, rule: Rule | None, text: str, kind: str
    ) -> Response:
        settings = self._settings
        latency = (
            rule.latency if rule is not None and rule.latency is not None else settings.latency
        )
        if latency > 0:
            await anyio.sleep(latency)
        profile = settings.profile
        schema_mode = profile.json_object_schema
        if rule is None:
            generated = generated_content(body, kind, text, json_mode_schema=schema_mode)
            return completion(body, generated, number=number, usage=settings.usage, profile=profile)
        if rule.fault is not None:
            self.faults += 1
            return await fault_response(rule.fault)
        if rule.refusal is not None:
            return completion(
                body,
                None,
                number=number,
                usage=settings.usage,
                refusal=rule.refusal,
                finish_reason=rule.finish_reason,
                profile=profile,
                usage_override=rule.usage,
            )
        content = rule_content(rule, body)
        if content is None:
            content = generated_content(body, kind, text, json_mode_schema=schema_mode)
        return completion(
            body,
            content,
            number=number,
            usage=settings.usage,
            finish_reason=rule.finish_reason,
            profile=profile,
            usage_override=rule.usage,
        )


_NO_ANSWER = frozenset({"hang", "disconnect"})


def _total_tokens(response: Response) -> int:
    try:
        return int(json.loads(response.body)["usage"]["total_tokens"])
    except (ValueError, KeyError, TypeError):
        return 0


def _bad_request(message: str) -> Response:
    return Response.json(error_body(message, "invalid_request_error"), 400)


def _check_body(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "The request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' is required and must be a non-empty string"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' is required and must be a non-empty array"
    if body.get("stream"):
        return "'stream': true is not supported by the evalkit test server"
    return None

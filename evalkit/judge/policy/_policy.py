"""``CallPolicy``: how a judge's calls are made, apart from what they ask.

Why the policy is a value of its own: docs/pages/design/judge-asks-only.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.judge.transport._body import DEFAULT_MAX_REPLY_BYTES


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """The call policy of a judge ([`evalkit.Judge.policy`][evalkit.Judge.policy]): retries,
    timeouts and the model's budget. What is asked — model, endpoint, instructions, sampling — is
    the judge's.

    Attributes:
        timeout: Seconds allowed to each HTTP attempt.
        max_retries: Retries after a 5xx, 408, 409, timeout or dropped connection.
        rate_limit_retries: Retries after an HTTP 429, counted apart from ``max_retries``.
        max_concurrency: Most calls in flight to the model at the endpoint (None: no limit).
        rpm: Requests per minute allowed (None: no limit).
        tpm: Tokens per minute allowed (None: no limit).
        max_reply_bytes: The most bytes of a reply read; a larger reply is a failure.
    """

    timeout: float
    max_retries: int
    rate_limit_retries: int
    max_concurrency: int | None
    rpm: float | None
    tpm: float | None
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

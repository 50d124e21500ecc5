"""RateLimiter on its own: the bucket arithmetic, AIMD, pauses and the token correction."""

from __future__ import annotations

import random
import time

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from evalkit.judge import RateLimiter
from evalkit.judge.policy._gcra import Bucket as _Bucket


def window_max(times: list[float], width: float) -> int:
    """The most of ``times`` (sorted) inside any closed window ``width`` long."""
    best = end = 0
    for start, at in enumerate(times):
        while end < len(times) and times[end] <= at + width + 1e-9:
            end += 1
        best = max(best, end - start)
    return best


@pytest.mark.parametrize(
    ("rpm", "burst"),
    [(60, 1), (600, 1), (1200, 1), (1201, 2), (2000, 2), (3000, 3), (6000, 5), (60_000, 50)],
)
def test_burst_is_a_twentieth_of_a_second_rounded_up(rpm: float, burst: int) -> None:
    limiter = RateLimiter(rpm=rpm)
    assert limiter.burst == burst
    assert limiter.stats.burst == burst
    assert limiter.stats.rpm == rpm


@pytest.mark.parametrize("burst", [1, 5, 50])
@pytest.mark.parametrize("pattern", ["all_at_once", "random", "idle_then_rush"])
def test_bucket_starts_at_most_burst_plus_rate_times_window(burst: int, pattern: str) -> None:
    rate = 100.0
    bucket = _Bucket(rate, (burst - 1) / rate)
    rng = random.Random(burst)
    if pattern == "all_at_once":
        arrivals = [0.0] * 1000
    elif pattern == "random":
        arrivals = sorted(rng.uniform(0, 5) for _ in range(1000))
    else:
        arrivals = [0.0] * 10 + [3.0] * 500
    starts = []
    for at in arrivals:
        start = bucket.earliest(at)
        assert start >= at
        bucket.commit(start, 1)
        starts.append(start)
    assert starts == sorted(starts)
    for width in (0.0, 0.01, 0.1, 1.0, 2.5):
        assert window_max(starts, width) <= burst + rate * width + 1e-6
    if pattern == "all_at_once":
        # Demand above the rate: after the burst, starts are paced exactly at the rate.
        assert starts[burst - 1] == pytest.approx(0.0)
        span = starts[-1] - starts[burst - 1]
        assert (len(starts) - burst) / span == pytest.approx(rate)


def test_bucket_defer_holds_every_start_until_the_pause_ends_then_paces() -> None:
    bucket = _Bucket(10.0, 0.2)
    bucket.defer(5.0)
    assert bucket.earliest(1.0) == 5.0
    bucket.commit(5.0, 1)
    assert bucket.earliest(5.0) == pytest.approx(5.1)  # no burst right after a pause
    bucket.adjust(-1)  # a refund gives the slot back
    assert bucket.earliest(5.0) == 5.0


async def test_a_stalled_event_loop_does_not_release_the_overdue_requests_at_once() -> None:
    # rpm 3000: 50 requests a second. Forty requests queue for the bucket; once ten have
    # started, a task blocks the event loop for 0.4 s, as a loaded machine or a synchronous
    # scorer does. About twenty requests fall due during the stall: they must still start
    # paced afterwards, not together when the loop comes back.
    limiter = RateLimiter(rpm=3000)
    rate, burst = 50.0, limiter.burst
    assert burst is not None
    starts: list[float] = []
    ten_started = anyio.Event()

    async def request() -> None:
        permit = await limiter.acquire()
        starts.append(time.monotonic())
        limiter.release(permit)
        if len(starts) == 10:
            ten_started.set()

    async def stall() -> None:
        await ten_started.wait()
        time.sleep(0.4)  # blocks the loop: nothing else runs meanwhile

    async with anyio.create_task_group() as group:
        group.start_soon(stall)
        for _ in range(40):
            group.start_soon(request)
    assert len(starts) == 40
    assert starts == sorted(starts)
    for width in (0.0, 0.01, 0.05, 0.1, 0.5, 1.0):
        assert window_max(starts, width) <= burst + rate * width, width
    assert limiter.stats.waiting == 0
    assert limiter.stats.in_flight == 0


async def test_requests_queued_for_the_budget_start_in_arrival_order() -> None:
    limiter = RateLimiter(rpm=60_000)  # 1,000 a second, a burst of 50
    rate, burst = 1000.0, limiter.burst
    assert burst == 50
    order: list[int] = []
    waited: list[bool] = []
    arrivals: list[float] = []

    async def request(index: int) -> None:
        arrivals.append(time.monotonic())
        waits_before = limiter.stats.waits
        permit = await limiter.acquire()
        # The fast path never counts a wait; a queued request counts its own before it yields.
        waited.append(limiter.stats.waits != waits_before)
        order.append(index)
        limiter.release(permit)

    async with anyio.create_task_group() as group:
        for index in range(200):
            group.start_soon(request, index)
    assert order == list(range(200))
    # All 200 arrive in one pass of the event loop. The burst starts at once; a request
    # arriving later in that pass may find a slot refilled (one a millisecond: a loaded
    # machine can take that long), and once one queues, every later one queues behind it.
    started_at_once = waited.index(True)
    assert waited == [False] * started_at_once + [True] * (200 - started_at_once)
    assert burst <= started_at_once <= burst + rate * (arrivals[-1] - arrivals[0]) + 1
    # At 1,000 a second, no request would queue only if that one pass took 150 ms.
    assert started_at_once < 200
    stats = limiter.stats
    assert stats.waits == 200 - started_at_once
    assert (stats.waiting, stats.in_flight) == (0, 0)


async def test_a_cancelled_head_of_the_queue_hands_its_turn_to_the_next() -> None:
    limiter = RateLimiter(rpm=600)  # one request every 0.1 s
    first = await limiter.acquire()
    limiter.release(first)
    head = anyio.CancelScope()
    started = anyio.Event()

    async def second() -> None:
        with head:
            await limiter.acquire()
        assert head.cancelled_caught

    async def third() -> None:
        permit = await limiter.acquire()
        started.set()
        limiter.release(permit)

    async with anyio.create_task_group() as group:
        group.start_soon(second)
        await wait_all_tasks_blocked()
        group.start_soon(third)
        await wait_all_tasks_blocked()
        assert limiter.stats.waiting == 2
        head.cancel()  # the third now heads the queue and must be woken to sleep its turn
        with anyio.fail_after(30):
            await started.wait()
    stats = limiter.stats
    assert (stats.waiting, stats.in_flight, stats.waits) == (0, 0, 2)


async def test_a_refund_lets_the_head_of_the_queue_start_sooner() -> None:
    limiter = RateLimiter(tpm=6000)  # 100 tokens/s
    held = await limiter.acquire(tokens=1000)  # ten seconds of budget, charged up front
    admitted = anyio.Event()

    async def queued() -> None:
        permit = await limiter.acquire(tokens=2)
        admitted.set()
        limiter.release(permit)

    async with anyio.create_task_group() as group:
        group.start_soon(queued)
        await wait_all_tasks_blocked()
        assert limiter.stats.waiting == 1  # asleep until the ten seconds have passed
        limiter.succeeded(held, total_tokens=2, output_tokens=1)
        limiter.release(held)
        with anyio.fail_after(30):
            await admitted.wait()
    assert limiter.stats.waiting == 0


async def test_a_429_halves_the_limit_once_per_storm() -> None:
    limiter = RateLimiter(max_concurrency=8, name="m at h")
    permits = [await limiter.acquire() for _ in range(8)]
    assert limiter.stats.in_flight == 8
    limiter.rate_limited(permits[0], pause=None)
    assert (limiter.stats.concurrency, limiter.stats.decreases) == (4, 1)
    for permit in permits[1:]:  # sent before the decrease: the same storm
        limiter.rate_limited(permit, pause=None)
    assert (limiter.stats.concurrency, limiter.stats.decreases) == (4, 1)
    assert limiter.stats.rate_limited == 8
    for permit in permits:
        limiter.release(permit)
    later = [await limiter.acquire() for _ in range(3)]
    limiter.rate_limited(later[0], pause=None)  # a new storm: halves what is in use (3)
    assert (limiter.stats.concurrency, limiter.stats.decreases) == (1, 2)
    for permit in later:
        limiter.release(permit)
    assert limiter.stats.in_flight == 0


async def test_the_limit_grows_by_one_per_window_of_successes_up_to_the_ceiling() -> None:
    limiter = RateLimiter(max_concurrency=6)
    first = await limiter.acquire()
    limiter.rate_limited(first, pause=None)
    limiter.release(first)
    assert limiter.stats.concurrency == 1
    seen = []
    for _ in range(40):
        permit = await limiter.acquire()
        limiter.succeeded(permit)
        limiter.release(permit)
        seen.append(limiter.stats.concurrency)
    # 1 success at limit 1, 2 at limit 2, ... then the ceiling holds.
    assert seen[:6] == [2, 2, 3, 3, 3, 4]
    assert seen[-1] == 6
    assert max(seen) == 6


async def test_without_a_ceiling_the_limit_recovers_to_none() -> None:
    limiter = RateLimiter()
    start = limiter.stats  # a snapshot: mypy would keep the property narrowed to None
    assert start.concurrency is None
    permits = [await limiter.acquire() for _ in range(10)]
    limiter.rate_limited(permits[0], pause=None)
    assert limiter.stats.concurrency == 5
    for permit in permits:
        limiter.release(permit)
    for _ in range(5 + 6 + 7 + 8 + 9):
        permit = await limiter.acquire()
        limiter.succeeded(permit)
        limiter.release(permit)
    assert limiter.stats.concurrency is None


async def test_a_lowered_limit_holds_new_requests_until_enough_finish() -> None:
    limiter = RateLimiter(max_concurrency=4)
    permits = [await limiter.acquire() for _ in range(4)]
    limiter.rate_limited(permits[0], pause=None)  # limit 2, four still in flight
    admitted = anyio.Event()

    async def newcomer() -> None:
        permit = await limiter.acquire()
        admitted.set()
        limiter.release(permit)

    async with anyio.create_task_group() as group:
        group.start_soon(newcomer)
        await wait_all_tasks_blocked()
        assert limiter.stats.waiting == 1
        limiter.release(permits[0])
        limiter.release(permits[1])
        await wait_all_tasks_blocked()
        assert not admitted.is_set()  # two in flight, limit two
        limiter.release(permits[2])
        await admitted.wait()
    limiter.release(permits[3])
    stats = limiter.stats
    assert (stats.waits, stats.waiting, stats.in_flight) == (1, 0, 0)
    assert stats.wait_seconds > 0


async def test_a_pause_holds_requests_and_is_counted_as_a_wait() -> None:
    limiter = RateLimiter()
    limiter.pause(0.05)
    assert 0 < limiter.stats.paused_for <= 0.05
    permit = await limiter.acquire()
    limiter.release(permit)
    assert limiter.stats.waits == 1
    assert limiter.stats.paused_for == 0
    again = await limiter.acquire()  # the pause is over: no wait
    limiter.release(again)
    assert limiter.stats.waits == 1


async def test_a_429_with_a_pause_pauses_the_model() -> None:
    limiter = RateLimiter(max_concurrency=2)
    permit = await limiter.acquire()
    limiter.rate_limited(permit, pause=30.0)
    limiter.release(permit)
    assert limiter.stats.paused_for > 29


async def test_the_token_charge_is_corrected_by_the_reported_usage() -> None:
    limiter = RateLimiter(tpm=6000)  # 100 tokens/s
    assert limiter.limits_tokens
    assert limiter.expected_output_tokens == 256  # a guess until a reply says otherwise
    permit = await limiter.acquire(tokens=1000)  # ten seconds of budget, charged up front
    limiter.succeeded(permit, total_tokens=2, output_tokens=1)
    limiter.release(permit)
    assert limiter.expected_output_tokens == 1
    with anyio.fail_after(30):
        second = await limiter.acquire(tokens=2)  # refunded: no ten-second wait
    limiter.release(second)
    assert limiter.stats.waits == 0


async def test_a_cancelled_wait_gives_nothing_away() -> None:
    limiter = RateLimiter(max_concurrency=1)
    held = await limiter.acquire()
    with anyio.move_on_after(0.01):
        await limiter.acquire()
    assert (limiter.stats.in_flight, limiter.stats.waiting) == (1, 0)
    limiter.release(held)
    with anyio.fail_after(30):
        again = await limiter.acquire()
    limiter.release(again)
    assert limiter.stats.in_flight == 0


def test_limiters_without_tpm_need_no_token_estimate() -> None:
    assert not RateLimiter(rpm=60).limits_tokens
    assert RateLimiter().stats.rpm is None


async def test_a_wait_cancelled_during_a_pause_is_not_left_counted() -> None:
    limiter = RateLimiter(max_concurrency=2)
    limiter.pause(30.0)
    with anyio.move_on_after(0.01):
        await limiter.acquire()
    stats = limiter.stats
    assert (stats.in_flight, stats.waiting, stats.waits) == (0, 0, 1)
    assert stats.wait_seconds > 0

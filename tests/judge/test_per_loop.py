"""The one per-event-loop value behind the shared clients, limiters and breakers."""

from __future__ import annotations

import anyio

from evalkit.judge._per_loop import PerLoop


def test_each_event_loop_has_its_own_value_made_once() -> None:
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    shared = PerLoop("evalkit_test_per_loop", make)

    async def twice() -> tuple[object, object]:
        return shared.get(), shared.get()

    first = anyio.run(twice)
    second = anyio.run(twice)
    assert first[0] is first[1]
    assert second[0] is second[1]
    assert first[0] is not second[0]
    assert len(made) == 2


def test_existing_makes_nothing_and_is_none_outside_a_loop() -> None:
    shared: PerLoop[list[int]] = PerLoop("evalkit_test_per_loop_existing", list)
    assert shared.existing() is None  # no event loop in this thread

    async def look() -> tuple[object, object, object]:
        before = shared.existing()
        made = shared.get()
        return before, made, shared.existing()

    before, made, after = anyio.run(look)
    assert before is None
    assert after is made

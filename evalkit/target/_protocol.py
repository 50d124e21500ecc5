"""What a target is: something that turns a dataset item into the output to score."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from evalkit.dataset import Item


@runtime_checkable
class Target(Protocol):
    """Produces the output scored for one item.

    A target is any object with an async ``__call__(item) -> output`` and a ``describe()``
    giving a JSON-ready description for the experiment's stored config (secrets are redacted
    by the store, but a target should not put them there in the first place). A failure is
    raised as an exception; the run records it and fails that item only.
    """

    async def __call__(self, item: Item) -> Any:
        """The output for ``item``."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description of the target (type, name, options)."""
        ...

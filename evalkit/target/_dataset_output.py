"""The default target: the output the dataset already holds."""

from __future__ import annotations

from typing import Any

from evalkit.dataset import Item


class DatasetOutput:
    """Use each row's ``output`` column as the output to score (``target=None``)."""

    async def __call__(self, item: Item) -> Any:
        """The item's ``output`` cell."""
        return item.output

    def describe(self) -> dict[str, Any]:
        """``{"type": "dataset"}``."""
        return {"type": "dataset"}

"""What a run takes as its ``target=`` argument."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from evalkit.target._protocol import Target

#: What a run takes as ``target=``: None (the dataset's ``output`` column), a
#: [`Target`][evalkit.Target], or a plain callable ``f(input, *, request_context=None)``, sync or
#: async (wrapped in [`FunctionTarget`][evalkit.FunctionTarget]).
TargetLike: TypeAlias = Target | Callable[..., Any] | None

"""Turning the ``target=`` argument of a run into a [`Target`][evalkit.Target]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from evalkit.errors import ConfigError
from evalkit.target._dataset_output import DatasetOutput
from evalkit.target._function import FunctionTarget
from evalkit.target._protocol import Target

#: What a run takes as ``target=``: None (the dataset's ``output`` column), a
#: [`Target`][evalkit.Target], or a plain callable ``f(input, *, request_context=None)``, sync or
#: async (wrapped in [`FunctionTarget`][evalkit.FunctionTarget]).
TargetLike: TypeAlias = Target | Callable[..., Any] | None


def as_target(target: object) -> Target:
    """The target a run uses for ``target``.

    Args:
        target: None (the dataset's ``output`` column), an object implementing
            [`Target`][evalkit.Target], or a plain callable (wrapped in
            [`FunctionTarget`][evalkit.FunctionTarget]).

    Raises:
        ConfigError: ``target`` is none of these.
    """
    if target is None:
        return DatasetOutput()
    if isinstance(target, Target):
        return target
    if callable(target):
        return FunctionTarget(target)
    raise ConfigError(f"target must be None, a callable or a Target, not {type(target).__name__}")

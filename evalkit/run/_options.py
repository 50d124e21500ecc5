"""The options of ``run_evals``: each one's name, type and default, declared once.

`RunOptions` is the table. ``run_evals`` spells the same keywords out in its signature (for
users, IDEs and the API reference) and documents each one in its docstring;
``run_evals_sync`` takes ``run_evals``' signature as its own; the experiment file's keys and
``evalkit run``'s flags that set an option are named here, each field's ``metadata``.
tests/run/test_options.py checks that the signature, the docstring, the experiment file's
schema and the command's flags agree with this table, so a default cannot drift
(docs/pages/design/run-options-table.md).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from evalkit._defaults import DEFAULT_LOCK_TIMEOUT, DEFAULT_STORE

if TYPE_CHECKING:
    from evalkit.run._outcome import ItemResult
    from evalkit.target import TargetLike

#: Where a run's shards run (``run_evals(executor=)``).
ExecutorName = Literal["local", "process", "ray"]
#: The executors, in the order the docs list them.
EXECUTORS: tuple[ExecutorName, ...] = ("local", "process", "ray")
#: ``run_evals(on_item_complete=)``: called (or awaited) with each finished item.
ItemCallback = Callable[["ItemResult"], Any]


def _set_by(*, toml: str | None = None, flag: str | None = None) -> dict[str, str | None]:
    """A field's ``metadata``: the experiment-file key and the ``evalkit run`` flag that set the
    option (None: neither sets it)."""
    return {"toml": toml, "flag": flag}


@dataclasses.dataclass(frozen=True, slots=True)
class RunOptions:
    """The options of a run, as ``run_evals`` takes them (see [`run_evals`][evalkit.run_evals]
    for each one); ``RunOptions()`` holds every default.

    Each field's ``metadata`` names the experiment-file key (``"toml"``) and the ``evalkit
    run`` flag (``"flag"``) that set the option, when one does.
    """

    target: TargetLike = field(default=None, metadata=_set_by(toml="target"))
    concurrency: int = field(
        default=8, metadata=_set_by(toml="experiment.concurrency", flag="--concurrency")
    )
    store: str | os.PathLike[str] | None = field(
        default=DEFAULT_STORE, metadata=_set_by(toml="experiment.store", flag="--store")
    )
    experiment: str | None = field(default=None, metadata=_set_by(toml="experiment.name"))
    description: str | None = field(default=None, metadata=_set_by(toml="experiment.description"))
    thresholds: Mapping[str, Any] | None = field(
        default=None, metadata=_set_by(toml="scorers.threshold")
    )
    max_error_rate: float | Mapping[str, float] | None = field(
        default=None, metadata=_set_by(toml="experiment.max_error_rate")
    )
    on_item_complete: ItemCallback | None = field(default=None, metadata=_set_by())
    progress: bool = field(default=True, metadata=_set_by(flag="--no-progress"))
    metadata: Mapping[str, Any] | None = field(default=None, metadata=_set_by())
    keep_results: bool = field(default=True, metadata=_set_by())
    limit: int | None = field(default=None, metadata=_set_by(flag="--limit"))
    columns: Mapping[str, str | Sequence[str]] | None = field(
        default=None, metadata=_set_by(toml="experiment.columns")
    )
    flush_interval: float = field(default=2.0, metadata=_set_by())
    cache: bool | str | os.PathLike[str] | None = field(
        default=None, metadata=_set_by(flag="--no-cache")
    )
    resume: str | None = field(default=None, metadata=_set_by(flag="--resume"))
    retry_errors: bool = field(default=False, metadata=_set_by(flag="--retry-errors"))
    force: bool = field(default=False, metadata=_set_by(flag="--force"))
    regenerate: bool = field(default=False, metadata=_set_by(flag="--regenerate"))
    executor: ExecutorName = field(default="local", metadata=_set_by(flag="--executor"))
    workers: int | None = field(default=None, metadata=_set_by(flag="--workers"))
    shard: str | tuple[int, int] | None = field(default=None, metadata=_set_by(flag="--shard"))
    ray_address: str | None = field(default=None, metadata=_set_by(flag="--ray-address"))
    preflight: bool = field(default=True, metadata=_set_by(flag="--no-preflight"))
    lock_timeout: float = field(
        default=DEFAULT_LOCK_TIMEOUT, metadata=_set_by(flag="--lock-timeout")
    )
    slices: Sequence[str] = field(default=(), metadata=_set_by(toml="experiment.slices"))
    labels: Mapping[str, Any] | None = field(
        default=None, metadata=_set_by(toml="experiment.labels")
    )
    min_agreement: Mapping[str, Mapping[str, float]] | None = field(
        default=None, metadata=_set_by(toml="scorers.min_agreement")
    )
    repeats: int = field(default=1, metadata=_set_by(toml="experiment.repeats", flag="--repeat"))
    store_data_path: str | os.PathLike[str] | None = field(
        default=None, metadata=_set_by(toml="experiment.store_data_path", flag="--store-data-path")
    )

    @property
    def sharded(self) -> bool:
        """Whether the run goes shard by shard (an executor other than local, or a slice)."""
        return self.executor != "local" or self.shard is not None


#: Every option at its default.
DEFAULTS = RunOptions()

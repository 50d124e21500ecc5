"""A sharded experiment's ``retry_errors`` pass: its failed pairs, run again shard by shard.

The failed pairs of a sharded experiment sit inside its finished shards (a shard's rows are
written with its ``shards_done`` record, in one transaction). The driver finds the finished
shards holding an item that did not fully succeed (by ``item_index``), and gives each a
`ShardRetry`: those items, the scorers each already has a score from (not run again)
and the stored outputs their remaining pairs are scored on, as an in-process ``retry_errors``
resume does (an item whose target failed is evaluated afresh). A worker runs only those
pairs; the driver writes them over the older rows (``ShardWriter.rewrite_shard``) and the
shard's summary is recomputed from what it then holds. Shards never finished stay so: like
an in-process one, a ``retry_errors`` pass does not evaluate items that never were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalkit.dataset import Item
from evalkit.errors import ConfigError
from evalkit.run._resume_plan import ResumePlan, Resuming, check_shard_resume
from evalkit.run._shards import Shard
from evalkit.store._stored import StoredOutput, read_for_resume, read_outputs, read_shard_failures


@dataclass(frozen=True, slots=True)
class ShardRetry:
    """The failed pairs of one finished shard that a ``retry_errors`` pass runs again.

    Attributes:
        skip: Per item id to run again, the scorer ids it already has a score from.
        outputs: Per item id, the stored output its pairs are scored on (items whose
            target succeeded).
    """

    skip: Mapping[str, frozenset[str]]
    outputs: Mapping[str, StoredOutput]

    @property
    def items(self) -> int:
        """The items run again."""
        return len(self.skip)

    def wanted(self, item: Item) -> bool:
        """Whether ``item`` is one of the shard's items to run again."""
        return item.id in self.skip


def plan_shard_retry(
    run: Resuming, shards: Sequence[Shard]
) -> tuple[ResumePlan, dict[int, ShardRetry]]:
    """Check the stored sharded experiment can re-run its failed pairs; plan them per shard.

    Returns:
        The plan over the whole experiment (its ``to_run`` the items run again), and per
        shard index, that shard's `ShardRetry` (shards without a failure are absent).

    Raises:
        ConfigError: The experiment was run in a single process or over another slice, is
            still running or ``completed``, its finished shards are not ``shards`` (the
            dataset's row groups changed), or its fingerprint differs (without ``force``).
        StoreError: The store or the experiment does not exist.
    """
    assert run.options.retry_errors  # a sharded resume without it: check_shard_resume alone
    check_shard_resume(run, shards)
    store, experiment_id = run.store, run.experiment_id
    stored = read_for_resume(store, experiment_id)
    failures = read_shard_failures(store, experiment_id)
    failed = [item for items in failures.values() for item in items]
    if not failed:
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) has no failed pair in a finished shard:"
            " nothing to retry (a resume without --retry-errors runs its unfinished shards)"
        )
    outputs = read_outputs(store, stored.id, failed)
    retries = {
        index: ShardRetry(
            {item: stored.scored.get(item, frozenset()) for item in items},
            {item: outputs[item] for item in items if item in outputs},
        )
        for index, items in failures.items()
    }
    skip = {item: ids for retry in retries.values() for item, ids in retry.skip.items()}
    return ResumePlan(stored, skip, True, len(failed), outputs), retries

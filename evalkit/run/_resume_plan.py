"""Resuming a stored experiment: whether this run may finish it, and which pairs it runs.

A pair is *scored* when the store holds its score, *failed* when its item was evaluated but the
pair has no score (the scorer failed, or the item's target did), *missing* when its item was
never evaluated (the run stopped first). A resume runs the failed and missing pairs; with
``retry_errors`` only the failed ones. Scored pairs are never run again.

A failed pair of an item whose target succeeded is scored on the item's stored output, with
no new target call: the item's scores then all sit beside the output they were computed from.
An item whose target failed has no output and no score, so it is evaluated afresh: a new
target call, then every scorer. ``regenerate`` treats every item with a failed pair that way
(its scored pairs are run again too, on the new output).

An experiment resumes the way it was run. A sharded one (``executor=`` or ``shard=``; its
config records the executor) is finished by a sharded run that skips its finished shards
(`check_shard_resume`), and its failed pairs are re-run by a sharded ``retry_errors``
pass over the finished shards that hold them (``_shard_retry.py``); a single-process one by a
single-process run, pair by pair (`plan_resume`). Crossing over is refused: a
single-process pass over a sharded experiment would write rows without ``shards_done``
records (a later sharded resume would run those shards again), and a sharded pass over a
single-process one would run again the items already scored.
See docs/pages/design/resume-the-way-it-ran.md.

Either kind is refused, unless forced, when this run's configuration would change results
(``_config_changes.py`` compares it with the stored one, field by field).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit._proc import process_alive, this_host
from evalkit.dataset import Dataset, Item, ItemBatches
from evalkit.errors import ConfigError
from evalkit.run._config_changes import check_changes, fingerprint_changes
from evalkit.run._options import RunOptions
from evalkit.run._shards import Shard
from evalkit.scorer import Scorer
from evalkit.store import recover
from evalkit.store._stored import (
    StoredExperiment,
    StoredOutput,
    read_done_shards,
    read_for_resume,
    read_outputs,
)


@dataclass(frozen=True, slots=True)
class Resuming:
    """A run that is to finish a stored experiment, as the resume checks see it.

    Attributes:
        options: The run's options: ``store``, ``resume`` (the stored experiment's id),
            ``limit``, ``force``, ``retry_errors`` and ``regenerate`` are the resume's.
        config: The run's config, compared with the stored one.
        scorers: The run's scorers.
        dataset: The run's dataset.
    """

    options: RunOptions
    config: Mapping[str, Any]
    scorers: Sequence[Scorer]
    dataset: Dataset

    @property
    def store(self) -> str:
        """The store holding the experiment."""
        assert self.options.store is not None  # prepare: a resume has a store
        return str(self.options.store)

    @property
    def experiment_id(self) -> str:
        """The id of the stored experiment to finish."""
        assert self.options.resume is not None
        return self.options.resume

    def changes_checked(self, stored: StoredExperiment) -> None:
        """Refuse, unless forced, a run whose configuration would change the stored results."""
        changes = fingerprint_changes(
            stored,
            config=self.config,
            scorers=self.scorers,
            dataset=self.dataset,
            limit=self.options.limit,
        )
        check_changes(stored, changes, force=self.options.force)


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """What a resume runs.

    Attributes:
        stored: The stored experiment.
        skip: Per item id, the scorer ids not to run on it.
        retry_errors: Whether only failed pairs run (never-evaluated items are skipped).
        to_run: Items this pass evaluates.
        outputs: Per item id, the stored output its remaining pairs are scored on (items
            whose target succeeded; none with ``regenerate``).
    """

    stored: StoredExperiment
    skip: Mapping[str, frozenset[str]]
    retry_errors: bool
    to_run: int
    outputs: Mapping[str, StoredOutput]

    def wanted(self, item: Item, scorer_ids: frozenset[str]) -> bool:
        """Whether ``item`` has a pair left to run."""
        if self.retry_errors and item.id not in self.stored.attempted:
            return False
        return not scorer_ids <= self.skip.get(item.id, frozenset())


def ran_sharded(stored: StoredExperiment) -> bool:
    """Whether ``stored`` was run shard by shard (it recorded an executor)."""
    return stored.config.get("executor") is not None


def _slice_of(config: Mapping[str, Any]) -> tuple[int, int] | None:
    shard = config.get("shard")
    if isinstance(shard, Mapping):
        return int(shard["index"]), int(shard["count"])
    return None


def _sharded_options(stored: StoredExperiment) -> tuple[str, str]:
    """How to ask for a sharded resume of ``stored``: the ``run_evals`` and CLI options."""
    executor = str(stored.config.get("executor"))
    piece = _slice_of(stored.config)
    api = f"executor={executor!r}"
    cli = f"--executor {executor}"
    if piece is not None:
        api += f", shard='{piece[0]}/{piece[1]}'"
        cli += f" --shard {piece[0]}/{piece[1]}"
    return api, cli


def _check_status(stored: StoredExperiment, *, retry_errors: bool, force: bool) -> None:
    pid, host = stored.writer
    live_here = pid is not None and host == this_host() and process_alive(pid)
    # --force may take over a row whose writer cannot be checked (another host, or a store
    # written before pids were recorded), never one whose process is alive here.
    if stored.status == "running" and (live_here or not force):
        raise ConfigError(
            f"experiment {stored.id} is still running (pid {pid} on {host}); wait for it or"
            " stop it before resuming (--force takes over a run of another host)"
        )
    if stored.status == "completed" or (
        stored.status == "completed_with_errors" and not retry_errors
    ):
        if retry_errors:
            hint = ""
        else:
            hint = " (use --retry-errors / retry_errors=True to re-run failures)"
        raise ConfigError(f"experiment {stored.id} is {stored.status}: nothing to resume{hint}")


def _refuse_sharded(stored: StoredExperiment, *, retry_errors: bool, force: bool) -> None:
    """Refuse a single-process resume of a sharded experiment, saying what to use instead."""
    api, cli = _sharded_options(stored)
    if retry_errors:
        _check_status(stored, retry_errors=True, force=force)  # a completed one: nothing to do
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) was run sharded: re-run its failed pairs"
            f" with {api}, retry_errors=True (evalkit run --resume {stored.id} {cli}"
            " --retry-errors), which runs them in the finished shards that hold them"
        )
    _check_status(stored, retry_errors=False, force=force)  # a finished one: nothing to do
    raise ConfigError(
        f"experiment {stored.id} ({stored.name}) was run sharded: resume it with {api}"
        f" (evalkit run --resume {stored.id} {cli}), which runs its unfinished shards"
    )


def check_shard_resume(run: Resuming, shards: Sequence[Shard]) -> StoredExperiment:
    """Check a sharded run can finish the stored experiment (it then skips finished shards),
    or with ``retry_errors`` re-run its failed pairs.

    The stored experiment must have been run sharded, over the same slice of the shards
    (``config["shard"]``), and be unfinished (with ``retry_errors``, ``completed_with_errors``
    will do); its fingerprint must match unless ``force``, which never allows another set of
    scorers (finished shards are not run again). Its finished shards must be the row groups
    ``shards`` (this run's plan) gives the same index: shards are skipped, and retried, by
    index, so a dataset rewritten with other row groups (the same rows, so the same
    fingerprint) is refused, even with ``force``.

    Raises:
        ConfigError: One of these does not hold; the message says which option to use.
        StoreError: The store or the experiment does not exist.
    """
    store, experiment_id, config = run.store, run.experiment_id, run.config
    recover(store)  # rows spilled while the store was locked count as done
    stored = read_for_resume(store, experiment_id, pairs=False)
    if not ran_sharded(stored):
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) was run in a single process: resume it"
            " without executor=/shard= (evalkit run without --executor/--shard), which"
            " skips its scored pairs"
        )
    before, after = _slice_of(stored.config), _slice_of(config)
    if before != after:
        ran = "every shard" if before is None else f"slice {before[0]}/{before[1]}"
        use = (
            "no shard= (no --shard)"
            if before is None
            else f"shard='{before[0]}/{before[1]}' (--shard {before[0]}/{before[1]})"
        )
        raise ConfigError(f"experiment {stored.id} ({stored.name}) ran {ran}: resume it with {use}")
    _check_status(stored, retry_errors=run.options.retry_errors, force=run.options.force)
    old_ids = {s.get("id") for s in stored.config.get("scorers", [])}
    new_ids = {s.get("id") for s in config.get("scorers", [])}
    if old_ids != new_ids:
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) is sharded: its finished shards are not"
            " run again, so a resume cannot change its scorers (not even with --force):"
            f" {sorted(map(str, old_ids))} -> {sorted(map(str, new_ids))}"
        )
    _check_layout(stored, read_done_shards(store, experiment_id), shards)
    run.changes_checked(stored)
    return stored


def _check_layout(
    stored: StoredExperiment,
    done: Sequence[tuple[int, str, int, int, int]],
    shards: Sequence[Shard],
) -> None:
    """Refuse a resume whose planned shards are not the recorded finished ones, index by index."""
    planned = {s.index: s for s in shards}
    for index, file, group, offset, rows in done:
        shard = planned.get(index)
        if shard is not None and (
            Path(shard.file).name,
            shard.row_group,
            shard.offset,
            shard.rows,
        ) == (Path(file).name, group, offset, rows):
            continue
        now = (
            "no such shard now"
            if shard is None
            else f"now {Path(shard.file).name} row group {shard.row_group}, rows"
            f" {shard.offset}-{shard.offset + shard.rows - 1}"
        )
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}): the dataset's row groups changed since"
            f" it ran (finished shard {index} was {Path(file).name} row group {group}, rows"
            f" {offset}-{offset + rows - 1}; {now}). A sharded run is resumed shard by shard,"
            " so its files must keep their row groups: restore them, or start a new run"
        )


def plan_resume(run: Resuming, *, total: int) -> ResumePlan:
    """Check the stored experiment can be resumed by this run and plan the pass (``total``:
    the items of the whole run).

    With ``regenerate``, an evaluated item with a pair left to run gets a new output and all
    of its scorers run again; without, its remaining pairs are scored on its stored output.

    Raises:
        ConfigError: The experiment was run sharded, is still running, or already completed
            (without ``retry_errors``), or its fingerprint differs (without ``force``).
        StoreError: The store or the experiment does not exist.
    """
    store, experiment_id = run.store, run.experiment_id
    retry_errors, force = run.options.retry_errors, run.options.force
    recover(store)  # rows spilled while the store was locked count as done
    record = read_for_resume(store, experiment_id, pairs=False)
    if ran_sharded(record):
        _refuse_sharded(record, retry_errors=retry_errors, force=force)
    stored = read_for_resume(store, experiment_id)
    _check_status(stored, retry_errors=retry_errors, force=force)
    run.changes_checked(stored)
    ids = frozenset(s.id for s in run.scorers)
    done = sum(1 for item, scored in stored.scored.items() if ids <= scored)
    if retry_errors:
        to_run = len(stored.attempted) - sum(
            1 for item in stored.attempted if ids <= stored.scored.get(item, frozenset())
        )
    else:
        to_run = max(total - done, 0)
    if run.options.regenerate:
        # Only fully scored items keep their scores; the others are evaluated afresh.
        skip = {item: scored for item, scored in stored.scored.items() if ids <= scored}
        return ResumePlan(stored, skip, retry_errors, to_run, {})
    unfinished = [i for i in stored.attempted if not ids <= stored.scored.get(i, frozenset())]
    outputs = read_outputs(store, stored.id, unfinished)
    return ResumePlan(stored, stored.scored, retry_errors, to_run, outputs)


class ResumeBatches:
    """The dataset's item batches without the items that have nothing left to run
    (``wanted`` says which items to keep)."""

    def __init__(self, batches: ItemBatches, wanted: Callable[[Item], bool]) -> None:
        self.batches = batches
        self.wanted = wanted

    @property
    def fingerprint(self) -> str | None:
        """The fingerprint of the whole dataset (skipped items included), once read."""
        return self.batches.fingerprint

    def __iter__(self) -> Iterator[list[Item]]:
        return self

    def __next__(self) -> list[Item]:
        while True:
            batch = next(self.batches)
            kept = [item for item in batch if self.wanted(item)]
            if kept:
                return kept

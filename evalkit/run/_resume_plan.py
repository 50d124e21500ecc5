"""Resuming a stored experiment: the fingerprint check, and which (item, scorer) pairs to run.

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
(:func:`check_shard_resume`), and its failed pairs are re-run by a sharded ``retry_errors``
pass over the finished shards that hold them (``_shard_retry.py``); a single-process one by a
single-process run, pair by pair (:func:`plan_resume`). Crossing over is refused: a
single-process pass over a sharded experiment would write rows without ``shards_done``
records (a later sharded resume would run those shards again), and a sharded pass over a
single-process one would run again the items already scored.
See docs/pages/design/resume-the-way-it-ran.md.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit._json import to_jsonable
from evalkit.dataset import Dataset, Item, ItemBatches
from evalkit.errors import ConfigError
from evalkit.run._shards import Shard
from evalkit.scorer import Scorer
from evalkit.store import (
    StoredExperiment,
    StoredOutput,
    process_alive,
    read_done_shards,
    read_for_resume,
    read_outputs,
    recover,
    this_host,
)

#: Config keys whose change makes earlier scores incomparable with new ones.
_COMPARED = ("dataset", "target", "limit", "repeats")


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


@dataclass(frozen=True, slots=True)
class Changes:
    """How the run about to resume an experiment differs from the stored one.

    Attributes:
        results: What changes results (dataset, target, limit, repeats, a scorer's judge model,
            prompt or sampling settings, its steps or definition version), one line per field:
            the resume is refused unless forced.
        moved: Where a judge or the target is reached (its ``base_url``, ``api_key_env`` or
            prepared ``client``), one line per endpoint: the resume goes on, with a note.
    """

    results: list[str]
    moved: list[str]


#: The fields of a judge's or a target's description that say where it is reached, not what it
#: answers: a moved endpoint resumes (docs/pages/how-to/resume.md#the-fingerprint-is-checked-first).
_LOCATION = ("base_url", "api_key_env", "client")

#: Recorded with a judge but not part of what it does: which fields were set explicitly (the
#: effective values are compared).
_IGNORED = ("_explicit",)

_ABSENT = object()


def _shown(value: Any) -> str:
    return "(not set)" if value is _ABSENT else repr(value)


def _diff(where: str, before: Any, after: Any, out: list[tuple[str, str, Any, Any]]) -> None:
    """Append ``(where, field, before, after)`` for each field that differs, walking into dicts
    so that a change is named by its own field (``scorer 'polite' judge model``)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in [*before, *(k for k in after if k not in before)]:
            if key in _IGNORED:
                continue
            old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if old == new:
                continue
            if isinstance(old, Mapping) and isinstance(new, Mapping):
                _diff(f"{where} {key}".strip(), old, new, out)
            else:
                out.append((where, str(key), old, new))
        return
    if before != after:
        out.append((where, "", before, after))


def _sort(found: list[tuple[str, str, Any, Any]], changes: Changes) -> None:
    """Split field changes into what changes results and where a judge or target is reached."""
    # One line per endpoint change: scorers sharing the file's [judge] moved together.
    moves: dict[tuple[str, str], list[str]] = {}
    for where, key, before, after in found:
        parent = where.rsplit(" ", 1)[-1] if where else ""
        if key in _LOCATION and parent in ("judge", "target"):
            if key == "base_url":
                change = f"moved: {_endpoint(before)} -> {_endpoint(after)}"
            else:
                change = f"{key}: {_shown(before)} -> {_shown(after)}"
            owner = "target" if where == "target" else f"judge of {where[: -len(' judge')]}"
            moves.setdefault((key, change), []).append(owner)
        else:
            name = f"{where} {key}".strip()
            changes.results.append(f"{name}: {_shown(before)} -> {_shown(after)}")
    for (_, change), owners in moves.items():
        changes.moved.append(f"{', '.join(owners)} {change}")


def _endpoint(url: Any) -> str:
    return "the default endpoint" if url is None or url is _ABSENT else str(url)


def fingerprint_changes(
    stored: StoredExperiment,
    *,
    config: Mapping[str, Any],
    scorers: Sequence[Scorer],
    dataset: Dataset,
    limit: int | None,
) -> Changes:
    """What differs between the stored experiment and the run about to resume it."""
    found: list[tuple[str, str, Any, Any]] = []
    old = stored.config
    for key in _COMPARED:
        _diff(key, old.get(key), config.get(key), found)
    changes = Changes([], [])
    old_scorers = {s.get("id"): s for s in old.get("scorers", [])}
    new_scorers = {s["id"]: s for s in config.get("scorers", [])}
    for sid in sorted(old_scorers.keys() - new_scorers.keys()):
        changes.results.append(f"scorer {sid!r} removed")
    for sid in sorted(new_scorers.keys() - old_scorers.keys()):
        changes.results.append(f"scorer {sid!r} added")
    by_id = {s.id: s for s in scorers}
    for sid in sorted(old_scorers.keys() & new_scorers.keys()):
        before, after = old_scorers[sid], new_scorers[sid]
        for part in ("judge", "steps"):
            _diff(f"scorer {sid!r} {part}", before.get(part), after.get(part), found)
        meta = to_jsonable(by_id[sid].metadata) if by_id[sid].metadata else None
        _diff(f"scorer {sid!r} metadata (definition/prompt version)",
              stored.scorer_metadata.get(sid), meta, found)  # fmt: skip
    _sort(found, changes)
    if stored.dataset_fingerprint is not None:
        # Only a pass that read every row recorded one; a killed first pass did not, and the
        # resumed pass records it at its end. Computing it here costs one extra read.
        batches = dataset.batches(limit=limit)
        for _ in batches:
            pass
        current = batches.fingerprint
        if current != stored.dataset_fingerprint:
            changes.results.append(
                f"dataset content fingerprint: {stored.dataset_fingerprint} -> {current}"
            )
    return changes


def check_changes(stored: StoredExperiment, changes: Changes, *, force: bool) -> None:
    """Refuse a resume whose results would differ (unless ``force``); note a moved endpoint.

    Raises:
        ConfigError: Something that changes results differs, without ``force``; the message
            names each differing field on a line of its own, and ``--force``.
    """
    if changes.results and not force:
        listed = "".join(f"\n  {line}" for line in changes.results)
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) was run with another configuration;"
            f" refusing to resume. What differs:{listed}\n"
            "--force (force=True) resumes it anyway, recording the new configuration"
        )
    for line in changes.moved:
        warnings.warn(f"evalkit: {line}; resuming {stored.id}", RuntimeWarning, stacklevel=2)


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


def check_shard_resume(
    store: str | os.PathLike[str],
    experiment_id: str,
    *,
    config: Mapping[str, Any],
    scorers: Sequence[Scorer],
    dataset: Dataset,
    limit: int | None,
    force: bool,
    shards: Sequence[Shard],
    retry_errors: bool = False,
) -> StoredExperiment:
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
    _check_status(stored, retry_errors=retry_errors, force=force)
    old_ids = {s.get("id") for s in stored.config.get("scorers", [])}
    new_ids = {s.get("id") for s in config.get("scorers", [])}
    if old_ids != new_ids:
        raise ConfigError(
            f"experiment {stored.id} ({stored.name}) is sharded: its finished shards are not"
            " run again, so a resume cannot change its scorers (not even with --force):"
            f" {sorted(map(str, old_ids))} -> {sorted(map(str, new_ids))}"
        )
    _check_layout(stored, read_done_shards(store, experiment_id), shards)
    changes = fingerprint_changes(
        stored, config=config, scorers=scorers, dataset=dataset, limit=limit
    )
    check_changes(stored, changes, force=force)
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


def plan_resume(
    store: str | os.PathLike[str],
    experiment_id: str,
    *,
    config: Mapping[str, Any],
    scorers: Sequence[Scorer],
    dataset: Dataset,
    total: int,
    limit: int | None,
    retry_errors: bool,
    force: bool,
    regenerate: bool = False,
) -> ResumePlan:
    """Check the stored experiment can be resumed by this run and plan the pass.

    With ``regenerate``, an evaluated item with a pair left to run gets a new output and all
    of its scorers run again; without, its remaining pairs are scored on its stored output.

    Raises:
        ConfigError: The experiment was run sharded, is still running, or already completed
            (without ``retry_errors``), or its fingerprint differs (without ``force``).
        StoreError: The store or the experiment does not exist.
    """
    recover(store)  # rows spilled while the store was locked count as done
    record = read_for_resume(store, experiment_id, pairs=False)
    if ran_sharded(record):
        _refuse_sharded(record, retry_errors=retry_errors, force=force)
    stored = read_for_resume(store, experiment_id)
    _check_status(stored, retry_errors=retry_errors, force=force)
    changes = fingerprint_changes(
        stored, config=config, scorers=scorers, dataset=dataset, limit=limit
    )
    check_changes(stored, changes, force=force)
    ids = frozenset(s.id for s in scorers)
    done = sum(1 for item, scored in stored.scored.items() if ids <= scored)
    if retry_errors:
        to_run = len(stored.attempted) - sum(
            1 for item in stored.attempted if ids <= stored.scored.get(item, frozenset())
        )
    else:
        to_run = max(total - done, 0)
    if regenerate:
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

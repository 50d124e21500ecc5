"""What two stored runs say about their judges: per scorer, the judge each run configured and
the models that answered, and what else differs between the runs (their items, the outputs
judged, the target, the labels).

Read from the experiments' stored config (``scorers[].judge``, ``target``, ``labels``),
``experiment_scorers.metadata`` (a scorer's definition and prompt version), ``judge_executions``
(``judge_model_id``: a step's own judge is recorded only there) and ``experiment_items``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit._json import stored_config
from evalkit.errors import StoreError
from evalkit.store import connection

#: The judge settings that change what the judge answers; the others (endpoint, key, timeouts,
#: retries, rate limits, cache, batch mode) change how it is asked, not what it says.
JUDGE_SETTINGS = ("provider", "instructions", "temperature", "max_tokens", "extra_body")


@dataclass(frozen=True, slots=True)
class RunFacts:
    """One stored run, as far as a judge comparison needs it.

    Attributes:
        experiment_id: The run.
        fingerprint: Its dataset fingerprint (None when not recorded, e.g. a sharded run).
        config: Its stored config.
        scorers: Per scorer id, its stored config entry (``judge``, ``steps``…).
        metadata: Per scorer id, its definition and prompt version as stored.
        models: Per scorer id, the judge models that answered its calls, sorted.
    """

    experiment_id: str
    fingerprint: str | None
    config: Mapping[str, Any]
    scorers: Mapping[str, Mapping[str, Any]]
    metadata: Mapping[str, Any]
    models: Mapping[str, tuple[str, ...]]

    def judged(self, scorer_id: str) -> bool:
        """True when the scorer has a judge or asked one in this run."""
        entry = self.scorers.get(scorer_id) or {}
        return entry.get("judge") is not None or bool(self.models.get(scorer_id))

    def judge_models(self, scorer_id: str) -> tuple[str, ...]:
        """The models that answered the scorer, else the model its judge was configured with."""
        if self.models.get(scorer_id):
            return self.models[scorer_id]
        model = ((self.scorers.get(scorer_id) or {}).get("judge") or {}).get("model")
        return () if model is None else (str(model),)


def read_run(store: str | os.PathLike[str], experiment_id: str) -> RunFacts:
    """The judge facts of one stored run.

    Raises:
        StoreError: No experiment has this id.
    """
    with connection(store, read_only=True) as con:
        head = con.execute(
            "SELECT dataset_fingerprint, config FROM experiments WHERE id = ?", [experiment_id]
        ).fetchone()
        if head is None:
            raise StoreError(f"{store}: no experiment with id {experiment_id!r}")
        metadata = con.execute(
            "SELECT scorer_id, metadata FROM experiment_scorers WHERE experiment_id = ?",
            [experiment_id],
        ).fetchall()
        models = con.execute(
            "SELECT scorer_id, list(DISTINCT judge_model_id ORDER BY judge_model_id)"
            " FROM judge_executions WHERE experiment_id = ? AND judge_model_id IS NOT NULL"
            " GROUP BY scorer_id",
            [experiment_id],
        ).fetchall()
    config = stored_config(head[1])
    scorers = {str(s.get("id")): s for s in config.get("scorers") or () if isinstance(s, dict)}
    return RunFacts(
        experiment_id,
        head[0],
        config,
        scorers,
        {sid: None if m is None else json.loads(m) for sid, m in metadata},
        {sid: tuple(found) for sid, found in models},
    )


def judge_differences(
    before: RunFacts, after: RunFacts, scorer_id: str, after_id: str | None = None
) -> tuple[str, ...]:
    """What differs in the scorer's judge between two runs: its model, a setting that changes
    the answers, the scorer's definition or prompt version, its steps. ``after_id`` is the
    scorer's stored id in ``after`` when it is not ``scorer_id`` (a prebuilt scorer stored
    under its old id in one run, docs/pages/design/one-scorer-id-rule.md)."""
    ids = (scorer_id, after_id or scorer_id)
    runs = (before, after)
    found = []
    models = before.judge_models(ids[0]), after.judge_models(ids[1])
    if models[0] != models[1]:
        found.append(f"model {_models(models[0])} → {_models(models[1])}")
    judges = [
        (run.scorers.get(i) or {}).get("judge") or {} for run, i in zip(runs, ids, strict=True)
    ]
    for name in JUDGE_SETTINGS:
        if judges[0].get(name) != judges[1].get(name):
            found.append(f"{name} {_short(judges[0].get(name))} → {_short(judges[1].get(name))}")
    meta = before.metadata.get(ids[0]), after.metadata.get(ids[1])
    if meta[0] != meta[1]:
        found.append(f"definition/prompt version {_short(meta[0])} → {_short(meta[1])}")
    steps = [(run.scorers.get(i) or {}).get("steps") for run, i in zip(runs, ids, strict=True)]
    if steps[0] != steps[1]:
        found.append(f"steps {_short(steps[0])} → {_short(steps[1])}")
    return tuple(found)


def confounds(
    store: str | os.PathLike[str],
    before: RunFacts,
    after: RunFacts,
    scorer_ids: list[tuple[str, str]],
) -> tuple[str, ...]:
    """How the two runs differ in more than their judges, each as a sentence (none: the judges
    read the same items, inputs and outputs). ``scorer_ids`` holds each compared scorer's
    stored ids, in ``before`` and in ``after``."""
    found = []
    if before.fingerprint and after.fingerprint and before.fingerprint != after.fingerprint:
        found.append(f"dataset fingerprint {before.fingerprint} → {after.fingerprint}")
    unpaired, paired, inputs, outputs = _item_differences(store, before, after)
    if unpaired:
        found.append(f"{unpaired} item(s) are in one run only ({paired} in both)")
    if inputs:
        found.append(f"the input or ground truth differs on {inputs} of {paired} paired items")
    if outputs:
        found.append(
            f"the output differs on {outputs} of {paired} paired items"
            " (the judges read different outputs)"
        )
    targets = before.config.get("target"), after.config.get("target")
    if targets[0] != targets[1]:
        found.append(f"target {_short(targets[0])} → {_short(targets[1])}")
    labels = [run.config.get("labels") or {} for run in (before, after)]
    for old, new in scorer_ids:
        if labels[0].get(old) != labels[1].get(new):
            found.append(
                f"the labels of {new!r} differ: {_short(labels[0].get(old))} → "
                f"{_short(labels[1].get(new))}"
            )
    return tuple(found)


_LAST_PASS = """
    SELECT item_id, input, ground_truth, output FROM experiment_items WHERE experiment_id = ?
    QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY completed_at DESC NULLS LAST) = 1
"""


def _item_differences(
    store: str | os.PathLike[str], before: RunFacts, after: RunFacts
) -> tuple[int, int, int, int]:
    """Items in one run only, items in both, and of those the ones whose input or ground truth
    differ and the ones whose output differs."""
    sql = f"""
        WITH b AS ({_LAST_PASS}), c AS ({_LAST_PASS})
        SELECT
            count(*) FILTER (WHERE b.item_id IS NULL OR c.item_id IS NULL),
            count(*) FILTER (WHERE b.item_id IS NOT NULL AND c.item_id IS NOT NULL),
            count(*) FILTER (WHERE b.item_id IS NOT NULL AND c.item_id IS NOT NULL
                AND (b.input IS DISTINCT FROM c.input
                     OR b.ground_truth IS DISTINCT FROM c.ground_truth)),
            count(*) FILTER (WHERE b.item_id IS NOT NULL AND c.item_id IS NOT NULL
                AND b.output IS DISTINCT FROM c.output)
        FROM b FULL JOIN c ON b.item_id = c.item_id
    """
    with connection(store, read_only=True) as con:
        row = con.execute(sql, [before.experiment_id, after.experiment_id]).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def _models(models: tuple[str, ...]) -> str:
    return ", ".join(models) if models else "(none)"


def _short(value: Any, width: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"

"""Turning finished items into the store's rows: column-wise buffers, one Arrow table each.

A finished item becomes one ``experiment_items`` row, a ``scores`` row per successful scorer,
a ``scorer_errors`` row per failed scorer (never with its recovered score) and a
``judge_executions`` row per judge execution of any scorer, success or failed, and with
``repeats`` a ``score_repeats`` row per execution of a repeated pair, each in the
column order of the store's `ARROW_SCHEMAS`. Rows are kept as tuples and
transposed into Arrow columns once per batch. A ``scores`` row holds only what differs
between an item's scorers, and the position of its item's row: the columns it shares with the
item (run id, input, output, ground truth, context, source, time) are converted once per item
and gathered into the scores table with Arrow's ``take``. A `RowBuffer` is what
`write` takes (a `RowBatch`).

Design pages: docs/pages/design/store-rows-via-arrow.md (column-wise buffers),
score-row-points-at-item.md (the ``take``) and store-takes-arrow.md (why rows are built here).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from evalkit._arrow_arrays import arrow_array
from evalkit._json import json_text
from evalkit.errors import StoreError
from evalkit.run._outcome import Repeat
from evalkit.scorer import STEP_ORDER
from evalkit.store._arrow import ARROW_SCHEMAS

if TYPE_CHECKING:
    from evalkit.judge import JudgeExecution
    from evalkit.run._outcome import ItemResult, ScorerOutcome
    from evalkit.scorer import ScorerRunResult

_S = pa.string()
_F = pa.float64()
_I = pa.int64()

# The ``scores`` columns an item's scorers share, taken from the item's row (same name there).
_FROM_ITEM = (
    "experiment_id", "run_id", "input", "output", "ground_truth", "request_context", "source",
)  # fmt: skip

# What a buffered ``scores`` row holds: its item's row, then the columns of its own.
_SCORE_ROWS = pa.schema(
    [
        ("item_row", _I), ("scorer_id", _S), ("item_id", _S), ("score", _F), ("reason", _S),
        ("preprocess_step_result", _S), ("analyze_step_result", _S),
        ("preprocess_prompt", _S), ("analyze_prompt", _S), ("generate_score_prompt", _S),
        ("generate_reason_prompt", _S), ("duration_ms", _F),
    ]
)  # fmt: skip


class _Rows:
    """Rows of one table as tuples in schema order; transposed into columns at flush time
    (one tuple per row is far cheaper than an append per cell)."""

    __slots__ = ("rows", "schema")

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.rows: list[tuple[Any, ...]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def table(self) -> pa.Table:
        # map(itemgetter) transposes in C, several times faster than zip(*rows) on 100k rows.
        rows = self.rows
        return pa.table(
            # Text UTF-8 cannot hold (a lone surrogate) is stored as U+FFFD, never failing the
            # batch: evalkit/_utf8.py.
            [
                arrow_array(list(map(itemgetter(i), rows)), f.type)
                for i, f in enumerate(self.schema)
            ],
            schema=self.schema,
        )


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
)
_NO_USAGE = (None,) * len(_USAGE_FIELDS)
_MAX_COUNT = 2**63 - 1  # the store's BIGINT


def _count(value: Any) -> int | None:
    """A token count the BIGINT column holds, else NULL. Provider counts are checked where
    they enter (evalkit/judge/_usage.py); a step of the user's own may record any int."""
    if type(value) is int and 0 <= value <= _MAX_COUNT:  # every count of a real provider
        return value
    if value is None or isinstance(value, bool):
        return None
    try:
        count = operator.index(value)  # an int, or a numpy integer
    except TypeError:
        return None
    return count if 0 <= count <= _MAX_COUNT else None


def _amount(value: Any) -> float | None:
    """A cost the DOUBLE column holds (finite), else NULL (an int past the float range)."""
    try:
        amount = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return amount if math.isfinite(amount) else None


class RowBuffer:
    """Rows of finished items for one experiment, waiting to be written in one transaction."""

    def __init__(self, experiment_id: str, scorer_names: Mapping[str, str]) -> None:
        self.experiment_id = experiment_id
        self.scorer_names = scorer_names
        self.items = _Rows(ARROW_SCHEMAS["experiment_items"])
        self.scores = _Rows(_SCORE_ROWS)
        self.errors = _Rows(ARROW_SCHEMAS["scorer_errors"])
        self.judge = _Rows(ARROW_SCHEMAS["judge_executions"])
        self.repeats = _Rows(ARROW_SCHEMAS["score_repeats"])
        self.rows = 0
        self.succeeded = 0
        self.failed = 0

    def tables(self) -> dict[str, pa.Table]:
        """The non-empty tables, by store table name.

        Raises:
            StoreError: A value no store column can hold. Values from outside are checked
                where they enter (a judge's usage counts: evalkit/judge/_usage.py), text UTF-8
                cannot encode is stored with U+FFFD (evalkit/_utf8.py) and JSON columns take
                any value (evalkit/_json.py); this names one no check covered, instead of a
                bare pyarrow traceback.
        """
        try:
            return self._tables()
        except (ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
            raise StoreError(
                f"{self.succeeded + self.failed} finished items could not be turned into the"
                f" store's rows: a value no store column can hold ({type(exc).__name__}:"
                f" {exc}); they are not stored"
            ) from exc

    def _tables(self) -> dict[str, pa.Table]:
        tables: dict[str, pa.Table] = {}
        if self.items.rows:
            tables["experiment_items"] = self.items.table()
        if self.scores.rows:
            tables["scores"] = self._scores_table(tables["experiment_items"])
        if self.errors.rows:
            tables["scorer_errors"] = self.errors.table()
        if self.judge.rows:
            tables["judge_executions"] = self.judge.table()
        if self.repeats.rows:
            tables["score_repeats"] = self.repeats.table()
        return tables

    def _scores_table(self, items: pa.Table) -> pa.Table:
        own = self.scores.table()
        at = own.column("item_row")
        scorer_id = own.column("scorer_id")
        names = self.scorer_names
        # An id the mapping lacks finds no index, and a null index takes a null name.
        name_of = arrow_array(list(names.values()), _S).take(
            pc.index_in(scorer_id, value_set=arrow_array(list(names), _S))
        )
        columns = {
            **{name: items.column(name).take(at) for name in _FROM_ITEM},
            "created_at": items.column("completed_at").take(at),
            "scorer_name": name_of,
        }
        schema = ARROW_SCHEMAS["scores"]
        return pa.table(
            [columns[f.name] if f.name in columns else own.column(f.name) for f in schema],
            schema=schema,
        )

    def add(self, result: ItemResult) -> None:
        """Buffer every row of one finished item."""
        item = result.item
        exp = self.experiment_id
        run_id = result.run_id
        when = result.completed_at_us
        source = result.source
        names = self.scorer_names
        enc_input = json_text(item.input)
        enc_truth = json_text(item.ground_truth)
        enc_context = json_text(item.request_context)
        enc_output = json_text(result.output)
        item_row = len(self.items.rows)
        scores = self.scores.rows
        ok = 0
        for o in result.outcomes:
            run = o.result
            if o.status == "success":
                assert run is not None
                ok += 1
                scores.append(
                    (
                        item_row, o.scorer_id, o.item_id, o.score, o.reason,
                        json_text(run.preprocess_step_result),
                        json_text(run.analyze_step_result), run.preprocess_prompt,
                        run.analyze_prompt, run.generate_score_prompt,
                        run.generate_reason_prompt, o.duration_ms,
                    )
                )  # fmt: skip
            else:
                # Deliberately no score: a recovered score of a failed scorer is never stored.
                error = o.error
                self.errors.rows.append(
                    (
                        exp, run_id, o.scorer_id, names.get(o.scorer_id), o.item_id,
                        o.failed_step, json_text(list(o.completed_steps)),
                        error.name if error else None, error.message if error else None,
                        json_text(error.to_dict()) if error else None, o.duration_ms, when,
                        error.code if error else None,
                    )
                )  # fmt: skip
            if run is not None and run.judge:
                self._add_judge(result, o, run)
            if o.repeats:
                self._add_repeats(result, o)
        failed = len(result.outcomes) - ok
        self.items.rows.append(
            (
                exp, item.id, item.index, run_id, result.status, source, enc_input, enc_truth,
                enc_context, json_text(item.metadata), enc_output,
                json_text(result.error.to_dict()) if result.error else None, ok, failed,
                result.target_ms, result.duration_ms, when,
            )
        )  # fmt: skip
        self.rows += 1 + len(result.outcomes)
        if result.status == "success":
            self.succeeded += 1
        else:
            self.failed += 1

    def _add_judge(
        self,
        result: ItemResult,
        outcome: ScorerOutcome,
        run: ScorerRunResult,
        repeat: Repeat | None = None,
    ) -> None:
        judge = run.judge
        for step in STEP_ORDER:
            record = judge.get(step)
            if record is None:
                continue
            for index, execution in enumerate(record.executions):
                self.judge.rows.append(
                    self._execution_row(result, outcome, step, index, execution, repeat)
                )
                self.rows += 1

    def _add_repeats(self, result: ItemResult, o: ScorerOutcome) -> None:
        """Every execution of a repeated pair, the pair's own (0) first; the judge calls of
        the repeats (the pair's own are already in)."""
        exp, run_id, when = self.experiment_id, result.run_id, result.completed_at_us
        first = Repeat.of(0, o)
        for r in (first, *o.repeats):
            error = r.error
            self.repeats.rows.append(
                (
                    exp, run_id, o.item_id, o.scorer_id, r.index, r.status, r.score, r.reason,
                    error.name if error else None, error.message if error else None,
                    r.duration_ms, when,
                )
            )  # fmt: skip
            if r.index and r.result is not None and r.result.judge:
                self._add_judge(result, o, r.result, r)
        self.rows += 1 + len(o.repeats)

    def _execution_row(
        self,
        result: ItemResult,
        outcome: ScorerOutcome,
        step: str,
        index: int,
        ex: JudgeExecution,
        repeat: Repeat | None,
    ) -> tuple[Any, ...]:
        usage, cost, error = ex.usage, ex.cost, ex.error
        tokens = (
            tuple(_count(getattr(usage, name)) for name in _USAGE_FIELDS)
            if usage is not None
            else _NO_USAGE
        )
        has_output = ex.status == "success" or ex.output is not None
        return (
            self.experiment_id, result.run_id, outcome.item_id, outcome.scorer_id,
            outcome.status if repeat is None else repeat.status, step, index, ex.status,
            ex.judge_model_id, ex.judge_provider,
            ex.attempt_count, ex.model_call_count, ex.duration_ms, *tokens,
            _amount(cost.amount) if cost is not None else None,
            cost.unit if cost is not None else None,
            cost.source if cost is not None else None,
            error.name if error is not None else None,
            error.message if error is not None else None,
            error.code if error is not None else None, ex.finish_reason, ex.raw_output,
            ex.prompt, json_text(ex.output) if has_output else None, ex.cached,
            result.completed_at_us, 0 if repeat is None else repeat.index, ex.truncated,
            ex.queue_ms, ex.request_ms,
            json_text([a.to_dict() for a in ex.attempts]) if ex.attempts else None,
        )  # fmt: skip

"""Schema version 8: the history of nights (issue 29).

``experiments`` gains the run's ``verdict`` ('passed', 'failed', or NULL when no gate could
run), the id of the baseline it was judged against (``baseline_id``) and why that run was
chosen (``baseline_reason``); ``scorer_gates`` holds each scorer's gate outcome and reasons;
``baseline_pins`` records each pin and unpin of an experiment's baseline. Older runs keep a
NULL verdict: they were never judged in the store. Listed in ``_schema.MIGRATIONS``.
"""

from __future__ import annotations

import duckdb

from evalkit.store._lake import lake_ddl
from evalkit.store._schema_v7 import JUDGE_USAGE_V7

_VERDICTS = """
ALTER TABLE experiments ADD COLUMN verdict VARCHAR;
ALTER TABLE experiments ADD COLUMN baseline_id VARCHAR;
ALTER TABLE experiments ADD COLUMN baseline_reason VARCHAR;
CREATE TABLE IF NOT EXISTS scorer_gates (
    experiment_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    passed BOOLEAN NOT NULL,
    reasons JSON NOT NULL,
    mean DOUBLE,
    threshold_min DOUBLE,
    threshold_max DOUBLE,
    error_rate DOUBLE,
    max_error_rate DOUBLE,
    baseline_id VARCHAR,
    baseline_mean DOUBLE,
    delta DOUBLE,
    p_value DOUBLE,
    regression VARCHAR,
    judged_at TIMESTAMP NOT NULL
);
"""
_ERROR_CODES = """
ALTER TABLE scorer_errors ADD COLUMN error_code VARCHAR;
"""
# A missing API key is now one attempt that sent nothing (request_ms NULL, attempts set): only
# rows written before request_ms was kept (attempts NULL too) fall back to their duration.
_BEFORE_REQUEST_MS = "AND attempt_count > 0 THEN"
_JUDGE_USAGE_V8 = JUDGE_USAGE_V7.replace(
    _BEFORE_REQUEST_MS, "AND attempt_count > 0 AND attempts IS NULL THEN"
)
_PINS = """
CREATE TABLE IF NOT EXISTS baseline_pins (
    experiment_name VARCHAR NOT NULL,
    experiment_id VARCHAR,
    pinned_by VARCHAR,
    note VARCHAR,
    created_at TIMESTAMP NOT NULL
);
"""


def migrate_to_8(con: duckdb.DuckDBPyConnection) -> None:
    # A run's verdict lives with it, so a failed night shows as failed wherever runs are
    # listed, and "latest" can skip failed nights: a regression is never accepted by waiting
    # one night. A pin (experiment_id set) or an unpin (NULL) is a row: the newest row of a
    # name is in force, and the rows are the history of who moved the bar and why.
    lake_ddl(con, _VERDICTS)
    lake_ddl(con, _PINS)
    # A failure's machine-readable code (a JudgeError's: "empty_extraction", "timeout", an
    # HTTP status) beside its name and message; NULL for older rows and errors without one.
    lake_ddl(con, _ERROR_CODES)
    con.execute(_JUDGE_USAGE_V8)

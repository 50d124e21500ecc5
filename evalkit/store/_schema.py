"""The score store's schema, in one place: every table's DDL, as the migrations that build it
version by version (the Arrow schemas of the rows a writer appends are in ``_arrow.py``).

A store records its version in ``schema_version``; ``migrate`` (evalkit.store._migrate)
applies every migration above it, each DDL frozen as that version wrote it.
Views are recreated by the migration that changes them.
Why the schema is in one place and writers take Arrow: docs/pages/design/store-takes-arrow.md.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from evalkit._intervals import SQL_MACROS
from evalkit.store._lake import in_lake, lake_ddl, partition_by_experiment
from evalkit.store._prices import PRICES_AS_OF, SEED_PRICES

_TABLES_V1 = """
CREATE TABLE schema_version (
    version INTEGER NOT NULL,
    applied_at TIMESTAMP NOT NULL
);
CREATE TABLE experiments (
    id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    description VARCHAR,
    dataset VARCHAR,
    dataset_fingerprint VARCHAR,
    config JSON,
    metadata JSON,
    status VARCHAR NOT NULL,
    total_items BIGINT NOT NULL,
    succeeded_count BIGINT NOT NULL,
    failed_count BIGINT NOT NULL,
    started_at TIMESTAMP NOT NULL,
    completed_at TIMESTAMP,
    evalkit_version VARCHAR
);
CREATE TABLE experiment_scorers (
    experiment_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    scorer_name VARCHAR,
    description VARCHAR,
    position INTEGER NOT NULL,
    threshold_min DOUBLE,
    threshold_max DOUBLE,
    higher_is_better BOOLEAN NOT NULL DEFAULT true,
    metadata JSON
);
CREATE TABLE experiment_items (
    experiment_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    item_index BIGINT,
    run_id VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    input JSON,
    ground_truth JSON,
    request_context JSON,
    metadata JSON,
    output JSON,
    error JSON,
    scorers_succeeded INTEGER NOT NULL,
    scorers_failed INTEGER NOT NULL,
    target_ms DOUBLE,
    duration_ms DOUBLE,
    completed_at TIMESTAMP NOT NULL
);
CREATE TABLE scores (
    id UUID NOT NULL DEFAULT uuid(),
    experiment_id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    scorer_name VARCHAR,
    item_id VARCHAR NOT NULL,
    score DOUBLE NOT NULL,
    reason VARCHAR,
    input JSON,
    output JSON,
    ground_truth JSON,
    request_context JSON,
    preprocess_step_result JSON,
    analyze_step_result JSON,
    preprocess_prompt VARCHAR,
    analyze_prompt VARCHAR,
    generate_score_prompt VARCHAR,
    generate_reason_prompt VARCHAR,
    source VARCHAR NOT NULL,
    duration_ms DOUBLE,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE scorer_errors (
    experiment_id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    scorer_name VARCHAR,
    item_id VARCHAR NOT NULL,
    failed_step VARCHAR,
    completed_steps JSON,
    error_name VARCHAR,
    error_message VARCHAR,
    error JSON,
    duration_ms DOUBLE,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE judge_executions (
    id UUID NOT NULL DEFAULT uuid(),
    experiment_id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL,
    scorer_status VARCHAR NOT NULL,
    step VARCHAR NOT NULL,
    execution_index INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    judge_model_id VARCHAR,
    judge_provider VARCHAR,
    attempt_count INTEGER,
    model_call_count INTEGER,
    duration_ms DOUBLE,
    input_tokens BIGINT,
    output_tokens BIGINT,
    total_tokens BIGINT,
    reasoning_tokens BIGINT,
    cached_input_tokens BIGINT,
    cache_creation_input_tokens BIGINT,
    cost_amount DOUBLE,
    cost_unit VARCHAR,
    cost_source VARCHAR,
    error_name VARCHAR,
    error_message VARCHAR,
    error_code VARCHAR,
    finish_reason VARCHAR,
    raw_output VARCHAR,
    prompt VARCHAR,
    output JSON,
    cached BOOLEAN,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE model_prices (
    model VARCHAR PRIMARY KEY,
    provider VARCHAR,
    input_per_mtok DOUBLE NOT NULL,
    cached_input_per_mtok DOUBLE,
    output_per_mtok DOUBLE NOT NULL,
    currency VARCHAR NOT NULL DEFAULT 'USD',
    as_of DATE
);
"""

# Two-sided 95% Student t critical values for 1..30 degrees of freedom; beyond, the
# Cornish-Fisher expansion around z = 1.959964 is within 0.001 of the exact quantile.
_T975 = (
    "12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, "
    "2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, "
    "2.060, 2.056, 2.052, 2.048, 2.045, 2.042"
)

_VIEWS_V1 = f"""
CREATE OR REPLACE MACRO evalkit_t975(df) AS
    CASE
        WHEN df IS NULL OR df < 1 THEN NULL
        WHEN df <= 30 THEN CAST([{_T975}][df] AS DOUBLE)
        ELSE 1.959964 + (1.959964 ^ 3 + 1.959964) / (4 * df)
            + (5 * 1.959964 ^ 5 + 16 * 1.959964 ^ 3 + 3 * 1.959964) / (96 * df ^ 2)
    END;

CREATE OR REPLACE VIEW scorer_summary AS
WITH s AS (
    SELECT experiment_id, scorer_id, count(*) AS n, avg(score) AS mean,
           stddev_samp(score) AS stddev, min(score) AS min, median(score) AS median,
           max(score) AS max
    FROM scores GROUP BY experiment_id, scorer_id
), e AS (
    SELECT experiment_id, scorer_id, count(*) AS errors
    FROM scorer_errors GROUP BY experiment_id, scorer_id
), p AS (
    SELECT sc.experiment_id, sc.scorer_id,
           avg(CASE WHEN (t.threshold_min IS NULL OR sc.score >= t.threshold_min)
                     AND (t.threshold_max IS NULL OR sc.score <= t.threshold_max)
                    THEN 1.0 ELSE 0.0 END) AS pass_rate
    FROM scores sc
    JOIN experiment_scorers t USING (experiment_id, scorer_id)
    WHERE t.threshold_min IS NOT NULL OR t.threshold_max IS NOT NULL
    GROUP BY sc.experiment_id, sc.scorer_id
)
SELECT
    x.id AS experiment_id,
    x.name AS experiment_name,
    x.started_at,
    es.scorer_id,
    es.scorer_name,
    coalesce(s.n, 0) AS n,
    coalesce(e.errors, 0) AS errors,
    s.mean,
    s.stddev,
    s.mean - evalkit_t975(s.n - 1) * s.stddev / sqrt(s.n) AS ci95_low,
    s.mean + evalkit_t975(s.n - 1) * s.stddev / sqrt(s.n) AS ci95_high,
    s.min,
    s.median,
    s.max,
    es.threshold_min,
    es.threshold_max,
    p.pass_rate,
    coalesce(e.errors, 0) / nullif(coalesce(s.n, 0) + coalesce(e.errors, 0), 0) AS error_rate
FROM experiment_scorers es
JOIN experiments x ON x.id = es.experiment_id
LEFT JOIN s ON s.experiment_id = es.experiment_id AND s.scorer_id = es.scorer_id
LEFT JOIN e ON e.experiment_id = es.experiment_id AND e.scorer_id = es.scorer_id
LEFT JOIN p ON p.experiment_id = es.experiment_id AND p.scorer_id = es.scorer_id;

CREATE OR REPLACE VIEW judge_usage AS
WITH u AS (
    SELECT experiment_id, scorer_id, judge_model_id, judge_provider,
           count(*) AS executions,
           count(*) FILTER (WHERE status = 'success') AS succeeded,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           sum(attempt_count) AS attempts,
           sum(model_call_count) AS model_calls,
           coalesce(sum(input_tokens), 0) AS input_tokens,
           coalesce(sum(output_tokens), 0) AS output_tokens,
           coalesce(sum(total_tokens), 0) AS total_tokens,
           coalesce(sum(reasoning_tokens), 0) AS reasoning_tokens,
           coalesce(sum(cached_input_tokens), 0) AS cached_input_tokens,
           coalesce(sum(cache_creation_input_tokens), 0) AS cache_creation_input_tokens,
           quantile_cont(duration_ms, 0.5) AS latency_p50_ms,
           quantile_cont(duration_ms, 0.95) AS latency_p95_ms,
           sum(cost_amount) AS cost_amount,
           string_agg(DISTINCT cost_unit, ',') AS cost_unit
    FROM judge_executions
    GROUP BY experiment_id, scorer_id, judge_model_id, judge_provider
), priced AS (
    SELECT u.*, m.model AS price_model, m.input_per_mtok, m.cached_input_per_mtok,
           m.output_per_mtok
    FROM u
    LEFT JOIN model_prices m
      ON starts_with(lower(regexp_extract(u.judge_model_id, '[^/]+$')), lower(m.model))
    QUALIFY row_number() OVER (
        PARTITION BY u.experiment_id, u.scorer_id, u.judge_model_id, u.judge_provider
        ORDER BY length(m.model) DESC NULLS LAST) = 1
)
SELECT
    experiment_id, scorer_id, judge_model_id, judge_provider,
    executions, succeeded, failed, attempts, model_calls,
    input_tokens, output_tokens, total_tokens, reasoning_tokens, cached_input_tokens,
    cache_creation_input_tokens, latency_p50_ms, latency_p95_ms,
    cost_amount, cost_unit,
    price_model,
    (greatest(input_tokens - cached_input_tokens, 0) * input_per_mtok
        + cached_input_tokens * coalesce(cached_input_per_mtok, input_per_mtok)
        + output_tokens * output_per_mtok) / 1e6 AS estimated_cost_usd
FROM priced;
"""


def _migrate_to_1(con: duckdb.DuckDBPyConnection) -> None:
    lake_ddl(con, _TABLES_V1)
    partition_by_experiment(con, "experiment_items", "scores", "scorer_errors", "judge_executions")
    con.executemany(
        "INSERT INTO model_prices (model, provider, input_per_mtok, cached_input_per_mtok,"
        " output_per_mtok, as_of) VALUES (?, ?, ?, ?, ?, ?)",
        [(*row, PRICES_AS_OF) for row in SEED_PRICES],
    )
    con.execute(_VIEWS_V1)


def _migrate_to_2(con: duckdb.DuckDBPyConnection) -> None:
    # Who is writing a running experiment, and when it last wrote: a ``running`` row whose
    # process is gone is shown as ``interrupted`` (see evalkit._liveness).
    con.execute("ALTER TABLE experiments ADD COLUMN writer_pid INTEGER")
    con.execute("ALTER TABLE experiments ADD COLUMN writer_host VARCHAR")
    con.execute("ALTER TABLE experiments ADD COLUMN heartbeat_at TIMESTAMP")


def _migrate_to_3(con: duckdb.DuckDBPyConnection) -> None:
    # A run of part of its dataset (--limit, one --shard slice) is never a baseline. Older rows
    # tell it from their config: a limit, or a shard slice that was not merged.
    # DuckDB 1.5 adds no column with a constraint, nor sets NOT NULL on a table with updates
    # in the transaction: the column is nullable (every writer fills it). DuckLake (DuckDB
    # 1.5.5) takes no boolean default either: there it is a plain BOOLEAN (a lake is new at
    # version 6, so it never has older rows to update).
    default = "" if in_lake(con) else " DEFAULT false"
    con.execute(f"ALTER TABLE experiments ADD COLUMN partial BOOLEAN{default}")
    con.execute(
        "UPDATE experiments SET partial = coalesce(config->>'$.limit' IS NOT NULL"
        " OR json_type(config, '$.shard') = 'OBJECT', false)"
    )


_SHARDS_DONE = """
CREATE TABLE IF NOT EXISTS shards_done (
    experiment_id VARCHAR NOT NULL,
    shard_index INTEGER NOT NULL,
    file VARCHAR NOT NULL,
    row_group INTEGER NOT NULL,
    item_offset BIGINT NOT NULL,
    rows BIGINT NOT NULL,
    summary JSON NOT NULL,
    completed_at TIMESTAMP NOT NULL
)
"""


def _migrate_to_4(con: duckdb.DuckDBPyConnection) -> None:
    # The finished shards of a sharded run (evalkit.store._shard_writer). Before version 4 the
    # first sharded write created the table: a store that ran sharded already has it.
    con.execute(_SHARDS_DONE)


_AGREEMENT = """
CREATE TABLE IF NOT EXISTS scorer_agreement (
    experiment_id VARCHAR NOT NULL, scorer_id VARCHAR NOT NULL, compared_with VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, metric VARCHAR NOT NULL, value DOUBLE, ci_low DOUBLE, ci_high DOUBLE,
    n BIGINT NOT NULL, missing BIGINT NOT NULL, levels JSON, confusion JSON,
    computed_at TIMESTAMP NOT NULL
);
CREATE OR REPLACE VIEW agreement_summary AS
SELECT x.id AS experiment_id, x.name AS experiment_name, x.started_at, a.scorer_id, a.kind,
    any_value(a.n) AS n, any_value(a.missing) AS missing,
    max(a.value) FILTER (WHERE a.metric = 'accuracy') AS accuracy,
    max(a.value) FILTER (WHERE a.metric = 'kappa') AS kappa,
    max(a.value) FILTER (WHERE a.metric = 'weighted_kappa') AS weighted_kappa,
    max(a.value) FILTER (WHERE a.metric = 'pearson') AS pearson,
    max(a.value) FILTER (WHERE a.metric = 'spearman') AS spearman,
    max(a.value) FILTER (WHERE a.metric = 'mae') AS mae,
    (SELECT max(r.value) FROM scorer_agreement r WHERE r.experiment_id = a.experiment_id
     AND r.scorer_id = a.scorer_id AND r.compared_with = 'raters') AS raters_alpha
FROM scorer_agreement a JOIN experiments x ON x.id = a.experiment_id
WHERE a.compared_with = 'consensus' GROUP BY ALL;
"""


def _migrate_to_5(con: duckdb.DuckDBPyConnection) -> None:
    # How far each scorer agrees with the human labels of its run (evalkit.agreement): one row
    # per metric and what the scorer was compared with ('consensus' of the label columns, one
    # label column, or 'raters' for the people's agreement among themselves).
    con.execute(_AGREEMENT)


_REPEATS = """
CREATE TABLE IF NOT EXISTS score_repeats (
    experiment_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, item_id VARCHAR NOT NULL,
    scorer_id VARCHAR NOT NULL, repeat_index INTEGER NOT NULL, status VARCHAR NOT NULL,
    score DOUBLE, reason VARCHAR, error_name VARCHAR, error_message VARCHAR, duration_ms DOUBLE,
    created_at TIMESTAMP NOT NULL
);
ALTER TABLE judge_executions ADD COLUMN repeat_index INTEGER DEFAULT 0;
CREATE OR REPLACE VIEW pair_spread AS
SELECT experiment_id, item_id, scorer_id, count(*) AS executions, count(score) AS scored,
    avg(score) AS mean, stddev_samp(score) AS spread, min(score) AS min_score,
    max(score) AS max_score, max(score) - min(score) AS score_range
FROM score_repeats GROUP BY ALL;
CREATE OR REPLACE VIEW judge_stability AS
SELECT x.id AS experiment_id, x.name AS experiment_name, x.started_at, a.scorer_id, a.kind,
    any_value(a.n) AS pairs,
    max(a.value) FILTER (WHERE a.metric = 'repeats') AS repeats,
    max(a.value) FILTER (WHERE a.metric = 'alpha') AS self_alpha,
    max(a.ci_low) FILTER (WHERE a.metric = 'alpha') AS self_alpha_low,
    max(a.ci_high) FILTER (WHERE a.metric = 'alpha') AS self_alpha_high,
    max(a.value) FILTER (WHERE a.metric = 'mean_spread') AS mean_spread,
    max(a.value) FILTER (WHERE a.metric = 'unstable_share') AS unstable_share,
    max(a.value) FILTER (WHERE a.metric = 'noise_variance') AS noise_variance,
    max(a.value) FILTER (WHERE a.metric = 'fresh_share') AS fresh_share
FROM scorer_agreement a JOIN experiments x ON x.id = a.experiment_id
WHERE a.compared_with = 'repeats' GROUP BY ALL;
"""


def _migrate_to_6(con: duckdb.DuckDBPyConnection) -> None:
    # Judge stability (run_evals(repeats=K)): every execution of a repeated LLM-judged pair
    # (score_repeats, execution 0 being the pair's score), the judge calls of each execution
    # (judge_executions.repeat_index), and the judge's self-agreement in scorer_agreement
    # (compared_with = 'repeats'), shown by the judge_stability view.
    con.execute(_REPEATS)
    partition_by_experiment(con, "score_repeats")


# Schema version 7: what each judge execution went through (issue 20).
#
# ``judge_executions`` gains ``truncated``, ``queue_ms``, ``request_ms`` and ``attempts``, and
# the ``judge_usage`` view is recreated with its latency taken from the request time and the
# queue's percentiles beside it.

_JUDGE_RECORDS = """
ALTER TABLE judge_executions ADD COLUMN truncated BOOLEAN;
ALTER TABLE judge_executions ADD COLUMN queue_ms DOUBLE;
ALTER TABLE judge_executions ADD COLUMN request_ms DOUBLE;
ALTER TABLE judge_executions ADD COLUMN attempts JSON;
"""
_JUDGE_USAGE_V7 = """
CREATE OR REPLACE VIEW judge_usage AS
WITH u AS (
    SELECT experiment_id, scorer_id, judge_model_id, judge_provider,
           count(*) AS executions,
           count(*) FILTER (WHERE status = 'success') AS succeeded,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           sum(attempt_count) AS attempts,
           sum(model_call_count) AS model_calls,
           coalesce(sum(input_tokens), 0) AS input_tokens,
           coalesce(sum(output_tokens), 0) AS output_tokens,
           coalesce(sum(total_tokens), 0) AS total_tokens,
           coalesce(sum(reasoning_tokens), 0) AS reasoning_tokens,
           coalesce(sum(cached_input_tokens), 0) AS cached_input_tokens,
           coalesce(sum(cache_creation_input_tokens), 0) AS cache_creation_input_tokens,
           quantile_cont(latency_ms, 0.5) AS latency_p50_ms,
           quantile_cont(latency_ms, 0.95) AS latency_p95_ms,
           quantile_cont(queue_ms, 0.5) AS queue_p50_ms,
           quantile_cont(queue_ms, 0.95) AS queue_p95_ms,
           sum(cost_amount) AS cost_amount,
           string_agg(DISTINCT cost_unit, ',') AS cost_unit
    FROM (
        SELECT *, coalesce(request_ms, CASE WHEN NOT coalesce(cached, false)
                                             AND attempt_count > 0 THEN duration_ms END)
                  AS latency_ms
        FROM judge_executions
    )
    GROUP BY experiment_id, scorer_id, judge_model_id, judge_provider
), priced AS (
    SELECT u.*, m.model AS price_model, m.input_per_mtok, m.cached_input_per_mtok,
           m.output_per_mtok
    FROM u
    LEFT JOIN model_prices m
      ON starts_with(lower(regexp_extract(u.judge_model_id, '[^/]+$')), lower(m.model))
    QUALIFY row_number() OVER (
        PARTITION BY u.experiment_id, u.scorer_id, u.judge_model_id, u.judge_provider
        ORDER BY length(m.model) DESC NULLS LAST) = 1
)
SELECT
    experiment_id, scorer_id, judge_model_id, judge_provider,
    executions, succeeded, failed, attempts, model_calls,
    input_tokens, output_tokens, total_tokens, reasoning_tokens, cached_input_tokens,
    cache_creation_input_tokens, latency_p50_ms, latency_p95_ms, queue_p50_ms, queue_p95_ms,
    cost_amount, cost_unit,
    price_model,
    (greatest(input_tokens - cached_input_tokens, 0) * input_per_mtok
        + cached_input_tokens * coalesce(cached_input_per_mtok, input_per_mtok)
        + output_tokens * output_per_mtok) / 1e6 AS estimated_cost_usd
FROM priced;
"""


def _migrate_to_7(con: duckdb.DuckDBPyConnection) -> None:
    # What each judge execution went through (issue 20): finish_reason on successes too, a
    # reply cut at the token limit (truncated), each attempt's record (attempts), and the time
    # waiting in evalkit's own limiter apart from the HTTP requests (queue_ms, request_ms).
    # judge_usage's latency is the request time (duration_ms for rows written before, except
    # cache hits and calls never sent), with the queue's percentiles beside it.
    # See docs/pages/design/judge-time-apart-from-the-queue.md.
    con.execute(_JUDGE_RECORDS)
    con.execute(_JUDGE_USAGE_V7)


# Schema version 8: the history of nights (issue 29).
#
# ``experiments`` gains the run's ``verdict`` ('passed', 'failed', or NULL when no gate could
# run), the id of the baseline it was judged against (``baseline_id``) and why that run was
# chosen (``baseline_reason``); ``scorer_gates`` holds each scorer's gate outcome and reasons;
# ``baseline_pins`` records each pin and unpin of an experiment's baseline. Older runs keep a
# NULL verdict: they were never judged in the store.

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
_JUDGE_USAGE_V8 = _JUDGE_USAGE_V7.replace(
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


def _migrate_to_8(con: duckdb.DuckDBPyConnection) -> None:
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


# Schema version 9: summaries of scores anywhere in the float range (issue 30).
#
# The ``scorer_summary`` view took ``avg`` and ``stddev_samp`` of the raw scores: with scores
# near the float limit (±1e308) the sum overflowed (an infinite mean) and DuckDB refused the
# spread ("STDDEV_SAMP is out of range"), so the view could not be read at all. It now takes
# them over the scores scaled by 2**-600 when a scorer's largest magnitude reaches 2**400, and
# scales back: a power of two scales exactly, so its figures are those of
# ``evalkit/run/_summary.py`` (the run's own summary) for huge scores, and the same as before
# for everyday ones. The interval's half-width divides before it multiplies.

# The scale of the scores of a scorer whose largest magnitude reaches 2**400: after it they
# are below 2**424, so neither their sum over any count nor their squares overflow.
_BIG = "2.0 ^ 400"
_DOWN = "2.0 ^ -600"
_UP = "2.0 ^ 600"

SCORER_SUMMARY_V9 = f"""
CREATE OR REPLACE VIEW scorer_summary AS
WITH s AS (
    SELECT experiment_id, scorer_id, count(*) AS n,
           CASE WHEN max(abs(score)) >= {_BIG} THEN avg(score * ({_DOWN})) * ({_UP})
                ELSE avg(score) END AS mean,
           CASE WHEN max(abs(score)) >= {_BIG}
                THEN stddev_samp(score * ({_DOWN})) * ({_UP})
                ELSE stddev_samp(CASE WHEN abs(score) < {_BIG} THEN score END) END AS stddev,
           min(score) AS min, median(score) AS median, max(score) AS max
    FROM scores GROUP BY experiment_id, scorer_id
), e AS (
    SELECT experiment_id, scorer_id, count(*) AS errors
    FROM scorer_errors GROUP BY experiment_id, scorer_id
), p AS (
    SELECT sc.experiment_id, sc.scorer_id,
           avg(CASE WHEN (t.threshold_min IS NULL OR sc.score >= t.threshold_min)
                     AND (t.threshold_max IS NULL OR sc.score <= t.threshold_max)
                    THEN 1.0 ELSE 0.0 END) AS pass_rate
    FROM scores sc
    JOIN experiment_scorers t USING (experiment_id, scorer_id)
    WHERE t.threshold_min IS NOT NULL OR t.threshold_max IS NOT NULL
    GROUP BY sc.experiment_id, sc.scorer_id
)
SELECT
    x.id AS experiment_id,
    x.name AS experiment_name,
    x.started_at,
    es.scorer_id,
    es.scorer_name,
    coalesce(s.n, 0) AS n,
    coalesce(e.errors, 0) AS errors,
    s.mean,
    s.stddev,
    s.mean - s.stddev / sqrt(s.n) * evalkit_t975(s.n - 1) AS ci95_low,
    s.mean + s.stddev / sqrt(s.n) * evalkit_t975(s.n - 1) AS ci95_high,
    s.min,
    s.median,
    s.max,
    es.threshold_min,
    es.threshold_max,
    p.pass_rate,
    coalesce(e.errors, 0) / nullif(coalesce(s.n, 0) + coalesce(e.errors, 0), 0) AS error_rate
FROM experiment_scorers es
JOIN experiments x ON x.id = es.experiment_id
LEFT JOIN s ON s.experiment_id = es.experiment_id AND s.scorer_id = es.scorer_id
LEFT JOIN e ON e.experiment_id = es.experiment_id AND e.scorer_id = es.scorer_id
LEFT JOIN p ON p.experiment_id = es.experiment_id AND p.scorer_id = es.scorer_id;
"""


def _migrate_to_9(con: duckdb.DuckDBPyConnection) -> None:
    # Only a view changes: no table is touched, so the migration is the same for a DuckDB
    # file and a DuckLake store (views live in the catalog either way, as version 1's do).
    con.execute(SCORER_SUMMARY_V9)


# Version 10: the interval of ``scorer_summary`` was Student's t for every scorer, which left
# the scale of 0/1 and 0..1 scores (9 of 10 passing gave [0.674, 1.126], 5 of 5 gave [1, 1]).
# Scores all between 0 and 1 now get Wilson's score interval with Student's multiplier and an
# effective n (evalkit/_intervals.py, whose Python twin the reports use); other scores keep
# the t interval. Same columns, new values.
SCORER_SUMMARY_V10 = SCORER_SUMMARY_V9.replace(
    """    s.mean - s.stddev / sqrt(s.n) * evalkit_t975(s.n - 1) AS ci95_low,
    s.mean + s.stddev / sqrt(s.n) * evalkit_t975(s.n - 1) AS ci95_high,""",
    """    evalkit_ci95_low(s.n, s.mean, s.stddev, s.min, s.max) AS ci95_low,
    evalkit_ci95_high(s.n, s.mean, s.stddev, s.min, s.max) AS ci95_high,""",
)


def _migrate_to_10(con: duckdb.DuckDBPyConnection) -> None:
    # Macros and a view only, like version 9: the same for a DuckDB file and a DuckLake store.
    con.execute(SQL_MACROS)
    con.execute(SCORER_SUMMARY_V10)


#: Migrations in order: ``MIGRATIONS[i]`` brings a store from version i to i + 1.
MIGRATIONS: tuple[Callable[[duckdb.DuckDBPyConnection], None], ...] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
    _migrate_to_6,
    _migrate_to_7,
    _migrate_to_8,
    _migrate_to_9,
    _migrate_to_10,
)

#: The schema version this evalkit writes.
SCHEMA_VERSION = len(MIGRATIONS)

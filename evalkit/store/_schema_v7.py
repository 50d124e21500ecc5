"""Schema version 7: what each judge execution went through (issue 20).

``judge_executions`` gains ``truncated``, ``queue_ms``, ``request_ms`` and ``attempts``, and
the ``judge_usage`` view is recreated with its latency taken from the request time and the
queue's percentiles beside it. Listed in ``_schema.MIGRATIONS`` with the versions before it.
"""

from __future__ import annotations

import duckdb

_JUDGE_RECORDS = """
ALTER TABLE judge_executions ADD COLUMN truncated BOOLEAN;
ALTER TABLE judge_executions ADD COLUMN queue_ms DOUBLE;
ALTER TABLE judge_executions ADD COLUMN request_ms DOUBLE;
ALTER TABLE judge_executions ADD COLUMN attempts JSON;
"""
JUDGE_USAGE_V7 = """
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


def migrate_to_7(con: duckdb.DuckDBPyConnection) -> None:
    # What each judge execution went through (issue 20): finish_reason on successes too, a
    # reply cut at the token limit (truncated), each attempt's record (attempts), and the time
    # waiting in evalkit's own limiter apart from the HTTP requests (queue_ms, request_ms).
    # judge_usage's latency is the request time (duration_ms for rows written before, except
    # cache hits and calls never sent), with the queue's percentiles beside it.
    # See docs/pages/design/judge-time-apart-from-the-queue.md.
    con.execute(_JUDGE_RECORDS)
    con.execute(JUDGE_USAGE_V7)

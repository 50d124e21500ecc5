"""Schema version 9: summaries of scores anywhere in the float range (issue 30).

The ``scorer_summary`` view took ``avg`` and ``stddev_samp`` of the raw scores: with scores
near the float limit (±1e308) the sum overflowed (an infinite mean) and DuckDB refused the
spread ("STDDEV_SAMP is out of range"), so the view could not be read at all. It now takes
them over the scores scaled by 2**-600 when a scorer's largest magnitude reaches 2**400, and
scales back: a power of two scales exactly, so its figures are those of
``evalkit/run/_summary.py`` (the run's own summary) for huge scores, and the same as before
for everyday ones. The interval's half-width divides before it multiplies. Listed in
``_schema.MIGRATIONS``; the DDL is frozen here, as every migration's is.
"""

from __future__ import annotations

import duckdb

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


def migrate_to_9(con: duckdb.DuckDBPyConnection) -> None:
    # Only a view changes: no table is touched, so the migration is the same for a DuckDB
    # file and a DuckLake store (views live in the catalog either way, as version 1's do).
    con.execute(SCORER_SUMMARY_V9)

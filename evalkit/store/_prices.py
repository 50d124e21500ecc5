"""The seed of the ``model_prices`` table: list prices of common judge models.

Prices are USD per million tokens, as published on the providers' pricing pages on the date in
``PRICES_AS_OF`` (standard tier, no batch discount, prompts under any long-context surcharge).
They only feed the *estimated* cost of the ``judge_usage`` view; a cost the provider reported
itself is stored apart as authoritative. Prices change: edit the table with SQL, e.g.
``UPDATE model_prices SET output_per_mtok = 0.5 WHERE model = 'gpt-4o-mini'`` or
``INSERT OR REPLACE INTO model_prices VALUES (...)``. The seed is written once, when a store is
created, and never overwrites your edits.

A judge's ``judge_model_id`` matches the row whose ``model`` is the longest prefix of it (case
insensitive, after any ``provider/`` prefix), so ``gpt-4o-mini-2024-07-18`` and
``openai/gpt-4o-mini`` both use the ``gpt-4o-mini`` row.
"""

from __future__ import annotations

import datetime as dt

PRICES_AS_OF = dt.date(2025, 8, 1)

#: (model, provider, input, cached input, output) in USD per million tokens.
SEED_PRICES: tuple[tuple[str, str, float, float | None, float], ...] = (
    ("gpt-5", "openai", 1.25, 0.125, 10.00),
    ("gpt-5-mini", "openai", 0.25, 0.025, 2.00),
    ("gpt-5-nano", "openai", 0.05, 0.005, 0.40),
    ("gpt-4.1", "openai", 2.00, 0.50, 8.00),
    ("gpt-4.1-mini", "openai", 0.40, 0.10, 1.60),
    ("gpt-4.1-nano", "openai", 0.10, 0.025, 0.40),
    ("gpt-4o", "openai", 2.50, 1.25, 10.00),
    ("gpt-4o-mini", "openai", 0.15, 0.075, 0.60),
    ("o3", "openai", 2.00, 0.50, 8.00),
    ("o4-mini", "openai", 1.10, 0.275, 4.40),
    ("o3-mini", "openai", 1.10, 0.55, 4.40),
    ("o1", "openai", 15.00, 7.50, 60.00),
    ("claude-opus-4", "anthropic", 15.00, 1.50, 75.00),
    ("claude-sonnet-4", "anthropic", 3.00, 0.30, 15.00),
    ("claude-3-7-sonnet", "anthropic", 3.00, 0.30, 15.00),
    ("claude-3-5-sonnet", "anthropic", 3.00, 0.30, 15.00),
    ("claude-3-5-haiku", "anthropic", 0.80, 0.08, 4.00),
    ("gemini-2.5-pro", "google", 1.25, 0.31, 10.00),
    ("gemini-2.5-flash", "google", 0.30, 0.075, 2.50),
    ("gemini-2.5-flash-lite", "google", 0.10, 0.025, 0.40),
    ("gemini-2.0-flash", "google", 0.10, 0.025, 0.40),
)

"""The compatibility page is generated: the committed page is what tests/compat/table.py renders
from the committed results (docs/pages/reference/compat-results.json) and official-docs notes
(tests/compat/official_docs.json)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.compat.table import PAGE, render


def test_committed_page_is_generated() -> None:
    assert PAGE.read_text() == render(), (
        "docs/pages/reference/compatibility.md is stale: run python -m tests.compat.table"
    )


def test_page_renders_without_official_docs(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"servers": {}}))
    page = render(results, tmp_path / "absent.json")
    assert "`tests/compat/official_docs.json` is absent" in page
    assert "The suite has not been run yet." in page


def test_page_shows_a_refused_format(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    refused = {"accepted": False, "status": 500, "error": "Input should be 'text' or 'json_object'"}
    results.write_text(
        json.dumps(
            {
                "generated": "2026-12-04 22:00 UTC",
                "servers": {
                    "llama-cpp-python": {
                        "version": "llama-cpp-python 0.3.36",
                        "probes": {"structured_output": {"json_schema": refused}},
                        "suite": {"test_usage": "passed", "test_length_fields": "failed"},
                    }
                },
            }
        )
    )
    official = tmp_path / "official.json"
    official.write_text(
        json.dumps(
            [
                {
                    "server": "vLLM",
                    "feature": "response_format.json_schema",
                    "support": "yes",
                    "note": "guided",
                    "source": "https://docs.vllm.ai/",
                }
            ]
        )
    )
    page = render(results, official)
    assert "| llama-cpp-python (0.3.36) | refused (HTTP 500) |" in page
    assert "1 of 2 passed" in page
    assert "`test_length_fields`" in page
    assert "| server | `json_schema` |" in page
    assert "| vLLM | yes |" in page
    assert "- `json_schema`: yes. guided ([source](https://docs.vllm.ai/))" in page

"""The README stays a one-screen entry whose links lead into the documentation."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_fits_in_12_kb() -> None:
    assert len(README.encode("utf-8")) <= 12 * 1024


def test_the_readme_has_the_two_quickstart_commands() -> None:
    assert "python -m pip install -e . && evalkit run experiments/quickstart.toml\n" in README
    assert "python -m pip install -e '.[test]' && python -m pytest\n" in README


def test_every_relative_link_of_the_readme_leads_to_a_file() -> None:
    links = [link for link in re.findall(r"\]\(([^)#]+)", README) if "://" not in link]
    assert any(link.startswith("docs/pages/") for link in links)
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert missing == []

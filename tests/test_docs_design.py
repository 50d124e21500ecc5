"""The design pages keep their four parts, and the code they describe names them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DESIGN = ROOT / "docs" / "pages" / "design"
PAGES = sorted(path for path in DESIGN.glob("*.md") if path.name != "index.md")
HEADINGS = ("## Problem", "## Choice", "## Measured", "## Tried and dropped")
# "Where it lives:" and its backticked paths, which may run on over the next lines.
WHERE = re.compile(r"^Where it lives:(.*?)(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)
# Pages about a rule spread over many modules, with no "Where it lives" line of their own.
NO_HOME = {"departures-from-mastra.md"}


def where_it_lives(page: Path) -> list[str]:
    """The paths a page's "Where it lives" line names; empty when it has none."""
    found = WHERE.search(page.read_text(encoding="utf-8"))
    return re.findall(r"`([^`]+)`", found.group(1)) if found else []


HOMED = [page for page in PAGES if page.name not in NO_HOME]


def test_the_design_pages_are_found() -> None:
    assert len(PAGES) >= 50


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_a_design_page_has_the_four_headings_in_order(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    found = [line for line in lines if line.startswith("## ")]
    assert found == list(HEADINGS)


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_every_section_of_a_design_page_says_something(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    sections = re.split(r"^## .*$", text, flags=re.MULTILINE)[1:]
    assert len(sections) == len(HEADINGS)
    assert all(section.strip() for section in sections)


def test_only_the_listed_pages_have_no_home_in_the_code() -> None:
    homeless = {page.name for page in PAGES if not where_it_lives(page)}
    assert homeless == NO_HOME


@pytest.mark.parametrize("page", HOMED, ids=lambda path: path.name)
def test_where_it_lives_names_modules_that_exist(page: Path) -> None:
    missing = [path for path in where_it_lives(page) if not (ROOT / path).is_file()]
    assert missing == []


@pytest.mark.parametrize("page", HOMED, ids=lambda path: path.name)
def test_the_modules_where_it_lives_name_the_page(page: Path) -> None:
    # docs/pages/design/NAME.md, or NAME.md alone where the module names the folder once.
    name = re.compile(rf"(?<![\w-]){re.escape(page.name)}")
    silent = [
        path
        for path in where_it_lives(page)
        if (ROOT / path).is_file() and not name.search((ROOT / path).read_text("utf-8"))
    ]
    assert silent == []


def test_the_design_index_links_every_page() -> None:
    index = (DESIGN / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+\.md)\)", index))
    assert {page.name for page in PAGES} <= linked

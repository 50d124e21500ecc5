"""The report's browser test drives the viewer tests' headless Chromium."""

from __future__ import annotations

from tests.view.conftest import browser, page

__all__ = ["browser", "page"]

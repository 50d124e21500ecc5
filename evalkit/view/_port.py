"""The viewer's default port, apart so ``evalkit view --help`` imports nothing of the app."""

from __future__ import annotations

DEFAULT_PORT = 8765
"""The port `evalkit view` and [`serve`][evalkit.view.serve] listen on unless told otherwise."""

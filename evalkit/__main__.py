"""``python -m evalkit``: hands off to the command line interface."""

from __future__ import annotations

from evalkit.cli import main

raise SystemExit(main())

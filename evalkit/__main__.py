"""``python -m evalkit``: the same as the ``evalkit`` command."""

from evalkit._console import main

raise SystemExit(main())

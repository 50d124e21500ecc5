"""What evalkit's own packages use from `evalkit.judge` and no user calls. Not for users:
these names may change with any release (the package's public names are those of
`evalkit.judge`, each in the API reference). Why a package has two faces:
docs/pages/design/public-and-internal-names.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.judge._ask import ask
    from evalkit.judge._cache import WorkerCache, store_entries
    from evalkit.judge._request import PreparedRequest
    from evalkit.judge._structured import OutputSpec, ScoreSpec, schema_spec
    from evalkit.judge.policy._call import chat_completion
    from evalkit.judge.policy._registry import use_rate_share
    from evalkit.judge.transport._clients import openai_client_for

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.judge._ask": ("ask",),
        "evalkit.judge._cache": (
            "WorkerCache",
            "store_entries",
        ),
        "evalkit.judge._request": ("PreparedRequest",),
        "evalkit.judge._structured": (
            "OutputSpec",
            "ScoreSpec",
            "schema_spec",
        ),
        "evalkit.judge.policy._call": ("chat_completion",),
        "evalkit.judge.policy._registry": ("use_rate_share",),
        "evalkit.judge.transport._clients": ("openai_client_for",),
    },
)

__all__ = [
    "OutputSpec",
    "PreparedRequest",
    "ScoreSpec",
    "WorkerCache",
    "ask",
    "chat_completion",
    "openai_client_for",
    "schema_spec",
    "store_entries",
    "use_rate_share",
]

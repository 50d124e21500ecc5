"""Ids: a scorer's default id from its name, and run ids."""

from __future__ import annotations

import hashlib
import os
import random
import re
import unicodedata

# Run ids: version 4 UUIDs drawn from one Mersenne Twister per process, seeded from the OS
# (reseeded in a forked child, which would otherwise repeat its parent's ids). uuid.uuid4()
# asks the OS for 16 bytes and builds a UUID object per run: about a third of a function
# scorer's overhead. Uniqueness needs 122 random bits, not unpredictability.
# See docs/pages/design/run-ids-without-a-system-call.md.
_ids = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _ids.seed(os.urandom(32)))
_UUID_CLEAR = ~((0xC000 << 48) | (0xF000 << 64)) & ((1 << 128) - 1)
_UUID_V4 = (0x8000 << 48) | (4 << 76)


def new_run_id() -> str:
    """A new random run id: a version 4 UUID in its canonical text form."""
    h = f"{(_ids.getrandbits(128) & _UUID_CLEAR) | _UUID_V4:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def slugify(name: str) -> str:
    """``"Quality Scorer"`` → ``"quality-scorer"``: lowercase ASCII words joined by dashes.

    Accents are folded to ASCII first (``"Réponse exacte"`` → ``"reponse-exacte"``). A name
    with no ASCII letter left (``"評価"``, ``"!!!"``) gets ``"scorer-"`` and 8 hex digits of
    its SHA-256, stable across runs and machines, so every name has an id.
    """
    folded = unicodedata.normalize("NFKD", name.casefold()).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")
    if not re.search(r"[a-z]", slug):
        digest = hashlib.sha256(unicodedata.normalize("NFC", name).encode()).hexdigest()
        return f"scorer-{digest[:8]}"
    return slug

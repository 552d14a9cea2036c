"""Whom a "she" or "he" with no one named before can mean, read from the user's stored facts.

"She moved to Brightwater Primary", said a month after "My daughter goes to Maple Leaf Montessori",
names no one in its conversation; but the user's daughter is the only girl or child whose school is
stored, so the sentence is about her. Only relatives whose sex the word tells (daughter, son, mum...)
or that can be either (kid, child, twin) are candidates, and only when exactly one of them holds a
fact of the same kind: a name (whose sex is not known) or two candidates leave the pronoun
unresolved, and the sentence gives no fact, as before.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import datetime

from deepcontext.extract.interface import MessageIn
from deepcontext.language.gazetteer import KIN_GENDER
from deepcontext.services.updates import SLOT_PREFIX
from deepcontext.store.interface import Store

__all__ = ["kin_referents"]

#: the single-valued facts a pronoun sentence is resolved for
ATTRIBUTES = ("school", "employer", "job", "residence", "car", "relationship", "diet", "drink")
_HE_SHE_RE = re.compile(r"(?:^|[.!?]\s+)(?:He|She)\s|\b(?:moved|switched|transferred|sent|enrolled|put)\s+(?:him|her)\s")
_KEY_RE = re.compile(r"^(?P<me>.+?)'s (?P<kin>[\w-]+)\|(?P<attr>\S+)$")


async def kin_referents(
    store: Store, user_id: str, user_name: str | None, msgs: Sequence[MessageIn], now: datetime
) -> dict[str, str]:
    """``"f|school" -> "daughter"``: per sex and kind of fact, the one relative of the user holding such a
    fact; empty (and no read) when no user message has a sentence opening with "She" or "He" or
    moves "him" or "her" somewhere."""
    if not any(m.role == "user" and _HE_SHE_RE.search(m.content) for m in msgs):
        return {}
    me = {"user", *([user_name.lower()] if user_name else [])}
    keys = [f"{SLOT_PREFIX}{who}'s {kin}|{attr}" for who in sorted(me) for kin in KIN_GENDER for attr in ATTRIBUTES]
    stored = await asyncio.to_thread(store.find_active_by_metadata_keys, user_id, keys, now, limit=200)
    held: dict[str, set[str]] = {}  # attribute -> the relatives holding it
    for m in stored:
        for key in m.metadata:
            k = _KEY_RE.match(key.removeprefix(SLOT_PREFIX)) if key.startswith(SLOT_PREFIX) else None
            if k is not None and k["me"] in me and k["kin"] in KIN_GENDER and k["attr"] in ATTRIBUTES:
                held.setdefault(k["attr"], set()).add(k["kin"])
    out: dict[str, str] = {}
    for attr, kin in held.items():
        for sex in ("f", "m"):
            fits = {k for k in kin if KIN_GENDER[k] in (sex, None)}
            if len(fits) == 1:
                out[f"{sex}|{attr}"] = fits.pop()
    return out

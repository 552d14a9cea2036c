"""A user's display name, applied to what is already stored: memories that call the user "the user"
(or "User", or a former name) take the new name, re-embedded and re-indexed, with a history entry each, in the
same transaction that sets the name."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from deepcontext.embed.embedder import Embedder
from deepcontext.extract.rewrite import rename_person
from deepcontext.language.unnamed import UNNAMED, parsed
from deepcontext.services.updates import fact_keys, without_fact_keys
from deepcontext.store.interface import MemoryFilters, MemoryRewrite, Store
from deepcontext.text import content_hash, entity_norm

__all__ = ["UNNAMED", "rename_user"]

#: the kv row (namespace, key) of the display name and who set it
_PROFILE = ("user", "profile")
#: memories of one entity read for a rename, at most
_MAX_RENAMED = 1_000_000


async def rename_user(store: Store, embedder: Embedder, user_id: str, name: str, now: datetime, *, source: str = "set") -> int:
    """Set ``name`` as the user's display name and rewrite the user's active memories that name the
    user otherwise. Returns the memories rewritten (-1: a name the user gave, ``source="introduced"``,
    does not replace one set)."""
    if source != "set":  # cheap early answer; set_user_name decides again in its transaction
        profile = await asyncio.to_thread(store.kv_get, user_id, *_PROFILE)
        if isinstance(profile, dict) and profile.get("name") and profile.get("source", "set") == "set":
            return -1
    old = await asyncio.to_thread(store.user_name, user_id)
    formers = [f for f in dict.fromkeys([old or "", UNNAMED]) if f and entity_norm(f) != entity_norm(name)]
    found = await asyncio.to_thread(store.match_entities, user_id, [entity_norm(f) for f in formers])
    entity_ids = [eid for eid, _ in found.values()]
    rewrites: list[MemoryRewrite] = []
    if entity_ids:
        pairs = await asyncio.to_thread(store.memories_for_entities, user_id, entity_ids, MemoryFilters(), now, _MAX_RENAMED)
        ids = list(dict.fromkeys(mid for mid, _ in pairs))
        mems = await asyncio.to_thread(store.get_memories, user_id, ids, details=False) if ids else []
        changed: list[tuple[int, str, str, dict[str, Any]]] = []
        for m in mems:
            read = parsed(m.text)  # "the user" is the unnamed user's placeholder to rename
            text = read
            for f in formers:
                text = rename_person(text, f, name)
            if text != read:
                # the slots are keyed by the subject's name: the user's old facts must meet their new ones
                meta = {**without_fact_keys(m.metadata), **fact_keys(text, name)}
                changed.append((m.id, m.text, text, meta))
        if changed:
            vecs = await asyncio.to_thread(embedder.embed, [t for _, _, t, _ in changed])
            rewrites = [
                MemoryRewrite(mid, old_text, text, content_hash(text), vec, meta)
                for (mid, old_text, text, meta), vec in zip(changed, vecs, strict=True)
            ]
    return int(await asyncio.to_thread(store.set_user_name, user_id, name, now, rewrites, source=source))

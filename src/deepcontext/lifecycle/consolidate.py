"""Consolidation without a database: grouping related memories, spotting contradictions, and the
offline (extractive) merger.

Grouping: memories of one type are joined when they mention a common entity or their cosine reaches
the similarity threshold (union-find); the speakers' own entities are hubs that join nothing by
themselves. Groups larger than ``max_group`` are cut into chronological chunks.

Contradictions (:func:`conflict`, on content words): polarity ("eats meat" / "does not eat meat"),
a value change in the same frame ("lives in Lisbon" / "lives in Porto"), or a weak one-word swap.
Contradicting statements are never merged. :func:`extractive_merge` keeps the most informative
statements, drops those another kept one covers (words or near-duplicate vector) as its sources,
and joins the rest, in time order, into one fact.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations

import numpy as np

from deepcontext.errors import ValidationError
from deepcontext.language.unnamed import parsed, written
from deepcontext.text import STOPWORDS, word_tokens

__all__ = [
    "Conflict",
    "Fact",
    "GroupItem",
    "Statement",
    "UnionFind",
    "conflict",
    "conflicts_among",
    "extractive_merge",
    "features",
    "group_memories",
    "MAX_FACT_CHARS",
    "compose",
    "join_sentences",
]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_NEGATIONS = frozenset("not no never nothing none nobody nowhere neither nor cannot without".split())
#: words that date a statement without changing what it says ("Maya lives in Porto now")
_TIME_WORDS = frozenset("now currently still anymore today nowadays lately recently actually".split())
_END = ".!?。！？…"
#: what one consolidated memory may hold: a sentence or a short list, not a diary
MAX_FACT_CHARS = 300


class UnionFind:
    """Disjoint sets over 0..n-1 with path halving and union by size."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True

    def groups(self) -> list[list[int]]:
        """Components, each sorted, in order of their smallest member."""
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return sorted(out.values(), key=lambda g: g[0])


# --- grouping -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class GroupItem:
    """What grouping needs to know of a memory."""

    memory_type: str
    entity_ids: Sequence[int] = ()
    vector: np.ndarray | None = None
    when: float = 0.0  # epoch seconds, for ordering chunks of a large group
    #: memories of different scopes (agent, run) never share a group
    scope: tuple[str | None, str | None] = (None, None)


def _normalised(vectors: list[np.ndarray]) -> np.ndarray:
    m = np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for v in vectors])
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def group_memories(
    items: Sequence[GroupItem],
    *,
    similarity: float,
    max_group: int = 12,
    hubs: Collection[int] = (),
    hub_fraction: float | None = None,
    block: int = 512,
    type_similarity: Mapping[str, float] | None = None,
) -> list[list[int]]:
    """Connected components (indices into ``items``) of memories of the same type and scope sharing
    an entity other than the ``hubs``, or at least ``similarity`` cosine apart. With ``hub_fraction``,
    an entity mentioned by more than that fraction of a type's memories (and more than three) is a
    hub too.
    Singletons included; each group is in chronological order; groups above ``max_group`` are cut
    into consecutive chunks. ``type_similarity`` overrides ``similarity`` per memory type."""
    if max_group < 2:
        raise ValidationError("max_group must be >= 2", field="max_group")
    uf = UnionFind(len(items))
    by_type: dict[tuple[str, tuple[str | None, str | None]], list[int]] = {}
    for i, it in enumerate(items):
        by_type.setdefault((it.memory_type, it.scope), []).append(i)
    for idx in by_type.values():
        n = len(idx)
        mentions: dict[int, list[int]] = {}
        for i in idx:
            for e in dict.fromkeys(items[i].entity_ids):
                mentions.setdefault(e, []).append(i)
        hub_above = max(3.0, hub_fraction * n) if hub_fraction is not None else float("inf")
        for entity, members in mentions.items():
            if entity in hubs or len(members) > hub_above:
                continue
            for other in members[1:]:
                uf.union(members[0], other)
        with_vec = [i for i in idx if items[i].vector is not None]
        threshold = (type_similarity or {}).get(items[idx[0]].memory_type, similarity) if idx else similarity
        if len(with_vec) > 1:
            m = _normalised([items[i].vector for i in with_vec])  # type: ignore[misc]
            for start in range(0, len(with_vec), block):
                sims = m[start : start + block] @ m.T
                rows, cols = np.nonzero(sims >= threshold)
                for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                    a = start + r
                    if a < c:
                        uf.union(with_vec[a], with_vec[c])
    out: list[list[int]] = []
    for g in uf.groups():
        g.sort(key=lambda i: (items[i].when, i))
        out.extend(g[k : k + max_group] for k in range(0, len(g), max_group))
    return out


# --- statements, contradictions -------------------------------------------------------------------------


def _stem(tok: str) -> str:
    """A crude stemmer, enough to see "lives", "lived" and "live" as one word."""
    if tok.endswith(("'s", "’s")):
        tok = tok[:-2]
    tok = tok.replace("'", "").replace("’", "")
    if len(tok) > 4 and tok.endswith("ies"):
        tok = tok[:-3] + "y"
    elif len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        tok = tok[:-1]
    if len(tok) > 5 and tok.endswith("ing"):
        tok = tok[:-3]
    elif len(tok) > 4 and tok.endswith("ed"):
        tok = tok[:-2]
    if len(tok) > 3 and tok.endswith("e"):
        tok = tok[:-1]
    return tok


@dataclass(frozen=True, slots=True)
class Features:
    """Content words (stemmed, stopwords dropped), the value-like ones among them (the words of the
    memory's entity names, words capitalised away from a sentence start, words holding a digit), the
    first value in the text (the subject, in most memories) and the negation parity."""

    content: frozenset[str]
    values: frozenset[str]
    subject: str | None
    negated: bool


def features(text: str, names: Sequence[str] = ()) -> Features:
    """The :class:`Features` of a statement; ``names`` are entity names known to occur in it."""
    named = {_stem(t) for n in names for t in word_tokens(n) if t not in STOPWORDS}
    content: dict[str, None] = {}
    values: dict[str, None] = {}
    negations = 0
    sentence_start = True
    pos = 0
    for m in _WORD.finditer(text):
        between = text[pos : m.start()]
        if any(ch in _END for ch in between):
            sentence_start = True
        pos = m.end()
        word = m.group(0)
        for low in word_tokens(word):
            if low in _NEGATIONS or low.endswith(("n't", "n’t")):
                negations += 1
            if low in STOPWORDS or low in _TIME_WORDS:
                continue
            st = _stem(low)
            if not st:
                continue
            content.setdefault(st, None)
            if st in named or any(c.isdigit() for c in word) or (word[:1].isupper() and not sentence_start):
                values.setdefault(st, None)
        sentence_start = False
    return Features(
        content=frozenset(content),
        values=frozenset(values),
        subject=next(iter(values), None),
        negated=negations % 2 == 1,
    )


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two statements that cannot both hold. ``strong``: a value change or a negation (the older
    statement is given an end of validity); weak: same frame, other words (kept apart only)."""

    kind: str  # "negation" | "value" | "frame"
    strong: bool


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def conflict(a: Features | str, b: Features | str) -> Conflict | None:
    """Whether two statements contradict each other (see the module docstring), else None."""
    fa = a if isinstance(a, Features) else features(a)
    fb = b if isinstance(b, Features) else features(b)
    shared = fa.content & fb.content
    if not shared:
        return None
    if fa.negated != fb.negated:
        return Conflict("negation", True) if _jaccard(fa.content, fb.content) >= 0.5 else None
    frame_a, frame_b = fa.content - fa.values, fb.content - fb.values
    dv_a, dv_b = fa.values - fb.values, fb.values - fa.values
    shared_values = fa.values & fb.values
    if dv_a and dv_b and (frame_a or frame_b or shared_values) and _jaccard(frame_a, frame_b) >= 0.75:
        if shared_values:
            if fa.subject in shared_values and fb.subject in shared_values:
                return Conflict("value", True)
        elif len(dv_a) == 1 and len(dv_b) == 1:
            return Conflict("value", True)
    ua, ub = fa.content - fb.content, fb.content - fa.content
    if len(ua) == 1 and len(ub) == 1 and len(shared) >= 3:  # one word swapped in the same frame
        if fa.values & ua or fb.values & ub:
            return None  # other names in the same frame without a shared subject: different things
        return Conflict("frame", False)
    return None


def conflicts_among(texts: Sequence[str], names: Sequence[str] = ()) -> list[tuple[int, int, Conflict]]:
    """Every contradicting pair (i < j) among ``texts``; ``names``: entity names they may mention."""
    feats = [features(t, names) for t in texts]
    out = []
    for i, j in combinations(range(len(texts)), 2):
        c = conflict(feats[i], feats[j])
        if c is not None:
            out.append((i, j, c))
    return out


# --- the extractive merger --------------------------------------------------------------------------------


@dataclass(slots=True)
class Statement:
    """One memory offered to a merger."""

    text: str
    when: datetime | None = None  # when it became true (valid_from / said_at)
    importance: float = 0.5
    vector: np.ndarray | None = None
    names: Sequence[str] = ()  # its entities' names


@dataclass(slots=True)
class Fact:
    """A merger's output: a text and the statements (positions in the input) it covers."""

    text: str
    sources: list[int] = field(default_factory=list)


def join_sentences(texts: Sequence[str]) -> str:
    """Statements as one text: each ends with a full stop (unless it already ends a sentence)."""
    parts = []
    for t in texts:
        t = " ".join(t.split())
        if t and t[-1] not in _END:
            t += "."
        if t:
            parts.append(t)
    return " ".join(parts)


def _ts(s: Statement) -> float:
    return s.when.timestamp() if s.when is not None else 0.0


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    if a is None or b is None:
        return -1.0
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return -1.0
    return float(np.dot(a, b) / (na * nb))


def extractive_merge(
    statements: Sequence[Statement],
    *,
    dedup_threshold: float = 0.95,
    hub_names: Collection[str] = (),
    max_chars: int = MAX_FACT_CHARS,
) -> list[Fact]:
    """Merge statements offline (see the module docstring). Every input is covered by exactly one
    output fact; outputs are: the composed facts (statements that contradict nothing, one per topic),
    then each contradicting statement on its own, oldest first. ``hub_names``: the speakers' names,
    which alone do not make two statements about the same thing."""
    n = len(statements)
    if n == 0:
        return []
    feats = [features(s.text, s.names) for s in statements]
    order = sorted(
        range(n),
        key=lambda i: (-len(feats[i].content), -statements[i].importance, -_ts(statements[i]), i),
    )
    kept: list[int] = []
    covers: dict[int, list[int]] = {}
    for i in order:
        target = None
        for k in kept:
            c = conflict(feats[i], feats[k])
            if c is not None and c.strong:
                continue  # never a duplicate of what it contradicts
            if feats[i].negated != feats[k].negated:
                continue
            near = _cosine(statements[i].vector, statements[k].vector) >= dedup_threshold
            if (c is None and feats[i].content <= feats[k].content) or near:
                target = k
                break
        if target is None:
            kept.append(i)
            covers[i] = [i]
        else:
            covers[target].append(i)
    apart: set[int] = set()
    for a, b in combinations(kept, 2):
        if conflict(feats[a], feats[b]) is not None:
            apart.update((a, b))
    chrono = sorted(kept, key=lambda k: (_ts(statements[k]), k))
    out: list[Fact] = []
    main = [k for k in chrono if k not in apart]
    for topic in _topics(main, statements, hub_names):
        for part, text in compose(topic, [statements[k].text for k in topic], max_chars):
            out.append(Fact(text=text, sources=sorted(i for k in part for i in covers[k])))
    out.extend(Fact(text=statements[k].text, sources=sorted(covers[k])) for k in chrono if k in apart)
    return out


def _topics(idx: list[int], statements: Sequence[Statement], hub_names: Collection[str]) -> list[list[int]]:
    """``idx`` split by what the statements are about: two join when they name a common entity other
    than the speakers (names read from the statements' entities, else from their capitalised words),
    or when neither names one."""
    hubs = {h.lower() for h in hub_names} | {"user", "assistant"}
    keys: list[set[str]] = []
    for k in idx:
        st = statements[k]
        if st.names:
            names = {n.lower() for n in st.names}
        else:
            names = {w.lower() for w in _CAPS.findall(st.text) if w.lower() not in STOPWORDS and w.lower() not in _MONTHS}
        # a statement naming nothing but the speakers came into the group by its meaning: it stays
        # with the others like it
        keys.append((names - hubs) or {""})
    uf = UnionFind(len(idx))
    seen: dict[str, int] = {}
    for pos, ks in enumerate(keys):
        for key in ks:
            if key in seen:
                uf.union(seen[key], pos)
            else:
                seen[key] = pos
    return [[idx[p] for p in g] for g in uf.groups()]


_CAPS = re.compile(r"\b[A-Z][\w-]+")
_MONTHS = frozenset("january february march april may june july august september october november december".split())
# a date the extractor put first ("On 2025-03-09 Maya ..."): kept, moved after the predicate
_LEAD_DATE = re.compile(
    r"^(?P<d>(?:On|In|Since)\s+(?:the\s+(?:week(?:end)?|morning|afternoon|evening|night)\s+of\s+)?"
    r"(?:\d{4}-\d\d-\d\d|(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\s+\d{4}|\d{4}))\s*,?\s+(?P<rest>.+)$"
)
_SUBJECT = re.compile(r"^(?P<s>[A-Z][\w-]*(?:\s+[A-Z][\w-]*)?(?:'s\s+[a-z]+)?)\s+(?P<p>[a-z].*)$")


def _split_subject(text: str) -> tuple[str, str] | None:
    """``("Maya", "works at Acme (2025-03-09)")`` for "On 2025-03-09 Maya works at Acme.", else None."""
    t = " ".join(text.split()).rstrip(" .")
    date = ""
    m = _LEAD_DATE.match(t)
    if m:
        date, t = m.group("d"), m.group("rest")
    s = _SUBJECT.match(t)
    if s is None or any(ch in _END for ch in s.group("p")):
        return None
    pred = s.group("p")
    if date:
        pred += f" ({date.split(' ', 1)[1] if date.split(' ', 1)[0] in ('On', 'In') else date.lower()})"
    return s.group("s"), pred


def compose(idx: list[int], texts: Sequence[str], max_chars: int = MAX_FACT_CHARS) -> list[tuple[list[int], str]]:
    """Statements about one thing as few texts as read well: one statement as it is; statements with
    one subject as one sentence listing what is said of it ("Maya works at Acme, lives in Lisbon and
    likes tea."); others as consecutive sentences. A text longer than ``max_chars`` is cut into
    several, statement by statement. Returns ``(the positions of idx covered, text)``."""
    if len(idx) == 1:
        return [(list(idx), texts[0])]
    parts = [_split_subject(parsed(t)) for t in texts]  # "The user ..." read as the subject it names
    subjects = {p[0] for p in parts if p is not None}
    out: list[tuple[list[int], str]] = []
    if len(subjects) == 1 and all(p is not None for p in parts):
        subject = subjects.pop()
        chunk: list[int] = []
        preds: list[str] = []
        for k, p in zip(idx, parts, strict=True):
            assert p is not None
            if chunk and len(subject) + sum(len(x) + 2 for x in preds) + len(p[1]) + 2 > max_chars:
                out.append((chunk, written(f"{subject} {_one_sentence(preds)}.")))
                chunk, preds = [], []
            chunk.append(k)
            preds.append(p[1])
        one = f"{subject} {_one_sentence(preds)}." if len(preds) > 1 else _ended(f"{subject} {preds[0]}")
        out.append((chunk, written(one)))
        return out
    chunk = []
    sents: list[str] = []
    for k, t in zip(idx, texts, strict=True):
        if chunk and sum(len(x) + 1 for x in sents) + len(t) > max_chars:
            out.append((chunk, join_sentences(sents)))
            chunk, sents = [], []
        chunk.append(k)
        sents.append(t)
    out.append((chunk, join_sentences(sents) if len(sents) > 1 else sents[0]))
    return out


_CONNECTORS = frozenset("and then to with the a an".split())
_DATED = re.compile(r"\([^()]*\d{4}[^()]*\)\s*$")
_TIMES = {2: "twice", 3: "three times"}


def _one_sentence(preds: list[str]) -> str:
    """What is said of one subject as one sentence: "works at Acme, lives in Lisbon and likes tea";
    dated episodes sharing their start as what they have in common, with the dates: "went to the lake
    twice: swam (2024-05-01) and lost a towel (2024-06-02)"."""
    words = [p.split() for p in preds]
    common: list[str] = []
    for column in zip(*words, strict=False):
        if len({w.lower() for w in column}) != 1:
            break
        common.append(column[0])
    while common and common[-1].lower() in _CONNECTORS:
        common.pop()
    rests = [" ".join(w[len(common) :]) for w in words]
    rests = [re.sub(r"^(?:and|then)\s+", "", r) for r in rests]
    if len(common) >= 2 and all(rests) and any(_DATED.search(p) for p in preds):
        times = _TIMES.get(len(preds), f"{len(preds)} times")
        return f"{' '.join(common)} {times}: {_and_list(rests)}"
    return _and_list(preds)


def _and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _ended(t: str) -> str:
    return t if t and t[-1] in _END else t + "."

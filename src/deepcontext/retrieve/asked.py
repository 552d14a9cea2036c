"""Questions about a single-valued fact of a person: "Where does Maya work?", "What car does the
user drive now?". The memories that hold that fact's current value (their slots, see
:mod:`deepcontext.extract.slots`) are weighed up by ``slot_boost``: a question about where Maya
works is answered by "Maya is a data engineer at Northwind Labs", not by a sentence that merely
shares the words "Maya" and "works" ("Maya's sister Lena works as a nurse").
"""

from __future__ import annotations

import re

from deepcontext.store.interface import RankFields

__all__ = ["AskedSlot", "asked_slot", "asks_about_user", "slot_factor"]

_SUBJ = r"(?P<s>the\s+user|user|i|you|[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
_AUX = r"(?:does|do|did|is|are|was|has|have)"
_QUESTIONS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(p, re.IGNORECASE if "(?-i" not in p else 0), attrs)
    for p, attrs in (
        (rf"\bwhere\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?(?:work|working|employed)\b", ("employer", "job")),
        (rf"\bwho\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?work\s+for\b", ("employer",)),
        (rf"\bwhat\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?do\s+(?:for\s+(?:a\s+living|work)|professionally)\b", ("job", "employer")),
        (
            rf"\bwhat(?:'s|\s+is)\s+{_SUBJ}'s\s+(?:\w+\s+)?(?:job|occupation|profession|role|title|employer)\b",
            ("job", "employer"),
        ),
        (rf"\bwhere\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?(?:live|living|based|reside|stay)\b", ("residence",)),
        (
            rf"\b(?:which|what)\s+(?:city|town|country|place|borough)\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?(?:live|living|based)\b",
            ("residence",),
        ),
        (rf"\b(?:which|what)\s+(?:school|college|university)\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?(?:go|attend|study)", ("school",)),
        (rf"\bwhere\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?(?:go\s+to\s+school|study)\b", ("school",)),
        (rf"\bwhat\s+(?:car\s+)?{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?drive\b", ("car",)),
        (rf"\bwhat\s+{_AUX}\s+{_SUBJ}\s+(?:\w+\s+)?drink\b", ("drink",)),
        (rf"\bwhat\s+diet\s+{_AUX}\s+{_SUBJ}\b", ("diet",)),
        (
            rf"\b(?:is|are)\s+{_SUBJ}\s+(?:still\s+)?(?:married|single|divorced|engaged|dating|vegan|vegetarian)\b",
            ("relationship", "diet"),
        ),
        (rf"\b{_SUBJ}'s\s+(?:relationship|marital)\s+status\b", ("relationship",)),
    )
)
_USER_WORDS = frozenset({"the user", "user", "i", "you"})
#: one "subject|attribute" of a memory's space-separated slot keys (a subject may hold spaces:
#: "user's sister|residence"; an attribute never does)
_KEY_RE = re.compile(r"\s*([^|]+)\|(\S+)")


class AskedSlot:
    """The subject (None: the user) and the attributes a question asks about."""

    __slots__ = ("attributes", "me", "subject")

    def __init__(self, subject: str | None, attributes: tuple[str, ...], me: frozenset[str] = frozenset({"user"})) -> None:
        self.subject = subject
        self.attributes = attributes
        self.me = me  # what the user's own slots are keyed by: "user", or their name once known

    def matches(self, keys: str) -> bool:
        """Whether a memory's slot keys ("maya|employer maya|job") hold one of the asked facts. A
        question in the first person asks about the user, never about "user's brother" or a friend."""
        for subject, attribute in _KEY_RE.findall(keys):
            if attribute in self.attributes and (subject in self.me if self.subject is None else self._theirs(subject)):
                return True
        return False

    def _theirs(self, subject: str) -> bool:
        """Whether a slot's subject is the one asked about ("my son" asks about "user's son", keyed by the
        user's name once it is known)."""
        asked = self.subject or ""
        if asked.startswith("user's "):
            who = asked.removeprefix("user's ")
            return any(subject == f"{me}'s {who}" for me in self.me)
        return subject == asked


def asked_slot(query: str, user_name: str | None = None) -> AskedSlot | None:
    """The single-valued fact a question asks about, if it asks about one (``user_name``: the user's
    display name, which keys the user's slots once it is known)."""
    for rx, attrs in _QUESTIONS:
        m = rx.search(query)
        if m:
            s = " ".join(m.group("s").lower().split())
            me = frozenset({"user", " ".join(user_name.lower().split())}) if user_name else frozenset({"user"})
            if s not in _USER_WORDS:
                # "my son", "our kid": the user's relative (read as a two-word name by the pattern)
                owner, _, rest = s.partition(" ")
                return AskedSlot(f"user's {rest}" if owner in ("my", "our") and rest else s, attrs, me)
            return AskedSlot(None, attrs, me)
    return None


def asks_about_user(query: str) -> bool:
    """Whether ``query`` asks about one of the user's own single-valued facts (cheap: no store read)."""
    asked = asked_slot(query)
    return asked is not None and asked.subject is None


def slot_factor(f: RankFields, asked: AskedSlot | None, boost: float) -> float:
    """Rescoring weight: 1 + ``boost`` for a memory holding the asked fact's current value."""
    if asked is None or not f.slots or not asked.matches(f.slots):
        return 1.0
    return 1.0 + boost

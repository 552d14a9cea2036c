"""What memories call a user without a display name: "the user" in running text, "The user" opening a
sentence, never a capitalised "User" as if it were a name.

The rules work on a one-word placeholder, :data:`UNNAMED` ("User"), which parses like any name ("User's
sister" as "Ana's sister" does). :func:`written` turns it into the words a memory says once a fact is
written; :func:`parsed` turns them back for the rules that read a stored memory again (slots,
replacements, consolidation, a rename when the user gives their name).
"""

from __future__ import annotations

import re

__all__ = ["UNNAMED", "parsed", "written"]

#: the placeholder the rules use for a user whose name is not known
UNNAMED = "User"

# the placeholder alone: not inside a word or a name ("UserVoice", "User Experience")
_PLACEHOLDER_RE = re.compile(r"(?<![\w'-])User(?![\w-])(?!\s+[A-Z][a-z])")
# where a sentence opens: the text's start (after any quote or bracket) or after a sentence's end
_OPENS_RE = re.compile(r"(?:^|[.!?][\"')\]]*\s+)[\"'(\[]*$")
# a capitalised word just before, not opening a sentence: part of a name ("Power User"), unless it
# names a month or a day ("in March User moved")
_NAME_BEFORE_RE = re.compile(r"[\w,;:]\s+(?P<word>[A-Z][\w-]*)\s$")
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
_SPOKEN_RE = re.compile(r"(?<![\w'-])[Tt]he user(?![\w-])")


def written(text: str) -> str:
    """``text`` with the placeholder as a careful writer puts it: "User moved to York and User's
    sister stayed." -> "The user moved to York and the user's sister stayed." """
    if "User" not in text:
        return text

    def repl(m: re.Match[str]) -> str:
        before = text[: m.start()]
        if _OPENS_RE.search(before):
            return "The user"
        name = _NAME_BEFORE_RE.search(before)
        if name is not None and name["word"].lower() not in _CALENDAR:
            return m.group(0)
        return "the user"

    return _PLACEHOLDER_RE.sub(repl, text)


def parsed(text: str, speaker: str = UNNAMED) -> str:
    """``text`` as the rules read it: "the user" back to the placeholder when ``speaker`` (whom the
    memory is about) is the unnamed user; any other text as it is."""
    if speaker != UNNAMED or "he user" not in text:
        return text
    return _SPOKEN_RE.sub(UNNAMED, text)

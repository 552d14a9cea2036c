"""Sentences that are no memory, as a table: greetings, thanks, reactions, vague "that sounds..."
sentences, requests to the assistant and sentences addressed to it. Each form has a name, its
words (a regular expression read at the sentence's start, up to a word boundary, ignoring case), a
sentence it must skip, and the roles it applies to (``tests/test_skip_forms.py`` reads every row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SKIPS", "Skip", "skip_pattern"]


@dataclass(frozen=True, slots=True)
class Skip:
    name: str
    words: str
    says: str
    roles: tuple[str, ...] = ("user", "assistant")


SKIPS: tuple[Skip, ...] = (
    Skip("meeting", r"nice\s+(?:to\s+)?(?:meet|meeting|talking|chatting)", "Nice to meet you!"),
    Skip("greeting", r"good\s+(?:morning|afternoon|evening|night|luck|job)|welcome\s+back", "Good morning, all!"),
    Skip("how are you", r"how\s+are\s+you|how's\s+it\s+going", "How's it going with you lately."),
    Skip("see you", r"talk\s+(?:to\s+you\s+)?(?:soon|later)|see\s+you|take\s+care", "Talk to you later."),
    Skip("have a good", r"have\s+a\s+(?:good|great|nice|wonderful|lovely|fun|safe)", "Have a great weekend!"),
    Skip("hope", r"(?:i\s+)?hope\s+(?:you|your|all|everything|it|that)", "Hope everything goes well tomorrow."),
    Skip(
        "you're welcome",
        r"you're\s+(?:welcome|right|the\s+best|so\s+(?:kind|sweet))|you\s+are\s+(?:welcome|right)",
        "You're so kind.",
    ),
    Skip("no problem", r"no\s+problem|no\s+worries|my\s+pleasure", "No worries at all."),
    Skip(
        "agreement",
        r"sounds\s+(?:good|great|fun|like)|makes\s+sense|i\s+see|i\s+agree|i\s+know|me\s+too|same\s+here|got\s+it|"
        r"fair\s+enough|of\s+course",
        "Makes sense to me.",
    ),
    Skip("wishes", r"congrat|happy\s+(?:birthday|holidays|new\s+year)|wish\s+(?:me|you)", "Happy birthday, Sam!"),
    Skip("farewell", r"bye|goodbye|good\s+bye|cheers", "Cheers, mate."),
    Skip("unsure", r"i\s+(?:hope|think|guess)\s+so|i\s+(?:don't|do\s+not)\s+know|not\s+sure", "I guess so."),
    Skip("keep posted", r"let\s+me\s+know|keep\s+me\s+posted|let's|let\s+us", "Keep me posted on that."),
    Skip("glad", r"glad\s+to|happy\s+to\s+(?:help|hear)", "Glad to hear it went well."),
    Skip("thanks", r"thank|thanks|i\s+appreciate|appreciate\s+it", "Thanks for the tips!"),
    Skip("praise", r"good\s+for\s+you|well\s+done|way\s+to\s+go", "Well done on finishing it."),
    Skip("that sounds", r"that\s+(?:sounds|must|looks|seems)", "That sounds like a lovely trip."),
    Skip("enjoy", r"enjoy\s+(?:your|the)", "Enjoy your holiday in Crete!"),
    Skip(
        "sympathy",
        r"i'm\s+(?:so\s+)?(?:glad|sorry|happy)\s+(?:to\s+hear|for\s+you)|sorry\s+to\s+hear",
        "I'm so sorry to hear about your dog.",
    ),
    Skip(
        "vague",
        r"(?:it|that|this|these|those|there|such)(?:'s|'ll|'d|\s+(?:is|was|were|are|has|had|will|would|sounds|seems|"
        r"looks|must|feels|makes|made|means|might|could|can|really|just|also|definitely|totally|all))",
        "That was really something.",
    ),
    Skip(
        "request",
        r"(?:please\s+|pls\s+|plz\s+|kindly\s+)?(?:can\s+you|could\s+you|would\s+you|will\s+you|can\s+u|could\s+u|"
        r"i\s+want\s+you\s+to|i\s+need\s+you\s+to|i'd\s+like\s+you\s+to|i\s+would\s+like\s+you\s+to|help\s+me|"
        r"let\s+me|let's|let\s+us|give\s+me|tell\s+me|show\s+me|remind\s+me|send\s+me|get\s+me|find\s+me|"
        r"make\s+me|write\s+me|teach\s+me|walk\s+me|talk\s+me)",
        "Please remind me to call the dentist.",
        roles=("user",),
    ),
    Skip("to the assistant", r"you|your|you're|you've|you'll|you'd|u|ur", "You really saved my evening.", roles=("user",)),
)


def skip_pattern(role: str) -> re.Pattern[str]:
    """The forms that apply to ``role`` as one pattern, read at a sentence's start."""
    return re.compile(r"^(?:" + "|".join(s.words for s in SKIPS if role in s.roles) + r")\b", re.IGNORECASE)

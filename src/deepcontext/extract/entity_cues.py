"""Words before an unknown capitalised name that tell what it names, as tables: "working for
Zentrix" (an organisation), "built it using Kubero" (a technology), "drove to Varnholm" (a place),
"a bakery called Crumbwell". Each cue has a name, the type it gives, its words (a regular
expression read on the lower-cased text just before the name, ending where the name starts) and a
sentence it must read with the name it types (``tests/test_entity_cues.py`` reads every row).
:mod:`deepcontext.extract.entities` tries them in the order given; a gazetteer, a person cue or a
pet's kind comes first.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepcontext.types import EntityType

__all__ = ["LEFT", "NAMED", "Cue"]


@dataclass(frozen=True, slots=True)
class Cue:
    """One cue: ``says`` is a sentence and the name it gives ``type`` to."""

    name: str
    type: EntityType
    words: str
    says: tuple[str, str]


#: right before the name
LEFT: tuple[Cue, ...] = (
    Cue(
        "employer or school",
        EntityType.ORGANIZATION,
        r"\b(?:work(?:s|ed|ing)?|job|jobs|position|role|intern(?:s|ed|ing|ship)?|employed|hired|interview(?:ed|ing)?|"
        r"stud(?:y|ies|ied|ying)|student|enrolled|graduated|graduate|degree|phd|major(?:ed|ing)?|member|joined|"
        r"volunteer(?:s|ed|ing)?)\b[^.,;]{0,30}?\b(?:at|for|from|by|of|with)\s+(?:the\s+)?$",
        ("I have been working for Zentrix since May.", "Zentrix"),
    ),
    Cue(
        "technology",
        EntityType.TECHNOLOGY,
        r"\b(?:use[sd]?|using|learn(?:s|ed|t|ing)?|cod(?:e|es|ed|ing)|program(?:s|med|ming)?|written|write|writes|"
        r"built|build(?:s|ing)?|install(?:ed|ing|s)?|deploy(?:ed|ing|s)?|switched\s+to|migrat(?:e|ed|ing)\s+to)\s+"
        r"(?:in\s+|with\s+|on\s+)?$",
        ("I built it using Kubero.", "Kubero"),
    ),
    Cue(
        "place",
        EntityType.LOCATION,
        r"\b(?:in|from|to|near|around|across|toward|towards|visit(?:ed|ing|s)?|live[sd]?|living|moved|moving|"
        r"born|raised|grew\s+up|based|trip|flew|fly|flying|drove|travel(?:l?ed|l?ing|s)?|explore[ds]?|exploring)\s+"
        r"(?:the\s+)?$",
        ("We drove to Varnholm last week.", "Varnholm"),
    ),
    Cue(
        "at",
        EntityType.ORGANIZATION,
        r"\bat\s+(?:the\s+)?$",
        ("I had lunch at Brindlewood.", "Brindlewood"),
    ),
)

#: the noun before "named" / "called" and the name ("a bakery called Crumbwell")
NAMED: tuple[Cue, ...] = (
    Cue(
        "organisation",
        EntityType.ORGANIZATION,
        r"\b(?:company|startup|start-up|firm|business|agency|band|team|club|shop|store|restaurant|cafe|café|bar|"
        r"school|group|organization|organisation|charity|nonprofit|non-profit|church|gym|studio|bakery)\b[^.;]{0,12}$",
        ("We love a bakery called Crumbwell.", "Crumbwell"),
    ),
    Cue(
        "work",
        EntityType.PRODUCT,
        r"\b(?:book|novel|movie|film|show|series|song|album|game|app|podcast|play|musical)\b[^.;]{0,12}$",
        ("I listen to a podcast called Driftwood.", "Driftwood"),
    ),
)

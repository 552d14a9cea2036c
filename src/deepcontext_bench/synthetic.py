"""A deterministic generator of realistic chat turns and questions for the speed benchmark.

Templates over a few hundred names, places, organisations, activities and objects, with optional
clauses so sentence lengths spread from ~8 to ~40 words, like real chat messages.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

__all__ = ["SyntheticChat"]

NAMES = """Ana Bruno Carla Diego Elena Farid Greta Hugo Ines Jonas Kira Luca Maya Nadia Omar Priya Quentin Rosa
Sami Tara Umar Vera Wes Xenia Yara Zane Alba Boris Chen Dara Emil Fatima Gil Hana Ivo Jana Kofi Lina Marco Noor
Otto Paula Rafael Sofia Tomas Uma Viktor Wanda Yusuf Zoe""".split()
PLACES = """Lisbon Porto Madrid Berlin Paris Kyoto Oslo Nairobi Lima Quito Seoul Dublin Prague Vienna Toronto Denver
Austin Cairo Hanoi Sydney Auckland Bergen Krakow Seville Turin Lyon Munich Zurich Geneva Boston""".split()
ORGS = """Northwind Labs|Globex Corporation|Initech|Acme Corp|Umbrella Health|Stark Industries|Wayne Foods|
Hooli|Vandelay Imports|Contoso|Fabrikam|Tyrell Systems|Soylent Farms|Cyberdyne Robotics|Wonka Sweets""".replace("\n", "").split(
    "|"
)
ACTIVITIES = """hiking|painting|running|baking sourdough|playing the cello|learning Portuguese|rock climbing|
birdwatching|woodworking|sailing|chess|yoga|photography|gardening|pottery|cycling|swimming|knitting""".replace("\n", "").split(
    "|"
)
OBJECTS = """a bicycle|an old camera|a sourdough starter|a vintage guitar|a kayak|a telescope|a drone|a sewing machine|
a espresso machine|a laptop|a record player|a tent|a chess set|an e-reader""".replace("\n", "").split("|")
PROJECTS = """the data pipeline|the mobile app|the billing service|the search index|the marketing site|
the analytics dashboard|the onboarding flow|the payments API|the recommendation model""".replace("\n", "").split("|")
FOODS = """peanuts|shellfish|gluten|dairy|eggs|soy|sesame|strawberries""".split("|")
RELATIONS = "sister brother mother father cousin friend colleague neighbour partner aunt uncle".split()
WHEN = "yesterday|last week|last weekend|two days ago|this morning|last month|on Monday|on Friday evening".split("|")
FEELINGS = "it was amazing|it was exhausting but worth it|I loved every minute|it rained the whole time|we got a bit lost".split(
    "|"
)
CLAUSES = [
    "and honestly {feel}",
    "because {name} had recommended it months ago",
    "while my {rel} {name2} was visiting from {place2}",
    "even though work at {org} has been busy lately",
    "which reminded me of the trip to {place2} we took years ago",
    "so I want to remember to tell {name2} about it",
]
TEMPLATES = [
    "I went {act} near {place} {when} {clause}.",
    "My {rel} {name2} works at {org} as an engineer on {proj}.",
    "I just bought {obj} for {act} {clause}.",
    "I'm allergic to {food}, so please avoid it in any recipe.",
    "We are moving {proj} to a new database next month {clause}.",
    "To deploy {proj}, run make release and then check the dashboard for errors.",
    "{name2} and I are planning a trip to {place2} in the spring {clause}.",
    "I prefer {act} over {act2} on weekends {clause}.",
    "The meeting about {proj} with {name2} from {org} moved to Thursday.",
    "Yesterday {proj} failed because the disk filled up again {clause}.",
    "I have lived in {place} for six years and I still love the food.",
    "Can you remind me what {name2} said about {proj}?",
    "Thanks, that helps a lot!",
    "Haha okay, sounds good.",
]
QUESTIONS = [
    "What did I do near {place}?",
    "Where does my {rel} work?",
    "What am I allergic to?",
    "How do I deploy {proj}?",
    "Who is {name2}?",
    "What trips are planned for {place2}?",
    "What happened with {proj}?",
    "What do I like doing on weekends?",
    "What did I buy for {act}?",
    "Which company is {name2} at?",
]


class SyntheticChat:
    """``turns(n)`` yields (role, speaker, text); ``questions(n)`` yields query strings."""

    def __init__(self, seed: int = 1234, speaker: str = "Maya") -> None:
        self.rng = random.Random(seed)
        self.speaker = speaker

    def _fill(self, template: str) -> str:
        r = self.rng
        vals = {
            "name": r.choice(NAMES), "name2": r.choice(NAMES), "place": r.choice(PLACES), "place2": r.choice(PLACES),
            "org": r.choice(ORGS), "act": r.choice(ACTIVITIES), "act2": r.choice(ACTIVITIES), "obj": r.choice(OBJECTS),
            "proj": r.choice(PROJECTS), "food": r.choice(FOODS), "rel": r.choice(RELATIONS), "when": r.choice(WHEN),
            "feel": r.choice(FEELINGS),
        }  # fmt: skip
        clause = r.choice(CLAUSES).format(**vals) if r.random() < 0.6 else ""
        if clause and r.random() < 0.3:
            clause += ", " + r.choice(CLAUSES).format(**vals)
        text = template.format(clause=clause, **vals)
        return " ".join(text.replace(" .", ".").split())

    def turns(self, n: int) -> Iterator[tuple[str, str | None, str]]:
        for i in range(n):
            if i % 4 == 3:
                yield (
                    "assistant",
                    None,
                    self._fill(self.rng.choice(TEMPLATES[-3:] + ["Got it, I'll remember that about {proj}."])),
                )
            else:
                yield "user", self.speaker, self._fill(self.rng.choice(TEMPLATES))

    def questions(self, n: int) -> list[str]:
        return [self._fill(self.rng.choice(QUESTIONS)) for _ in range(n)]

"""Everyday chat that buries the statements a labelled benchmark looks for.

A seeded generator of user and assistant turns about unrelated things (weather, errands, shows,
sport, cooking a recipe, travel trivia, small tech questions, plans with friends), with varied
sentence shapes and lengths. It states nothing single-valued about the user (no home or job, no
habit that a labelled case is about), so the labelled statements remain the only answers, while the
filler shares their vocabulary (food, drinks, places, work, family) and states other standing
preferences and habits, as real conversations do.
"""

from __future__ import annotations

import random

__all__ = ["filler_turns"]

_NAMES = "Alex Bea Carlos Dana Eli Fern Gus Hira Ivan Jill Kemal Lou Mara Nico Oona Pablo Quinn Rhea Stig Tove".split()
_CITIES = "Lima|Oslo|Cairo|Hanoi|Quito|Perth|Bergen|Tbilisi|Riga|Cusco|Fes|Hobart|Ghent|Split|Bologna".split("|")
_SHOWS = "a cooking show|a nature documentary|a detective series|a quiz show|an old sitcom|a space documentary".split("|")
_TEAMS = "the home team|the visitors|our local club|the underdogs|the national side".split("|")
_DISHES = (
    "a mushroom risotto|a lentil soup|a tray of roast vegetables|a curry|a pot of chili|fish tacos|a frittata|dumplings".split(
        "|"
    )
)
_DRINKS = "a smoothie|some lemonade|iced tea|a hot cider|a milkshake|fresh orange juice".split("|")
_THINGS = (
    "the printer|my laptop charger|the wifi router|the dishwasher|my headphones|the car's tyre pressure|the bike lock".split("|")
)
_CHORES = "do the laundry|water the plants|fix the squeaky door|sort the recycling|clean the windows|return a parcel".split("|")
_TOPICS = "black holes|the history of tea|how bees navigate|why the sky is blue|ancient Roman roads|how vaccines work|the tallest trees".split(
    "|"
)
_WEATHER = "pouring all day|weirdly warm for the season|foggy this morning|windy enough to lose an umbrella|finally sunny".split(
    "|"
)
_DAYS = "on Monday|yesterday|this morning|last night|over the weekend|on Thursday|earlier today".split("|")
_BOOKS = (
    "a mystery novel|a book about mountaineering|a biography of a chess player|a short story collection|a graphic novel".split(
        "|"
    )
)
_SHOPS = "the hardware store|the pharmacy|the farmers market|the bookshop|the post office|the garden centre".split("|")

_USER = [
    "It's been {weather} here.",
    "The weather was {weather} {day}, so I stayed in.",
    "I watched {show} {day}, it was better than I expected.",
    "Did you see the match? {team} won in the last minute.",
    "I'm trying a recipe for {dish} tonight, any tips?",
    "Can you explain {topic} in simple terms?",
    "{name} sent me photos from {city}, it looks beautiful.",
    "I need to {chore} before the weekend.",
    "{thing} stopped working again {day}.",
    "How do I reset {thing}?",
    "I'm reading {book} at the moment, it's gripping.",
    "I went to {shops} {day} and forgot half the list.",
    "Remind me what the capital of Australia is?",
    "{name} is coming over for dinner {day2}.",
    "What's a good way to store fresh herbs?",
    "My neighbour's dog barked all night, I barely slept.",
    "What should I pack for a weekend of camping?",
    "I had {drink} at the cafe with {name} {day}.",
    "How long should I boil an egg for a soft yolk?",
    "Is it true that {topic} is still not fully understood?",
    "We played board games with {name} and {name2} {day}.",
    "Could you suggest a name for a book club?",
    "The train was delayed by forty minutes {day}.",
    "{name} recommended {book}, should I read it?",
    "Haha, that's funny.",
    "Okay, thanks!",
    "Good to know.",
    "Let me think about it.",
    "I'm so tired today.",
    "What's the difference between baking soda and baking powder?",
    "How many cups are in a litre?",
    "{name} is running a half marathon in {city} next month.",
    "I found an old photo album while cleaning {day}.",
    "Any ideas for a rainy Sunday afternoon?",
    "The kids next door built a snowman {day}.",
    "I want to learn a few card tricks for {name}'s party.",
    "Why do onions make you cry?",
    "There was a street festival in town {day}, lots of music.",
    # standing facts that no labelled question is about: the profile leg must rank, not just find
    "I love crossword puzzles, I do one most days.",
    "I enjoy long walks by the river after dinner.",
    "I love the colour teal.",
    "I usually take the bus into the city centre.",
    "I'm a huge fan of jazz piano.",
    "I always carry an umbrella, just in case.",
    "I hate waiting in long queues.",
    "I prefer paperbacks to e-books.",
    "I never miss the quiz on the radio.",
    "I like my tea with a slice of lemon.",
    "My left wrist has been sore since I fell off my bike.",
    "I can't eat raw onions, they upset my stomach.",
    "Please don't use emojis when you answer me.",
    "I avoid caffeine late in the day.",
]
_ASSISTANT = [
    "That sounds like a relaxing way to spend the evening.",
    "Here is a simple explanation: {topic} comes down to a few basic ideas.",
    "Sure! For {dish}, start with a hot pan and season as you go.",
    "A common fix is to unplug {thing} for thirty seconds and try again.",
    "The capital of Australia is Canberra.",
    "Fresh herbs keep longest wrapped in a damp paper towel in the fridge.",
    "For a soft yolk, boil the egg for about six minutes.",
    "Baking soda needs an acid to react; baking powder already contains one.",
    "There are a little over four cups in a litre.",
    "Onions release a compound that irritates the eyes when cut.",
    "For camping, bring layers, a headlamp, and more water than you think.",
    "Good luck to {name} in {city}!",
    "That's a great find, old photos bring back a lot of memories.",
    "Board games are a lovely way to spend time with friends.",
    "Happy to help! Anything else?",
    "How about a museum visit, a long lunch, or a film marathon?",
    "That must have been frustrating.",
    "{book} has very good reviews.",
    "Card tricks with a forced choice are easy to learn and impressive.",
    "Sounds fun, street festivals are great for discovering local music.",
]


def _fill(template: str, rng: random.Random) -> str:
    name, name2 = rng.sample(_NAMES, 2)
    return template.format(
        name=name,
        name2=name2,
        city=rng.choice(_CITIES),
        show=rng.choice(_SHOWS),
        team=rng.choice(_TEAMS),
        dish=rng.choice(_DISHES),
        drink=rng.choice(_DRINKS),
        thing=rng.choice(_THINGS),
        chore=rng.choice(_CHORES),
        topic=rng.choice(_TOPICS),
        weather=rng.choice(_WEATHER),
        day=rng.choice(_DAYS),
        day2=rng.choice(_DAYS),
        book=rng.choice(_BOOKS),
        shops=rng.choice(_SHOPS),
    )


def filler_turns(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` chat messages ({"role", "content"}), user and assistant roughly alternating."""
    rng = random.Random(seed)
    out: list[dict[str, str]] = []
    for i in range(n):
        role = "user" if i % 2 == 0 or rng.random() < 0.2 else "assistant"
        pool = _USER if role == "user" else _ASSISTANT
        out.append({"role": role, "content": _fill(rng.choice(pool), rng)})
    return out

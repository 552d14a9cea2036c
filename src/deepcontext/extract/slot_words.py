"""The vocabularies a slot's value must belong to (drinks, meals, jobs, schools, vehicles) or is
normalised by (diets, relationship statuses): :mod:`deepcontext.extract.slot_patterns` checks
captured values against them.
"""

from __future__ import annotations

from deepcontext.language.gazetteer import JOB_NOUNS as _GAZ_JOBS

__all__ = ["DRINKS", "JOB_NOUNS"]

DRINKS = frozenset(
    """coffee coffees tea teas espresso espressos latte lattes cappuccino cappuccinos americano flat-white macchiato
    mocha matcha chai rooibos kombucha juice chocolate smoothie smoothies water soda cola coke lemonade milk cocoa
    hot-chocolate beer beers wine wines cider whisky whiskey gin vodka decaf cortado""".split()
)
JOB_NOUNS = _GAZ_JOBS | frozenset(
    """principal headteacher headmaster paramedic midwife optician butcher tailor hairdresser barber cleaner
    janitor porter courier postman postwoman miner welder builder surveyor lifeguard ranger sommelier florist
    jeweller jeweler stylist model clerk dispatcher auditor underwriter actuary notary judge diplomat""".split()
)
_MEALS = frozenset(
    """oatmeal porridge granola cereal muesli toast eggs pancakes yogurt yoghurt bagel bagels croissant croissants
    fruit avocado waffles""".split()
)
_DIETS = {
    "vegetarian": "vegetarian",
    "veggie": "vegetarian",
    "vegan": "vegan",
    "pescatarian": "pescatarian",
    "pescetarian": "pescatarian",
    "flexitarian": "flexitarian",
    "keto": "keto",
    "paleo": "paleo",
    "plant-based": "vegan",
    "carnivore": "carnivore",
    "omnivore": "omnivore",
}
_SCHOOL_NOUNS = frozenset(
    """school academy elementary primary kindergarten preschool pre-school montessori nursery daycare
    high secondary grammar college university gymnasium lyceum""".split()
)
_VEHICLES = frozenset("car suv van truck pickup hatchback sedan minivan convertible wagon jeep".split())
_REL_STATUS = {
    "married": "married",
    "divorced": "divorced",
    "engaged": "engaged",
    "separated": "separated",
    "widowed": "widowed",
    "single": "single",
}

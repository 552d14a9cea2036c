"""The ways a change and a standing statement are said, as tables: each form has a name, its words
(a regular expression) and a sentence it must read with what it finds there: the thing ended, the
thing taken up, or for a standing statement the statement up to its verb
(``tests/test_replacement_forms.py`` reads every row). :mod:`deepcontext.extract.replacements` joins
each table into one pattern, in the order given (the first form that fits at a place wins)."""

from __future__ import annotations

from deepcontext.extract.forms import Form

__all__ = ["ENDED", "PARTED", "ROLES", "STANDING", "SWITCHED", "TAKEN_UP", "Form"]


#: a change that ends a thing the subject had, did or belonged to (the thing follows the words)
ENDED: tuple[Form, ...] = (
    Form("left", r"left", ("User left the chess club.", "chess club")),
    Form("quit", r"quit|quits", ("User quit smoking in February.", "smoking")),
    Form("leaves", r"leaves", ("Maya leaves the choir after this season.", "choir")),
    Form("dropped out", r"dropped\s+out\s+of", ("User dropped out of the evening course.", "evening course")),
    Form("resigned", r"resigned\s+from", ("User resigned from Leon.", "Leon")),
    Form("gave up", r"gave\s+up(?:\s+on)?|gives\s+up", ("User gave up on the allotment.", "allotment")),
    Form("stopped", r"stopped", ("User stopped yoga.", "yoga")),
    Form("ditched", r"ditched", ("User ditched the old laptop.", "laptop")),
    Form("sold", r"sold", ("User sold the piano last spring.", "piano")),
    Form("gave away", r"gave\s+away", ("User gave away their bike.", "bike")),
    Form("got rid of", r"got\s+rid\s+of", ("User got rid of the van.", "van")),
    Form("cancelled", r"cancell?ed", ("User canceled the Netflix subscription.", "Netflix subscription")),
    Form("retired", r"retired\s+from", ("User retired from the fire brigade.", "fire brigade")),
    Form("moved out", r"moved\s+out\s+of", ("User moved out of the flat on Elm Street.", "flat")),
    Form("broke up", r"broke\s+up\s+with", ("User broke up with Sam.", "Sam")),
    Form("split", r"split\s+(?:up\s+)?(?:with|from)", ("User split up with Jo last year.", "Jo")),
    Form("unsubscribed", r"unsubscribed\s+from", ("User unsubscribed from Spotify.", "Spotify")),
    Form("let go", r"let\s+go\s+of", ("User let go of the cleaner.", "cleaner")),
    Form("rehomed", r"rehomed", ("User rehomed the rabbit.", "rabbit")),
    Form("stepped down", r"stepped\s+down\s+from", ("User stepped down from the board.", "board")),
    Form("switched from", r"switched\s+from", ("User switched from Deezer to Qobuz.", "Deezer")),
    Form("swapped", r"swapped(?!\s+(?:over\s+)?to\b)", ("User swapped the cat for a dog.", "cat")),
    Form("replaced", r"replaced", ("User replaced the boiler with a heat pump.", "boiler")),
    Form("traded", r"traded(?:\s+in)?", ("User traded the old Golf in for an electric Kia.", "Golf")),
    Form("packed in", r"packed\s+in|jacked\s+in", ("User packed in the Saturday job.", "Saturday job")),
    Form("handed in notice", r"handed\s+in\s+(?:\w+\s+)?notice\s+(?:at|to)", ("User handed in their notice at Argos.", "Argos")),
    Form("did not renew", r"did(?:n't|\s+not)\s+renew", ("User didn't renew the season ticket.", "season ticket")),
    Form(
        "no longer",
        r"no\s+longer\s+(?:has|have|owns?|plays?|attends?|goes\s+to|belongs?\s+to|is\s+(?:a\s+member\s+of|in|with|part\s+of)|"
        r"does|drives?|dates?|sees?|keeps?|rides?)",
        ("User no longer has a car.", "car"),
    ),
    Form(
        "not any more",
        r"(?:is|are|am)(?:\s+not|n't)\s+(?=(?:[^.;]*?)\b(?:any\s?more|these\s+days|nowadays)\b)\w+ing",
        ("User is not playing cello these days.", "cello"),
    ),
)

#: a relationship ended, said with both people as the subject ("Jo and User split up"): the other
#: person is the thing ended
PARTED: tuple[Form, ...] = (
    Form("split up", r"split\s+up|broke\s+up|separated", ("Jo and User split up last month.", "Jo")),
    Form("divorced", r"(?:got\s+)?divorced", ("User and Sam got divorced.", "Sam")),
    Form("called it off", r"called\s+it\s+(?:off|quits)", ("Jo and User called it off.", "Jo")),
)

#: what took the ended thing's place, said in the same fact (the new thing follows the words)
TAKEN_UP: tuple[Form, ...] = (
    Form("joined", r"(?:\b(?:and|then)|,)\s+(?:has\s+)?joined", ("User left Starling and joined Wise.", "Wise")),
    Form("took up", r"\b(?:and|then)\s+(?:took|takes)\s+up", ("User gave up tennis and took up padel.", "padel")),
    Form(
        "has taken up",
        r"(?:\b(?:and|then)|,)\s+(?:(?:they|he|she)\s+)?(?:have|has|'ve)\s+taken\s+up",
        ("User is not playing cello these days, they have taken up the ukulele.", "the ukulele"),
    ),
    Form("switched to", r"(?:\b(?:and|then)|,)\s+switched\s+to", ("User quit Netflix and switched to Mubi.", "Mubi")),
    Form("moved to", r"(?:\b(?:and|then)|,)\s+moved\s+(?:in)?to", ("User left the flat and moved into a cottage.", "a cottage")),
    Form("went over", r"\b(?:and|then)\s+went\s+over\s+to", ("User left Tesco and went over to Aldi.", "Aldi")),
    Form(
        "signed up",
        r"(?:\b(?:and|then)|,)\s+signed\s+up\s+(?:for|with)",
        ("User quit the gym and signed up with PureFit.", "PureFit"),
    ),
    Form(
        "enrolled", r"(?:\b(?:and|then)|,)\s+enrolled\s+(?:at|in)", ("User left Hillside and enrolled at Kingsway.", "Kingsway")
    ),
    Form("bought", r"(?:\b(?:and|then)|,)\s+bought", ("User sold the Honda, bought a Brompton instead.", "a Brompton")),
    Form("got", r"\b(?:and|then)\s+got", ("User rehomed the rabbit and got a cat.", "a cat")),
    Form("adopted", r"(?:\b(?:and|then)|,)\s+adopted", ("User gave away the hamster and adopted a kitten.", "a kitten")),
    Form(
        "traded for",
        r"\b(?:traded|swapped|exchanged)\s+(?:\S+\s+){1,5}?(?:in\s+)?for",
        ("User swapped the cat for a dog.", "a dog"),
    ),
    Form("replaced with", r"\breplaced\s+(?:\S+\s+){1,5}?with", ("User replaced the boiler with a heat pump.", "a heat pump")),
    Form("switched from to", r"\bswitched\s+from\s+(?:\S+\s+){1,5}?to", ("User switched from Deezer to Qobuz.", "Qobuz")),
)

#: a change to a new thing that does not name the old one ("User switched to a Pixel 8"): what it
#: replaces is the standing thing of the same kind, which the words cannot tell (the embedder does, see
#: :func:`deepcontext.extract.replacements.switched_to`); the new thing follows the words
SWITCHED: tuple[Form, ...] = (
    Form("switched to", r"(?:has\s+|have\s+)?switched\s+(?:over\s+)?to", ("User switched to a Pixel 8 last week.", "a Pixel 8")),
    Form(
        "switched what to",
        r"(?:has\s+|have\s+)?(?:switched|changed|moved|ported)\s+(?:all\s+)?(?:(?:their|his|her|the)\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:over\s+)?to",
        ("User switched their car insurance to Direct Line in 2025.", "Direct Line"),
    ),
    Form("changed to", r"(?:has\s+|have\s+)?changed\s+(?:over\s+)?to", ("User changed to Octopus in May.", "Octopus")),
    Form("moved to", r"(?:has\s+|have\s+)?moved\s+(?:over\s+)?to", ("User moved to Tidal for the lossless audio.", "Tidal")),
    Form("swapped to", r"(?:has\s+|have\s+)?swapped\s+(?:over\s+)?to", ("User swapped to rowing this spring.", "rowing")),
    Form("went over", r"(?:went|has\s+gone|have\s+gone)\s+over\s+to", ("User went over to Lidl for the weekly shop.", "Lidl")),
    Form("upgraded to", r"(?:has\s+|have\s+)?upgraded\s+to", ("User upgraded to a Kindle Paperwhite.", "a Kindle Paperwhite")),
    Form("went with", r"(?:went|has\s+gone|have\s+gone)\s+with", ("User went with Ovo in the end.", "Ovo")),
    Form(
        "made the switch",
        r"(?:made|has\s+made|have\s+made)\s+the\s+(?:switch|jump|move|change)\s+to",
        ("User made the jump to Linux.", "Linux"),
    ),
    Form(
        "instead",
        r"(?:has\s+|have\s+)?(?:joined|signed\s+up\s+(?:with|for|to|at)|took\s+up|started\s+(?:using|going\s+to))(?=[^.;]*\binstead\b)",
        ("User joined a running club instead.", "a running club"),
    ),
    Form(
        "got a new",
        r"(?:got|bought|picked\s+up)\s+(?:themsel(?:f|ves)\s+)?(?:a\s+)?new\s+(?:[\w-]+\s+){0,2}?[\w-]+\s*,",
        ("User got a new laptop, a Framework 13.", "a Framework 13"),
    ),
)

#: a change said as what now fills a role of the subject's ("Pocket Casts is User's podcast app now"):
#: ``new`` is the thing, which replaces the standing thing of the same kind
ROLES: tuple[Form, ...] = (
    Form(
        "is my now",
        r"^(?P<new>[^,;]+?)\s+(?:is|'s|are|'re)\s+User's\s+(?:main\s+|new\s+|big\s+)?[\w -]+?\s+now\b",
        ("Pocket Casts is User's podcast app now.", "Pocket Casts"),
    ),
    Form(
        "my is now",
        r"^User's\s+[\w -]+?\s+(?:is|'s|are|comes|come)\s+(?:with\s+|from\s+)?(?P<new>[^,;]+?)\s+now\b",
        ("User's terminal is WezTerm now.", "WezTerm"),
    ),
    Form(
        "that's my now",
        r"^User\s+(?:\w+\s+)?(?:got|bought|picked\s+up|leased|joined|opened|signed\s+up\s+(?:at|with|for|to))\s+"
        r"(?:themsel(?:f|ves)\s+)?(?P<new>[^,;]+?)\s*,\s+(?:so\s+)?(?:that's|it's|they're|that\s+is)\s+(?:what\s+)?"
        r"(?:User's|their)\s+[\w -]+?\s+now\b",
        ("User got an Amex, it's User's main credit card now.", "an Amex"),
    ),
)

#: a standing statement: present tense, holding or doing the thing (what follows its subject)
STANDING: tuple[Form, ...] = (
    Form("has", r"has|have", ("User has a red car.", "User has")),
    Form("owns", r"owns?", ("User owns a Yamaha piano.", "User owns")),
    Form("drives", r"drives?", ("User drives a VW Golf.", "User drives")),
    Form("rides", r"rides?", ("User rides a Brompton.", "User rides")),
    Form("plays", r"plays?", ("User plays tennis every weekend.", "User plays")),
    Form("attends", r"attends?", ("User's son attends Hillside School.", "User's son attends")),
    Form("goes to", r"goes\s+to", ("User's son goes to Hillside School.", "User's son goes to")),
    Form("belongs to", r"belongs?\s+to", ("User belongs to a book club.", "User belongs to")),
    Form(
        "is in",
        r"is\s+(?:a\s+member\s+of|in|on|at|part\s+of|with|dating|seeing|married\s+to|enrolled\s+(?:at|in)|registered\s+(?:at|with))",
        ("User is a member of the chess club.", "User is a member of"),
    ),
    Form("are", r"are\s+", ("User's twins are in the school band.", "User's twins are")),
    Form(
        "works at",
        r"works?\s+(?:as\s+(?:a|an)\s+[\w-]+(?:\s+[\w-]+)?\s+)?(?:at|for)",
        ("User works as a chef at Leon.", "User works as a chef at"),
    ),
    Form("does", r"does", ("User does yoga on Tuesdays.", "User does")),
    Form("practises", r"practi[cs]es", ("User practises judo.", "User practises")),
    Form("keeps", r"keeps?", ("User keeps bees.", "User keeps")),
    Form("volunteers", r"volunteers?\s+(?:at|with)", ("User volunteers at the food bank.", "User volunteers at")),
    Form("subscribes", r"subscribes?\s+to", ("User subscribes to Deezer.", "User subscribes to")),
    Form("takes", r"takes?", ("User takes the bus to work.", "User takes")),
    Form(
        "banks with",
        r"banks?\s+with|shops?\s+at|supports|listens\s+to|reads|watches|streams",
        ("User banks with Barclays.", "User banks with"),
    ),
    Form("pays for", r"pays?\s+for", ("User pays for Spotify Premium.", "User pays for")),
    Form(
        "is doing",
        r"is\s+(?:learning|studying|doing|taking|training\s+(?:as|for|in)|coaching|teaching|using|driving|riding|following|wearing)",
        ("User is learning Japanese on Duolingo.", "User is learning"),
    ),
    Form(
        "activities",
        r"studies|smokes|vapes|drinks|eats|uses|wears|rents|leases|runs|swims|cycles|jogs|climbs|surfs|skis|dances|sings|knits|paints|"
        r"works|coaches|teaches|learns|trains|manages",
        ("User smokes a pack a day.", "User smokes"),
    ),
    Form("is a", r"(?:is|are)\s+(?:a|an)\s+", ("User is a season ticket holder at Leeds.", "User is a ")),
)

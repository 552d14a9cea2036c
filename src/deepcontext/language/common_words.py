"""Common words for the rule-based extractor, written and compared in lower case: grammar words
(stop words, words never an entity, adverbs, irregular and false past forms, imperatives) and common
nouns (kin with the relation each names, pets, possessions, jobs, instruments and sports). They
stand apart from :mod:`deepcontext.language.gazetteer`, whose lists are proper names matched by their
written form (places, people, organisations, technology, events) and which re-exports these.
"""

from __future__ import annotations

__all__ = [
    "ADVERBS",
    "CONTENT_STOP",
    "HAS_NOUNS",
    "IMPERATIVE_VERBS",
    "INSTRUMENTS_SPORTS",
    "IRREGULAR_PARTICIPLES",
    "IRREGULAR_PAST",
    "JOB_NOUNS",
    "KIN",
    "KIN_GENDER",
    "NOT_NOUN_AFTER",
    "NOT_PAST_ED",
    "PET_NOUNS",
    "REQUEST_VERBS",
    "STOPCAPS",
    "STOPCAPS_ALWAYS",
    "words",
]


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text`` as a frozenset (how every word list here is written)."""
    return frozenset(text.split())


# Capitalised words that are never an entity on their own (pronouns, determiners, sentence starters,
# interjections, weekdays, months, frequent adjectives). Compared in lower case.
STOPCAPS = words(
    """i i'm i've i'll i'd me my mine myself we us our ours you your yours he him his she her hers it its they
    them their this that these those there here the a an and or but so yet nor if then than because though
    although while when where what which who whom whose why how yes no not ok okay oh ah aw aww hey hi hello
    hiya yo thanks thank thx ty please sure yeah yep yup nope nah well wow haha hahaha lol lmao omg btw fyi
    imo tbh idk hmm hm uh um er great good nice cool awesome amazing wonderful fantastic lovely perfect
    excellent brilliant sweet fine alright right exactly absolutely definitely totally really very just
    actually honestly basically anyway anyways also still maybe perhaps probably yesterday today tomorrow
    tonight now later soon recently last next this every each some any all many much more most few several
    first second third then finally once monday tuesday wednesday thursday friday saturday sunday mon tue tues
    wed thu thurs fri sat sun january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec morning afternoon evening night weekend week
    month year day congrats congratulations happy sorry glad welcome cheers bye goodbye goodnight dear hope
    let let's can could would should will shall might must do does did don't doesn't didn't is are was were
    be been am have has had i'd speaking talking regarding about after before during since until on in at
    to from with without for of by as like unlike other another such same new old big small little mom dad
    mum mother father sister brother wife husband son daughter friend guys everyone everybody someone
    somebody anyone nobody nothing something everything one two three four five six seven eight nine ten
    speaking whoa whew phew ugh meh yay hooray bravo indeed sometimes usually always never often"""
)

# Capitalised words that are not an entity even in the middle of a sentence.
STOPCAPS_ALWAYS = words(
    """i i'm i've i'll i'd me my mine myself we us our you your he him his she her it its they them their
    this that these those the a an yes no ok okay oh hey hi hello thanks thx sure yeah yep nope wow haha
    hahaha lol lmao omg btw fyi imo tbh idk hmm uh um yesterday today tomorrow tonight monday tuesday
    wednesday thursday friday saturday sunday january february march april june july august september
    october november december mom dad mum mommy daddy mama papa grandma grandpa please congrats tv pc diy bbq
    asap rip phd mba msc bsc ceo cto cfo coo vp"""
)

ADVERBS = words(
    """really also just usually always never often sometimes still actually absolutely totally definitely
    recently finally only mostly generally rarely seldom even truly honestly probably currently now already
    basically kinda sorta literally seriously personally normally typically mainly certainly surely
    originally initially eventually constantly occasionally frequently regularly once again too so very
    obviously apparently genuinely especially particularly simply"""
)

# Kinship and social nouns -> relation name (the named person is <relation> the speaker).
KIN: dict[str, str] = {
    "sister": "sister_of",
    "sis": "sister_of",
    "brother": "brother_of",
    "bro": "brother_of",
    "mom": "mother_of",
    "mum": "mother_of",
    "mother": "mother_of",
    "mommy": "mother_of",
    "mama": "mother_of",
    "dad": "father_of",
    "father": "father_of",
    "daddy": "father_of",
    "papa": "father_of",
    "son": "child_of",
    "daughter": "child_of",
    "kid": "child_of",
    "child": "child_of",
    "baby": "child_of",
    "husband": "married_to",
    "wife": "married_to",
    "spouse": "married_to",
    "partner": "partner_of",
    "boyfriend": "partner_of",
    "girlfriend": "partner_of",
    "fiance": "partner_of",
    "fiancé": "partner_of",
    "fiancee": "partner_of",
    "fiancée": "partner_of",
    "friend": "friend_of",
    "buddy": "friend_of",
    "pal": "friend_of",
    "bestie": "friend_of",
    "bff": "friend_of",
    "roommate": "roommate_of",
    "flatmate": "roommate_of",
    "neighbor": "neighbor_of",
    "neighbour": "neighbor_of",
    "colleague": "colleague_of",
    "coworker": "colleague_of",
    "co-worker": "colleague_of",
    "teammate": "colleague_of",
    "boss": "manager_of",
    "manager": "manager_of",
    "mentor": "mentor_of",
    "parent": "parent_of",
    "folks": "parent_of",
    "grandparent": "grandparent_of",
    "grandma": "grandparent_of",
    "grandmother": "grandparent_of",
    "grandpa": "grandparent_of",
    "grandfather": "grandparent_of",
    "granny": "grandparent_of",
    "children": "child_of",
    "grandchild": "grandchild_of",
    "grandchildren": "grandchild_of",
    "grandson": "grandchild_of",
    "granddaughter": "grandchild_of",
    "cousin": "cousin_of",
    "aunt": "aunt_of",
    "uncle": "uncle_of",
    "niece": "niece_of",
    "nephew": "nephew_of",
    "stepmom": "mother_of",
    "stepdad": "father_of",
    "stepson": "child_of",
    "stepdaughter": "child_of",
    "stepbrother": "sibling_of",
    "stepsister": "sibling_of",
    "in-law": "in_law_of",
    "twin": "sibling_of",
    "sibling": "sibling_of",
}

#: relatives a "she" or a "he" can stand for (None: either, as a child of unknown sex)
KIN_GENDER: dict[str, str | None] = {
    **dict.fromkeys(
        """daughter mum mom mother mama mommy sister sis wife girlfriend fiancee fiancée grandma grandmother granny
        granddaughter aunt niece stepmom stepdaughter stepsister""".split(),
        "f",
    ),
    **dict.fromkeys(
        """son dad father daddy papa brother bro husband boyfriend fiance fiancé grandpa grandfather grandson uncle
        nephew stepdad stepson stepbrother""".split(),
        "m",
    ),
    **dict.fromkeys("kid child baby twin".split()),
}

PET_NOUNS = words(
    """dog puppy pup cat kitten kitty bird parrot budgie rabbit bunny hamster guinea pig fish goldfish turtle
    tortoise snake lizard gecko horse pony ferret rat mouse chinchilla hedgehog pet retriever labrador poodle
    terrier beagle bulldog husky corgi dachshund shepherd spaniel chihuahua pug collie tabby"""
)

# Things "has" may point to without a name (kept short and lower-case).
HAS_NOUNS = PET_NOUNS | words(
    """kids children sons daughters sisters brothers siblings twins grandchildren car bike bicycle motorcycle
    truck van boat house apartment flat condo garden cabin degree phd masters diploma
    tattoo tattoos"""
)

JOB_NOUNS = words(
    """developer engineer programmer coder architect designer scientist researcher analyst consultant manager
    director executive founder cofounder co-founder ceo cto cfo coo vp lead administrator admin teacher
    professor lecturer tutor instructor coach nurse doctor physician surgeon dentist pharmacist therapist
    psychologist psychiatrist counselor counsellor lawyer attorney paralegal accountant banker trader
    economist journalist writer author editor reporter photographer filmmaker videographer artist painter
    illustrator animator musician singer songwriter composer producer dj actor actress dancer chef cook baker
    barista bartender waiter waitress server cashier clerk receptionist assistant secretary librarian
    electrician plumber carpenter mechanic technician driver pilot farmer gardener firefighter paramedic
    officer soldier veteran police policeman detective entrepreneur freelancer contractor intern
    student vet veterinarian nanny caregiver salesperson marketer recruiter realtor agent broker
    mathematician physicist chemist biologist geologist statistician translator interpreter pastor priest
    volunteer streamer youtuber influencer blogger podcaster gamer tester devops sre specialist strategist
    planner coordinator supervisor owner"""
)

INSTRUMENTS_SPORTS = words(
    """guitar piano violin cello viola bass drums drum flute clarinet saxophone sax trumpet trombone harp
    ukulele banjo mandolin harmonica keyboard accordion organ tuba oboe bassoon tennis golf soccer football
    basketball baseball volleyball hockey rugby cricket badminton squash chess poker bridge pool billiards
    darts softball lacrosse handball ping-pong pingpong tabletennis frisbee pickleball padel games videogames
    cards"""
)

IRREGULAR_PAST = words(
    """went saw got took made came bought ate drank met ran began left found gave told wrote won lost flew drove
    rode swam sang felt heard sent spent built caught taught brought fought sold kept slept woke wore broke
    chose forgot hid held hurt led paid quit sat shot shut stood stole threw understood became did had knew
    thought said grew fell froze hung lent lit overslept rang rose sank shook sprang stung swore tore wept
    wound dug fed bled bit blew drew forgave mistook overcame undertook withdrew"""
)
IRREGULAR_PARTICIPLES = words(
    """been gone done seen had got gotten known taken given eaten written made come bought found told won lost
    flown driven ridden swum sung felt heard sent spent built caught taught brought fought sold kept slept
    woken worn broken chosen forgotten hidden held hurt led paid quit sat shot shut stood stolen thrown
    understood become begun run met left read put grown fallen drunk"""
)
# Words ending in -ed that are not past-tense actions.
NOT_PAST_ED = words(
    """bed red shed need seed speed feed weed bleed breed greed ted fred ned sled wed embed hundred kindred
    sacred naked wicked beloved aged interested excited married tired based located called named retired
    divorced engaged related used supposed scared bored obsessed worried concerned pleased surprised amazed
    annoyed confused disappointed exhausted stressed relaxed satisfied qualified skilled experienced talented
    motivated committed dedicated involved allowed required expected prepared determined limited advanced
    detailed complicated sophisticated unexpected unlimited tailored blessed crowded spoiled learned
    educated self-employed employed unemployed biased inspired fascinated thrilled delighted overwhelmed
    frustrated embarrassed ashamed impressed"""
)

IMPERATIVE_VERBS = words(
    """add apply avoid back be boil bring build buy call change check choose chop clean clear click close
    commit compile configure connect consider copy cover create cut delete deploy disable do don't download
    drain drink drive eat edit enable enter export fill filter fold follow format freeze fry get go grab
    grate heat hold import increase insert install keep kill knead label leave let lock log login logout
    lower make measure merge mix move note open paste pay peel pick place plug pour preheat prepare press
    print pull push put raise read reboot reduce refresh register reload remember remove rename repeat
    replace reset restart restore rinse roll run save scroll season select separate serve set shut sign
    simmer slice sort spread start stir stop store strain submit swap switch take tap test tighten toggle
    try turn type uncheck uninstall unlock unplug update upgrade upload use validate verify wait warm wash
    water whisk wipe wrap write"""
)

# Imperatives addressed to the assistant: requests, not how-to knowledge.
REQUEST_VERBS = words(
    """write explain summarize summarise translate tell show give help find list describe generate draft
    suggest recommend compare calculate convert rewrite answer search look define teach remind send book fix
    debug review rephrase proofread brainstorm imagine pretend act continue elaborate clarify outline
    paraphrase correct improve create"""
)

# Words that never count as content when deciding whether a sentence says anything.
CONTENT_STOP = words(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves also just really get got will shall may might must yeah yes ok okay
    oh hey hi hello thanks thank please lol haha hahaha lmao omg wow cool nice great awesome amazing
    wonderful fantastic lovely perfect sure yep yup nope nah hmm hm um uh well sounds sound seems looks fun
    glad sorry hear congrats congratulations welcome bye goodbye cheers luck good bad pretty
    kinda sorta thing things stuff lot lots much many something anything everything nothing someone
    anyone everyone one way kind sort bit yesterday today tomorrow tonight now soon later recently again
    totally definitely absolutely exactly right indeed agree true cute interesting exciting awesome wish
    hope hopefully happy fine alright actually honestly basically literally super quite rather even still
    though anyway anyways btw fyi gonna wanna gotta thx ty np like"""
)

# Words that may follow a name without the name being a modifier ("Berlin last year", "Spanish fluently";
# compare "LGBTQ support group", "Google headquarters"). Words ending in -ly count too.
NOT_NOUN_AFTER = CONTENT_STOP | words(
    """in on at with for from to by about during since because when while and or but so than as if that which
    who where last next this every each early late earlier later soon twice once together alone forever
    full-time part-time remotely permanently abroad downtown home first ago one two three four five six seven
    eight nine ten eleven twelve few couple several since until till via through for around near"""
)

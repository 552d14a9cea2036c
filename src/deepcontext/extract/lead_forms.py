"""Words around a sentence that carry no fact, as tables: interjections and discourse markers at its
start ("Oh, ...", "tbh ..."), reactions ("Cool! ..."), requests to remember ("Remember that ..."),
reported speech ("As I said, ..."), and a tag question at its end ("..., you?").

Each form (:class:`~deepcontext.extract.forms.Form`) has a name, its words (a regular expression,
case ignored) and a sentence it must read with what is left once the form is dropped (``tests/test_lead_forms.py`` reads every row).
:mod:`deepcontext.extract.facts` joins each table into one pattern, in the order given (at one
place, the first form that fits wins).
"""

from __future__ import annotations

from deepcontext.extract.forms import Form

__all__ = ["OPENERS", "REACTIONS", "REMEMBER", "REPORTED", "TAGS"]


#: at a sentence's start, followed by a space or punctuation (or ending the sentence)
OPENERS: tuple[Form, ...] = (
    Form("interjection", r"oh|ah|aw+|well|so", ("Oh, we moved to York.", "we moved to York.")),
    Form("yes", r"yeah|yea|yes|yep|yup", ("Yeah I drive a Golf.", "I drive a Golf.")),
    Form(
        "no",
        r"no(?=\s*[,!.:;…-]|\s+(?:i|i'm|i've|we|it|it's|that|not|way|thanks)\b|$)|nope|nah",
        ("No, I moved to York.", "I moved to York."),
    ),
    Form("ok", r"ok|okay|k", ("Okay so I started at Arup.", "I started at Arup.")),
    Form("laughter", r"haha+|hehe+|ha|lol|lmao|rofl", ("Haha I burnt the rice again.", "I burnt the rice again.")),
    Form("hello", r"hey|hi", ("Hey, I'm Tomas.", "I'm Tomas.")),
    Form(
        "exclamation",
        r"ugh+|argh+|meh|oof|yikes|phew|whew|yay|woo+hoo+|damn|dang|gosh|jeez|geez|wait|hmm+|alas|ahh+|ooh+",
        ("Ugh, my train was cancelled.", "my train was cancelled."),
    ),
    Form(
        "greeting",
        r"hello|hiya|howdy|greetings|good\s+(?:morning|afternoon|evening|day)",
        ("Good morning! I start at Arup today.", "I start at Arup today."),
    ),
    Form("wonder", r"wow|whoa|um+|uh+|hmm+", ("Um, I think I lost my keys.", "I think I lost my keys.")),
    Form(
        "discourse",
        r"anyway|anyways|actually|honestly|btw|by\s+the\s+way|also|and|but|plus",
        ("Honestly, I prefer tea.", "I prefer tea."),
    ),
    Form(
        "aside",
        r"oh\s+and|fun\s+fact|guess\s+what|you\s+know\s+what|you\s+know|to\s+be\s+honest|tbh|omg|thanks",
        ("Guess what, I got the job.", "I got the job."),
    ),
    Form(
        "postscript",
        r"thank\s+you|fwiw|ps|p\.s\.|speaking\s+of\s+which|funny\s+enough|in\s+fact",
        ("Speaking of which, I sold the van.", "I sold the van."),
    ),
)

#: a reaction at a sentence's start, always followed by punctuation
REACTIONS: tuple[Form, ...] = (
    Form(
        "approval",
        r"cool|great|nice|awesome|sure|right|alright|true|totally|absolutely|definitely|indeed|exactly",
        ("Cool! I booked the flights.", "I booked the flights."),
    ),
    Form(
        "agreement",
        r"agreed|same|perfect|amazing|wonderful|fantastic|interesting|gotcha|got\s+it|i\s+see|oh\s+wow",
        ("Same! I love that band.", "I love that band."),
    ),
    Form(
        "acknowledgement",
        r"sounds\s+good|good\s+question|fair\s+enough|of\s+course|no\s+problem|no\s+worries|congrats",
        ("Fair enough. I'll take the bus.", "I'll take the bus."),
    ),
    Form(
        "praise",
        r"congratulations|that's\s+(?:great|awesome|amazing|cool|nice|wonderful|fantastic|so\s+cool)",
        ("That's great! My sister got married.", "My sister got married."),
    ),
    Form("me too", r"me\s+too", ("Me too! I grew up in Leeds.", "I grew up in Leeds.")),
)

#: a request to remember what follows (the fact is kept as one the speaker asked to be remembered)
REMEMBER: tuple[Form, ...] = (
    Form("remember", r"remember(?!\s+to\b)|note|please\s+note|keep\s+in\s+mind", ("Remember that I'm vegan.", "I'm vegan.")),
    Form(
        "don't forget",
        r"don't\s+forget(?!\s+to\b)|do\s+not\s+forget(?!\s+to\b)|never\s+forget",
        ("Don't forget that I hate olives.", "I hate olives."),
    ),
    Form(
        "for the record",
        r"fyi|for\s+the\s+record|just\s+so\s+you\s+know",
        ("Just so you know, I'm allergic to nuts.", "I'm allergic to nuts."),
    ),
    Form(
        "you should know",
        r"for\s+your\s+information|i\s+want\s+you\s+to\s+know|i'd\s+like\s+you\s+to\s+know|you\s+should\s+know",
        ("I want you to know that I work nights.", "I work nights."),
    ),
    Form(
        "for reference",
        r"for\s+future\s+reference|for\s+context|important",
        ("For future reference, my flat is on the third floor.", "my flat is on the third floor."),
    ),
)

#: reported speech at a sentence's start: the speaker's own earlier words
REPORTED: tuple[Form, ...] = (
    Form(
        "as I said",
        r"as\s+i\s+(?:said|mentioned|told\s+you)(?:\s+before|\s+earlier)?|like\s+i\s+said|i\s+told\s+you",
        ("As I said before, I live in Leeds.", "I live in Leeds."),
    ),
    Form(
        "I should mention",
        r"i\s+mentioned|i\s+forgot\s+to\s+mention|i\s+should\s+mention|i\s+should\s+tell\s+you",
        ("I forgot to mention that I have a cat.", "I have a cat."),
    ),
    Form(
        "let me tell you",
        r"let\s+me\s+tell\s+you|i\s+have\s+to\s+tell\s+you|i\s+must\s+say|i\s+can\s+tell\s+you",
        ("Let me tell you, the new job is hard.", "the new job is hard."),
    ),
    Form(
        "I wanted to tell you",
        r"i\s+wanted\s+to\s+(?:tell|let)\s+you(?:\s+know)?|i\s+wanted\s+to\s+share",
        ("I wanted to let you know that I passed.", "I passed."),
    ),
)

#: a question tagged onto a sentence's end, after a comma (the sentence ends with a full stop instead)
TAGS: tuple[Form, ...] = (
    Form(
        "and you",
        r"you|u|yourself|how\s+about\s+you|what\s+about\s+you|and\s+you",
        ("I love hiking, how about you?", "I love hiking."),
    ),
    Form(
        "right",
        r"right|isn't\s+it|don't\s+you\s+think|you\s+know|did\s+you\s+know|have\s+you|do\s+you",
        ("The lake is lovely, don't you think?", "The lake is lovely."),
    ),
    Form("ok", r"ok|okay|haha|lol", ("I'll be late tonight, ok?", "I'll be late tonight.")),
)

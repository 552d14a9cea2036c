"""The subject named again in its own sentence becomes "they" / "their" where a careful writer puts it."""

from __future__ import annotations

import pytest

from deepcontext.extract.repeats import they_for_repeats
from deepcontext.extract.slots import find_slots


@pytest.mark.parametrize(
    ("rules", "careful"),
    [
        ("User still eats meat, but User has cut down a lot.", "User still eats meat, but they have cut down a lot."),
        ("User thinks User should quit User's job.", "User thinks they should quit their job."),
        ("User is tired because User worked late.", "User is tired because they worked late."),
        ("User loves hiking and User goes every weekend.", "User loves hiking and they go every weekend."),
        ("Maya was sure Maya wasn't late.", "Maya was sure they weren't late."),
        ("Maya lost the keys, and Maya's wallet was gone.", "Maya lost the keys, and their wallet was gone."),
        # someone else named in between: "they" could mean them
        ("User told User's sister User would come.", "User told their sister User would come."),
        ("User asked Sam to call User back.", "User asked Sam to call User back."),
        ("User met Jo and User liked her.", "User met Jo and User liked her."),
        # not a clause's subject: an object stays named (a careful writer would reword it)
        ("User bought User a bike.", "User bought User a bike."),
        # another subject first: nothing to do
        ("When User was a kid User lived in Oslo.", "When User was a kid User lived in Oslo."),
    ],
)
def test_a_repeated_subject_reads_as_a_careful_writer_puts_it(rules: str, careful: str) -> None:
    assert they_for_repeats(rules, rules.split(" ")[0].removesuffix("'s")) == careful


def test_a_change_the_rules_would_read_differently_is_not_made() -> None:
    text = "User sold the flat and User lives in York now."
    assert find_slots(text, "User") != find_slots(they_for_repeats(text, "User"), "User")  # "they live" hides the slot
    assert they_for_repeats(text, "User", slots=lambda t: find_slots(t, "User")) == text

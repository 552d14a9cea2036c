"""What memories call a user without a name: "the user" in running text, the rules' placeholder
"User" only inside the rules."""

from __future__ import annotations

import pytest

from deepcontext.extract.rules import RuleExtractor
from deepcontext.extract.slots import find_slots
from deepcontext.language.unnamed import parsed, written


@pytest.mark.parametrize(
    ("rules", "memory"),
    [
        ("User moved to York.", "The user moved to York."),
        ("User lives in Leeds and User's sister lives in Hull.", "The user lives in Leeds and the user's sister lives in Hull."),
        ("On 2025-03-09 User went to the lake.", "On 2025-03-09 the user went to the lake."),
        ("Sam told User that Maya is coming. User agreed.", "Sam told the user that Maya is coming. The user agreed."),
        ("Yesterday User swam.", "Yesterday the user swam."),
        ("In March User moved to Kiel.", "In March the user moved to Kiel."),
        ('"User is fine," Maya said.', '"The user is fine," Maya said.'),
        # not the placeholder: part of a name or of a word
        ("Maya leads the User Experience team.", "Maya leads the User Experience team."),
        ("Sam is a Power User of Vim.", "Sam is a Power User of Vim."),
        ("Users and UserVoice.", "Users and UserVoice."),
    ],
)
def test_the_placeholder_is_written_as_a_careful_writer_puts_it(rules: str, memory: str) -> None:
    assert written(rules) == memory
    assert parsed(memory) == rules  # and read back as the rules wrote it


def test_text_about_a_named_user_is_read_as_it_is() -> None:
    assert parsed("The user interface is slow.", "Ana") == "The user interface is slow."
    assert parsed("The user moved to York.") == "User moved to York."


def test_slots_of_a_stored_memory_are_the_same_in_either_form() -> None:
    for text in ("User lives in Porto.", "User's daughter goes to Elm Park Primary.", "User works at Globex."):
        assert find_slots(written(text)) == find_slots(text) != []


def test_extracted_memories_of_an_unnamed_user_say_the_user() -> None:
    from datetime import UTC, datetime

    from deepcontext.extract.interface import ExtractionContext, MessageIn

    now = datetime(2025, 6, 1, tzinfo=UTC)
    msgs = [MessageIn(index=0, role="user", content="I live in Leeds and my sister works at Globex.", said_at=now)]
    rules = RuleExtractor()
    unnamed = [f.text for f in rules.extract_sync(msgs, ExtractionContext(user_id="u", conversation_id="c", now=now)).facts]
    assert unnamed and all("User" not in t for t in unnamed), unnamed
    assert any(t.startswith("The user ") for t in unnamed) and any("the user's sister" in t.lower() for t in unnamed)
    named = rules.extract_sync(msgs, ExtractionContext(user_id="u", conversation_id="c", now=now, user_name="Ana")).facts
    assert named and all(t.text.startswith("Ana") for t in named) and not any("user" in t.text.lower() for t in named)

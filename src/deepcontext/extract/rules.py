"""The offline extractor: facts, entities and relations from rules, without a network or a model.

``RuleExtractor`` runs when no LLM is configured: third-person facts that stand alone ("I'm a Python
developer" said by Caroline -> "Caroline is a Python developer"), typed, dated, scored, with entities
and relations. :mod:`~deepcontext.extract.pipeline` puts the stages together. Importing this module is
cheap: the patterns are compiled when the pipeline is first needed (or by :meth:`RuleExtractor.prepare`).
"""

from __future__ import annotations

import asyncio
import re
import threading
from typing import TYPE_CHECKING

from deepcontext.errors import ValidationError
from deepcontext.extract.interface import (
    ExtractionContext,
    ExtractionResult,
    Extractor,
    MessageIn,
)

if TYPE_CHECKING:
    from deepcontext.extract.pipeline import RulePipeline

__all__ = ["RuleExtractor"]

_LOCK = threading.Lock()
_PRONOUN_FIRST_RE = re.compile(r"(?:he|she|it|its|his|her|they|their)\b", re.IGNORECASE)


class RuleExtractor(Extractor):
    """Rule-based extraction: no network, no model, thousands of messages a second on one core.

    ``min_content_words``: sentences with fewer content words (after rewriting) give no fact.
    ``assistant_facts``: keep what the assistant states about the user ("you prefer dark mode" -> "User
    prefers dark mode", confidence 0.7).
    ``thread_threshold``: :meth:`extract` runs batches of at least this many messages (or over 20,000
    characters) in a worker thread, smaller ones inline.
    ``max_sentence_chars``: longer sentences (pasted text, logs) give no fact.
    """

    name = "rules"

    def __init__(
        self,
        *,
        min_content_words: int = 3,
        assistant_facts: bool = True,
        thread_threshold: int = 32,
        max_sentence_chars: int = 600,
    ) -> None:
        if min_content_words < 1:
            raise ValidationError("min_content_words must be at least 1")
        if thread_threshold < 1:
            raise ValidationError("thread_threshold must be at least 1")
        if max_sentence_chars < 20:
            raise ValidationError("max_sentence_chars must be at least 20")
        self.min_content_words = min_content_words
        self.assistant_facts = assistant_facts
        self.thread_threshold = thread_threshold
        self.max_sentence_chars = max_sentence_chars
        self._pipeline: RulePipeline | None = None

    def prepare(self) -> None:
        """Load the pipeline now (its patterns and the lemma table, once per process) instead of on the
        first call."""
        if self._pipeline is None:
            with _LOCK:
                if self._pipeline is None:
                    from deepcontext.extract.pipeline import RulePipeline
                    from deepcontext.extract.verbs import lexicon

                    lexicon()
                    self._pipeline = RulePipeline(
                        min_content_words=self.min_content_words,
                        assistant_facts=self.assistant_facts,
                        max_sentence_chars=self.max_sentence_chars,
                    )

    async def extract(self, messages: list[MessageIn], context: ExtractionContext) -> ExtractionResult:
        """Extract from ``messages``: inline for small batches, in a worker thread for large ones (and
        for the first, which loads the pipeline)."""
        if self._pipeline is None:
            await asyncio.to_thread(self.prepare)
        if len(messages) >= self.thread_threshold or sum(len(m.content or "") for m in messages) > 20_000:
            return await asyncio.to_thread(self.extract_sync, messages, context)
        return self.extract_sync(messages, context)

    def wants_context(self, messages: list[MessageIn]) -> bool:
        """True when the batch opens with a pronoun ("She starts on Monday"): its referent is earlier."""
        return bool(messages) and bool(_PRONOUN_FIRST_RE.match(messages[0].content.lstrip()))

    def extract_sync(self, messages: list[MessageIn], context: ExtractionContext) -> ExtractionResult:
        """Extract facts, entities and relationships from ``messages``: pure CPU work, no I/O."""
        if not isinstance(messages, list) or any(not isinstance(m, MessageIn) for m in messages):
            raise ValidationError("messages must be a list of MessageIn")
        if not isinstance(context, ExtractionContext):
            raise ValidationError("context must be an ExtractionContext")
        if self._pipeline is None:
            self.prepare()
        assert self._pipeline is not None
        return self._pipeline.run(messages, context)

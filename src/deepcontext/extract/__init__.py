"""Extraction of memories, entities and relations from conversation messages."""

from deepcontext.extract.interface import (
    Classifier,
    Decision,
    ExistingMemory,
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
    ExtractionContext,
    ExtractionResult,
    Extractor,
    MessageIn,
)
from deepcontext.extract.rules import RuleExtractor as RuleExtractor

__all__ = [
    "Classifier",
    "Decision",
    "ExistingMemory",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedRelationship",
    "ExtractionContext",
    "ExtractionResult",
    "Extractor",
    "MessageIn",
]

"""One way of saying something, as a row of a rule table: a name, its words (a regular expression,
case ignored) and a sentence it must read with what it finds there. The tables
(:mod:`~deepcontext.extract.replacement_forms`, :mod:`~deepcontext.extract.lead_forms`) are
joined into patterns by the modules that read them, and every row is tested with its example."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Form"]


@dataclass(frozen=True, slots=True)
class Form:
    """``says``: a sentence and what the form finds in it (what its table's reader returns)."""

    name: str
    words: str
    says: tuple[str, str]

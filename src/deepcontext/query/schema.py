"""MemorySchema: the section names that structure memory text, and how sections are cut out.

Sections are delimited by a header line, ``[{name}]`` by default. A section runs from its header
to the next line that is a *known* header: a section of the schema, a name given by the caller
(the keys of the state tier), or a tier's own header (``[cache:...]``, ``[notes:...]``,
``[reference]``), so a markdown link or a checkbox inside a section does not cut it short.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deepcontext.errors import ValidationError

if TYPE_CHECKING:
    from deepcontext.query.semantic import SemanticScoring
    from deepcontext.query.synonyms import SynonymMap

__all__ = ["TIER_NAMES", "MemorySchema", "UnknownSectionError"]

#: The five memory tiers, in the order ``DeepCQ.query()`` reads them.
TIER_NAMES: tuple[str, ...] = ("state", "cache", "history", "notes", "reference")

_TIER_HEADER = r"\[(?P<tier>(?:cache|notes):[^\]\n]*|reference)\]"
_ROLE_PREFIX = r"[A-Z][A-Z0-9_-]{0,31}:[ \t]+"


class UnknownSectionError(ValidationError, KeyError):
    """A section name that the schema does not declare."""

    def __init__(self, section: str) -> None:
        super().__init__(f"unknown section {section!r}", field="section")
        self.section = section

    def __str__(self) -> str:
        return str(self.args[0])


def _check_number(value: float, name: str, *, low: float = 0.0, high: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(f"{name} must be a number, got {value!r}", field=name)
    if value < low or (high is not None and value > high):
        if high is not None:
            raise ValidationError(f"{name} must be in [{low}, {high}], got {value!r}", field=name)
        what = "non-negative" if low == 0 else f">= {low}"
        raise ValidationError(f"{name} must be {what}, got {value!r}", field=name)


@dataclass
class MemorySchema:
    """Declares the logical sections of stored memory text (deepcq's ``MemorySchema``).

    sections / keywords: section names and optional extra terms per section (``{"db": ["database"]}``).
    section_header_format: how sections are delimited; ``"[{name}]"`` or e.g. ``"## {name}"``.
    confidence_threshold / free_text_threshold: minimum score of a section / of a cache entry or
        history turn (None: ``confidence_threshold``); fallback_include_all: all text when none clear it.
    anchor_patterns: literal-anchor regexes; vocabulary: a :class:`~deepcontext.query.synonyms.SynonymMap`.
    phrase_sizes / phrase_boost: stemmed query n-grams found in a section add ``phrase_boost`` each.
    tier_weights / schema_weight: weight of a match per tier and on the section's own name/keywords.
    semantic: a :class:`~deepcontext.query.semantic.SemanticScoring` (None: lexical only).
    """

    sections: Sequence[str]
    keywords: dict[str, list[str]] = field(default_factory=dict)
    section_header_format: str = "[{name}]"
    confidence_threshold: float = 0.3
    fallback_include_all: bool = True
    anchor_patterns: Sequence[re.Pattern[str]] | None = None
    vocabulary: SynonymMap | None = None
    phrase_sizes: tuple[int, ...] = ()
    phrase_boost: float = 0.25
    tier_weights: dict[str, float] | None = None
    schema_weight: float = 1.0
    free_text_threshold: float | None = None
    semantic: SemanticScoring | None = None

    def __post_init__(self) -> None:
        if isinstance(self.sections, str) or not isinstance(self.sections, Sequence):
            raise ValidationError("sections must be a list of section names", field="sections")
        names = list(self.sections)
        for i, s in enumerate(names):
            if not isinstance(s, str) or not s.strip() or "\n" in s:
                raise ValidationError(f"sections[{i}] must be a non-empty one-line string", field=f"sections[{i}]")
        folded = [s.casefold() for s in names]
        if len(set(folded)) != len(folded):
            raise ValidationError("section names must be unique (case-insensitively)", field="sections")
        if not isinstance(self.keywords, dict):
            raise ValidationError("keywords must be a dict {section: [terms]}", field="keywords")
        unknown_kw = set(self.keywords) - set(names)
        if unknown_kw:
            raise ValidationError(f"keywords for unknown section(s): {sorted(unknown_kw)}", field="keywords")
        for sec, kws in self.keywords.items():
            if isinstance(kws, str) or not all(isinstance(k, str) for k in kws):
                raise ValidationError(f"keywords[{sec!r}] must be a list of strings", field=f"keywords.{sec}")
        fmt = self.section_header_format
        if not isinstance(fmt, str) or fmt.count("{name}") != 1 or "\n" in fmt:
            raise ValidationError(
                "section_header_format must be one line containing '{name}' once", field="section_header_format"
            )
        _check_number(self.confidence_threshold, "confidence_threshold", high=1.0)
        if self.free_text_threshold is not None:
            _check_number(self.free_text_threshold, "free_text_threshold", high=1.0)
        if self.tier_weights is not None:
            unknown = set(self.tier_weights) - set(TIER_NAMES)
            if unknown:
                raise ValidationError(
                    f"unknown tier(s) in tier_weights: {sorted(unknown)}; expected {TIER_NAMES}", field="tier_weights"
                )
            for tier, w in self.tier_weights.items():
                _check_number(w, f"tier_weights.{tier}")
        _check_number(self.schema_weight, "schema_weight")
        self.phrase_sizes = tuple(self.phrase_sizes)
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in self.phrase_sizes):
            raise ValidationError(f"phrase_sizes must all be integers >= 2, got {self.phrase_sizes}", field="phrase_sizes")
        _check_number(self.phrase_boost, "phrase_boost")
        self._compiled_key: tuple[object, ...] | None = None

    # -- derived, recomputed if sections or the header format are changed after construction --
    def _compile(self) -> None:
        key = (tuple(self.sections), self.section_header_format)
        if self._compiled_key == key:
            return
        fmt = self.section_header_format
        idx = fmt.index("{name}")
        prefix, suffix = fmt[:idx], fmt[idx + len("{name}") :]
        name_re = r"(?P<name>[^\n]+?)" if suffix else r"(?P<name>[^\n]*)"
        # a header starts a line, possibly indented or after a history turn's role ("USER: [deploy] ...",
        # as History renders a turn that names a section)
        header = rf"[ \t]*(?:{_ROLE_PREFIX})?(?P<hdr>{re.escape(prefix)}{name_re}{re.escape(suffix)}|{_TIER_HEADER})"
        self._header_re = re.compile("^" + header, re.MULTILINE)
        self._header_at = re.compile(header)
        # header lines are found by str.find of their first characters (a MULTILINE regex is slow
        # over megabytes); an empty prefix falls back to the regex
        self._needles = tuple(sorted({prefix, "["})) if prefix else ()
        self._canonical = {s.casefold(): s for s in self.sections}
        known = "|".join(re.escape(fmt.format(name=s)) for s in sorted(self.sections, key=len, reverse=True))
        lookahead = rf"(?=\n[ \t]*(?:{known}|{_TIER_HEADER})|\Z)" if known else r"(?=\Z)"
        self._extraction_patterns = {
            s: re.compile(
                rf"^(?:{_ROLE_PREFIX})?{re.escape(fmt.format(name=s))}.*?{lookahead}", re.DOTALL | re.IGNORECASE | re.MULTILINE
            )
            for s in self.sections
        }
        self._id = hash(key)
        self._compiled_key = key

    def extraction_pattern(self, section: str) -> re.Pattern[str]:
        """A regex whose match is ``section``'s block: from its header at the start of a line (or
        after a history turn's role, ``USER: [name] ...``) to the next line starting with a header
        of a schema section or tier, or the end of the text.
        (``split_sections`` also accepts indented headers and names given by the caller.)"""
        self._compile()
        try:
            return self._extraction_patterns[section]
        except KeyError:
            raise UnknownSectionError(section) from None

    def schema_id(self) -> int:
        """Identifies the sections and header format (changes when either changes)."""
        self._compile()
        return self._id

    def header(self, section: str) -> str:
        """The header line of ``section``."""
        return self.section_header_format.format(name=section)

    def _header_lines(self, text: str) -> list[re.Match[str]]:
        """Every line of ``text`` that looks like a header (known or not), in order."""
        if not self._needles:
            return list(self._header_re.finditer(text))
        found: dict[int, re.Match[str]] = {}
        for needle in self._needles:
            p = text.find(needle)
            while p != -1:
                line = text.rfind("\n", 0, p) + 1
                if line not in found:
                    m = self._header_at.match(text, line)
                    if m is not None and m.start("hdr") == p:
                        found[line] = m
                p = text.find(needle, p + 1)
        return [found[k] for k in sorted(found)]

    def split_sections(
        self, text: str, extra_names: Iterable[str] = (), default_section: str | None = None
    ) -> dict[str, list[str]]:
        """The blocks of each schema section found in ``text``, in order.

        A block starts at a header line of a schema section and ends before the next line that
        is a known header (a schema section, one of ``extra_names``, a tier header) or at the end.
        Text before the first known header belongs to ``default_section`` when given (a state
        entry stored under a section's name without its header line).
        """
        self._compile()
        known_extra = {n.casefold() for n in extra_names}
        out: dict[str, list[str]] = {}
        open_name = self._canonical.get(default_section.casefold()) if default_section else None
        open_start = 0
        for m in self._header_lines(text):
            if m.group("tier") is not None:
                canonical, is_boundary = None, True
            else:
                name = m.group("name").strip().casefold()
                canonical = self._canonical.get(name)
                is_boundary = (
                    canonical is not None or name in known_extra or name.startswith(("cache:", "notes:")) or name == "reference"
                )
            if not is_boundary:
                continue
            start = m.start("hdr")
            if open_name is not None:
                block = text[open_start:start].strip()
                if block:
                    out.setdefault(open_name, []).append(block)
            open_name, open_start = canonical, start
        if open_name is not None:
            block = text[open_start:].strip()
            if block:
                out.setdefault(open_name, []).append(block)
        return out

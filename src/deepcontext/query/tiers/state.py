"""T1 AppState: the live state of the application, one text per section."""

from __future__ import annotations

from deepcontext.query.tiers.backend import TierBackend
from deepcontext.query.tiers.tier import Tier, check_text, seq_of

__all__ = ["AppState"]


class AppState(Tier):
    """Sections of live state, each stored as raw text that normally includes its header::

        state.set("errors", "[errors]\\n- OOM at 02:15\\n")

    (An entry stored under a schema section's name without a header line is still that
    section's text.) Backend values: ``{"text": str, "seq": int}`` (``seq`` keeps the order).
    """

    NAMESPACE = "state"

    def __init__(self, backend: TierBackend | None = None, namespace: str | None = None) -> None:
        super().__init__(backend, namespace)
        self._sections: dict[str, str] = {}
        self._seq: dict[str, int] = {}
        stored = self._backend.list(self._namespace)
        for key, value in sorted(stored.items(), key=lambda kv: seq_of(kv[1])):
            if isinstance(value, dict) and isinstance(value.get("text"), str):
                self._sections[key] = value["text"]
                self._seq[key] = seq_of(value)

    def set(self, section: str, text: str) -> None:
        """Create or replace a section's text."""
        check_text(section, "section")
        check_text(text, "text")
        with self._lock:
            seq = self._seq.get(section)
            if seq is None:
                seq = max(self._seq.values(), default=0) + 1
            self._backend.put(self._namespace, section, {"text": text, "seq": seq})
            self._sections[section] = text
            self._seq[section] = seq
            self._bump()

    def get(self, section: str) -> str:
        """The section's text, ``""`` when absent."""
        return self._sections.get(section, "")

    def remove(self, section: str) -> None:
        """Drop a section (absent sections are ignored)."""
        with self._lock:
            if section in self._sections:
                self._backend.delete(self._namespace, section)
                self._sections.pop(section, None)
                self._seq.pop(section, None)
            self._bump()

    def sections(self) -> list[str]:
        return list(self._sections)

    def entries(self) -> list[tuple[str, str]]:
        return list(self._sections.items())

    def as_text(self) -> str:
        return "\n".join(self._sections.values())

    def as_dict(self) -> dict[str, str]:
        return dict(self._sections)

    def clear(self) -> None:
        with self._lock:
            for key in list(self._sections):
                self._backend.delete(self._namespace, key)
            self._sections.clear()
            self._seq.clear()
            self._bump()

"""Framework adapters that import no framework (deepcq's ``integrations.ternary``).

- :class:`ToolContextProvider`: a query's filtered memory as a string for a prompt or tool call.
- :class:`LangChainMemoryAdapter`: duck-types LangChain's chat memory (``save_context`` /
  ``load_memory_variables`` / ``clear``) over a DeepCQ's history tier.
- :class:`PromptLibrary`: prompt templates from *local* CSV files, retrievable by intent. Remote
  loading is disabled: nothing here touches the network.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from deepcontext.errors import StorageError, ValidationError
from deepcontext.query.core import DeepCQ
from deepcontext.query.result import QueryResult
from deepcontext.query.schema import MemorySchema

__all__ = ["DEFAULT_SECTIONS", "LangChainMemoryAdapter", "PromptLibrary", "ToolContextProvider"]

#: deepcq's prompt sections (the CSV files of the ternary-ai/prompts collection)
DEFAULT_SECTIONS: tuple[str, ...] = (
    "agents",
    "analysis",
    "concepts",
    "content",
    "journal",
    "knowledgegraphs",
    "named-entities",
    "portfolio",
    "research",
    "risk-management",
    "scenario-analysis",
    "summarization",
    "trading",
)

_REMOTE_DISABLED = (
    "remote loading is disabled in deepcontext (it never downloads at run time): "
    "download the CSV files yourself and use PromptLibrary.from_local(directory) or from_files(...)"
)


def _is_url(value: object) -> bool:
    return isinstance(value, str) and "://" in value


class ToolContextProvider:
    """Formats DeepCQ results as context strings to inject into a prompt or tool schema."""

    def __init__(self, cq: DeepCQ) -> None:
        if not isinstance(cq, DeepCQ):
            raise ValidationError("ToolContextProvider needs a DeepCQ", field="cq")
        self._cq = cq

    def get_context(self, query: str) -> str:
        """Memory content relevant to ``query``."""
        return self._cq.query(query).content

    def get_prompt_template(self, query: str, library: PromptLibrary) -> str:
        """The best-matching prompt template(s) of ``library``, ``{placeholders}`` intact."""
        return library.query(query).content

    def get_context_with_template(self, query: str, library: PromptLibrary) -> tuple[str, str]:
        """``(memory context, prompt template)`` for one query."""
        return self.get_context(query), self.get_prompt_template(query, library)


class _Messages:
    def __init__(self, messages: list[dict[str, str]]) -> None:
        self.messages = messages


class LangChainMemoryAdapter:
    """Makes a DeepCQ usable where LangChain expects chat memory, without importing LangChain.

    Turns go to the history tier; ``load_memory_variables`` returns the memory filtered by the
    incoming message (the whole history when there is no message).
    """

    memory_key: str = "history"

    def __init__(self, cq: DeepCQ, *, memory_key: str | None = None) -> None:
        if not isinstance(cq, DeepCQ):
            raise ValidationError("LangChainMemoryAdapter needs a DeepCQ", field="cq")
        self._cq = cq
        if memory_key is not None:
            self.memory_key = memory_key

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    @staticmethod
    def _text(values: Mapping[str, Any], *keys: str) -> str:
        if not isinstance(values, Mapping):
            raise ValidationError("expected a dict of chain values", field="inputs")
        for k in keys:
            v = values.get(k)
            if v:
                return str(v)
        return ""

    def save_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        """Store one exchange (human input, AI output) in the history tier."""
        human = self._text(inputs, "input", "human_input", "question")
        ai = self._text(outputs, "output", "response", "answer")
        if human:
            self._cq.history.add("human", human)
        if ai:
            self._cq.history.add("ai", ai)

    def load_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, str]:
        """``{memory_key: context relevant to the incoming message}``."""
        query = self._text(inputs, "input", "human_input", "question")
        content = self._cq.query(query).content if query else self._cq.history.as_text()
        return {self.memory_key: content}

    def clear(self) -> None:
        """Reset the history and session cache tiers."""
        self._cq.history.clear()
        self._cq.cache.clear()

    @property
    def chat_memory(self) -> _Messages:
        """An object with ``messages`` (``[{"role", "content"}]``), as LangChain reads it."""
        return _Messages([{"role": t.role, "content": t.text} for t in self._cq.history.turns()])

    @property
    def output_key(self) -> str:
        return "output"

    @property
    def input_key(self) -> str:
        return "input"


class PromptLibrary:
    """Prompt templates loaded from local CSV files, one section per file, queried by intent.

    Each CSV row is one prompt (its cells joined by spaces); templates keep their
    ``{variable}`` placeholders.
    """

    #: the file names ``from_local`` looks for by default, besides any other ``*.csv``
    SECTIONS: tuple[str, ...] = DEFAULT_SECTIONS

    def __init__(self) -> None:
        self._sections: list[str] = []  # only loaded sections take part in scoring
        self._cq = DeepCQ(schema=self._schema())
        self._loaded: set[str] = set()

    def _schema(self) -> MemorySchema:
        return MemorySchema(
            sections=list(self._sections),
            confidence_threshold=0.25,  # broader recall for prompt retrieval
            fallback_include_all=False,  # a vague query returns nothing rather than every prompt
        )

    def load_section(self, section: str, rows: Iterable[str]) -> None:
        """Store prompts under ``section`` (added to the schema if new)."""
        if not isinstance(section, str) or not section.strip() or "\n" in section:
            raise ValidationError("section must be a one-line name", field="section")
        lines = [r.strip() for r in rows if isinstance(r, str) and r.strip()]
        if not lines:
            return
        if section not in self._sections:
            self._sections.append(section)
            self._cq.schema = self._schema()
        body = "\n".join(lines)
        self._cq.state.set(section, f"[{section}]\n{body}\n")
        self._loaded.add(section)

    def load_text(self, section: str, raw: str) -> None:
        """Parse CSV text (one prompt per row) into ``section``."""
        prompts = [" ".join(row).strip() for row in csv.reader(io.StringIO(raw))]
        self.load_section(section, [p for p in prompts if p])

    @classmethod
    def from_local(cls, directory: str | Path, sections: Iterable[str] | None = None) -> PromptLibrary:
        """Load ``directory/<section>.csv`` for each section (default: every ``*.csv`` there,
        deepcq's known sections first)."""
        if _is_url(directory):
            raise ValidationError(_REMOTE_DISABLED, field="directory")
        base = Path(directory)
        if not base.is_dir():
            raise ValidationError(f"{base} is not a directory", field="directory")
        if sections is not None:
            names = list(sections)
        else:
            found = {p.stem for p in base.glob("*.csv")}
            names = [s for s in cls.SECTIONS if s in found] + sorted(found - set(cls.SECTIONS))
        lib = cls()
        for name in names:
            path = base / f"{name}.csv"
            if path.is_file():
                lib.load_text(name, _read(path))
        return lib

    @classmethod
    def from_files(cls, files: Mapping[str, str | Path]) -> PromptLibrary:
        """Load ``{section: path to a local CSV file}``."""
        lib = cls()
        for section, path in files.items():
            if _is_url(path):
                raise ValidationError(_REMOTE_DISABLED, field=f"files.{section}")
            lib.load_text(section, _read(Path(path)))
        return lib

    @classmethod
    def from_urls(cls, url_map: Mapping[str, str] | None = None, timeout: int = 10) -> PromptLibrary:
        """Not available: deepcontext does not download at run time."""
        raise ValidationError(_REMOTE_DISABLED, field="url_map")

    def query(self, text: str) -> QueryResult:
        """The prompt templates most relevant to ``text``."""
        return self._cq.query(text)

    def loaded_sections(self) -> list[str]:
        return sorted(self._loaded)

    def __repr__(self) -> str:
        return f"PromptLibrary(loaded={self.loaded_sections()})"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"{path} does not exist", field="path") from None
    except OSError as exc:
        raise StorageError(f"could not read {path}: {exc}") from exc

"""The code examples of the README and the docs site, read from the Markdown.

A fenced block is an example when its language is ``python`` or ``bash`` (``sh``, ``shell``,
``console`` count as bash). A marker comment on the line directly above the fence changes how it
runs::

    <!-- test: skip (why) -->   not run; the reason is required
    <!-- test: continue -->     same namespace / data directory as the page's previous block of that language
    <!-- test: llm -->          with a fake OpenAI-compatible server (DEEPCONTEXT_LLM_BASE_URL)
    <!-- test: server -->       with a REST server; http://localhost:8000 is rewritten to it
    <!-- test: postgres -->     with a fresh PostgreSQL database; postgresql://localhost/deepcontext is rewritten to it

Markers combine: ``<!-- test: continue llm -->``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash", "console": "bash"}
FLAGS = {"skip", "continue", "llm", "server", "postgres"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*test:\s*(?P<body>.*?)\s*-->\s*$")
#: what the examples write, replaced by the test's own addresses
SERVER_URLS = ("http://localhost:8000", "http://127.0.0.1:8000")
PG_URL = "postgresql://localhost/deepcontext"


class MarkerError(ValueError):
    pass


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "python" or "bash", or the info string's first word for other blocks
    code: str
    flags: set[str] = field(default_factory=set)
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@dataclass
class Example:
    """Blocks run together: one, or several joined by ``continue``."""

    blocks: list[Block]

    @property
    def lang(self) -> str:
        return self.blocks[0].lang

    @property
    def flags(self) -> set[str]:
        return set().union(*(b.flags for b in self.blocks)) - {"continue"}

    @property
    def where(self) -> str:
        return self.blocks[0].where


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the marker above it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        word = (m["info"].strip().split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and lines[j].strip().strip(fence[0]) == ""):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        block = Block(path, i + 1, LANGS.get(word, word), "\n".join(body) + "\n")
        if i > 0 and (mk := MARKER.match(lines[i - 1])):
            _read_marker(block, mk["body"])
        out.append(block)
        i = j + 1
    return out


def _read_marker(block: Block, body: str) -> None:
    words = body.split("(", 1)
    flags = set(words[0].split())
    unknown = flags - FLAGS
    if unknown:
        raise MarkerError(f"{block.where}: unknown test marker {sorted(unknown)} (known: {sorted(FLAGS)})")
    if "skip" in flags:
        reason = words[1].rstrip(")").strip() if len(words) > 1 else ""
        if not reason:
            raise MarkerError(f"{block.where}: `test: skip` needs a reason in parentheses")
        block.reason = reason
    block.flags = flags


def examples(path: Path) -> list[Example]:
    """The runnable examples of one file, ``continue`` blocks joined to the one before."""
    out: list[Example] = []
    last: dict[str, Example] = {}
    for b in blocks(path):
        if b.lang not in ("python", "bash") or "skip" in b.flags:
            continue
        if "continue" in b.flags:
            if b.lang not in last:
                raise MarkerError(f"{b.where}: `test: continue` with no earlier {b.lang} block on the page")
            last[b.lang].blocks.append(b)
            continue
        ex = Example([b])
        out.append(ex)
        last[b.lang] = ex
    return out


def commands(code: str, *, server: bool) -> list[str]:
    """The lines of a bash block that run: ``deepcontext ...`` (also after a pipe), ``export``,
    ``curl`` in a server block, and a ``cat > FILE <<EOF`` here-document with its body."""
    lines = code.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.rstrip().endswith("\\") and i + 1 < len(lines):  # continued lines
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i].strip()
        stripped = line.strip()
        heredoc = re.match(r"^cat\s+>\s*\S+\s+<<-?\s*['\"]?(\w+)['\"]?\s*$", stripped)
        if heredoc:
            end = heredoc.group(1)
            body = [stripped]
            while i + 1 < len(lines):
                i += 1
                body.append(lines[i])
                if lines[i].strip() == end:
                    break
            out.append("\n".join(body))
        elif (
            re.match(r"^deepcontext(\s|$)", stripped)
            or re.search(r"\|\s*deepcontext\s", stripped)
            or stripped.startswith("export ")
            or (server and stripped.startswith("curl "))
        ):
            out.append(stripped)
        i += 1
    return out


def all_examples() -> list[Example]:
    return [ex for path in markdown_files() for ex in examples(path)]

"""Sentence splitting and light cleaning for the rule-based extractor.

``split_sentences`` keeps abbreviations ("Dr. Lee", "e.g. Python", "Acme Corp. is"), initials, decimals
("3.5"), versions ("v2.0"), URLs and e-mail addresses intact; it splits on ``. ! ? …`` followed by
space, on the Chinese and Japanese full stops (。！？) and on line breaks. List items ("- ", "* ", "1. ",
"Step 2:") are reported as such, without their marker. Fenced code blocks are dropped: code is not a
memory (the verbatim turn keeps it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcontext.language.gazetteer import words

__all__ = ["URL_RE", "Sentence", "clean_text", "is_foreign", "split_sentences"]


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    list_item: bool = False  # came from a bullet or numbered line


_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "\u00a0": " ", "\u2009": " ", "\u200b": ""})
_EMPHASIS_RE = re.compile(r"\*\*|__|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")
_SPACES_RE = re.compile(r"[ \t\r\f\v]+")
_BULLET_RE = re.compile(r"^\s*(?:[-*•·‣◦>]+|\d{1,2}[.)]|[a-z][.)]|step\s+\d+\s*[:.)-]|#{1,6})\s+", re.IGNORECASE)
_BOUNDARY_RE = re.compile(r"(?:\.{3}|…|[.!?]+)[\"')\]]*(?=\s)|[。！？]+[\"”』」)]*")
_ABBREV_NEVER = words(
    """mr mrs ms dr prof st mt vs e.g eg i.e ie cf approx dept est fig jr sr sgt capt col gen lt rev hon
    ft ave blvd rd apt ca gov pres mx messrs"""
)
_ABBREV_MAYBE = words("inc ltd corp co etc a.m p.m am pm llc jan feb mar apr jun jul aug sep sept oct nov dec")
_LASTWORD_RE = re.compile(r"([\w.&'-]+)$")
_NEXTWORD_RE = re.compile(r"\s*[\"'(\[]*(\S)")
URL_RE = re.compile(r"(?:https?://|www\.)\S*[^\s.,!?;:)\]'\"]|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)


def clean_text(text: str) -> str:
    """Normalise quotes and spaces, drop fenced code and markdown emphasis; keep line breaks."""
    if "```" in text:
        text = _FENCE_RE.sub("\n", text)
    text = text.translate(_QUOTES)
    if "*" in text or "__" in text:
        text = _EMPHASIS_RE.sub("", text)
    return _SPACES_RE.sub(" ", text)


def _split_line(line: str, out: list[str]) -> None:
    start = 0
    # URLs and e-mails never contain a boundary: remember their spans
    protected = (
        [m.span() for m in URL_RE.finditer(line)] if ("." in line and ("/" in line or "@" in line or "www" in line)) else []
    )
    for m in _BOUNDARY_RE.finditer(line):
        punct_end = m.end()
        if protected and any(a <= m.start() < b for a, b in protected):
            continue
        punct = m.group(0)
        if punct == ".":
            w = _LASTWORD_RE.search(line, start, m.start())
            word = w.group(1).lower() if w else ""
            if word:
                nxt = _NEXTWORD_RE.match(line, punct_end)
                nchar = nxt.group(1) if nxt else ""
                if word in _ABBREV_NEVER or (len(word) == 1 and word.isalpha() and w and w.group(1).isupper()):
                    continue  # "Dr. Lee", "J. K. Rowling"
                if word in _ABBREV_MAYBE and not nchar[:1].isupper():
                    continue  # "Acme Corp. is hiring", "at 9 a.m. tomorrow"
                if word == "no" and nchar[:1].isdigit():
                    continue  # "No. 5"
                if "." in word and len(word) <= 5 and not nchar[:1].isupper():
                    continue  # "u.s. market"
        elif punct in ("...", "…"):
            nxt = _NEXTWORD_RE.match(line, punct_end)
            if nxt and not nxt.group(1).isupper():
                continue  # "I was like... whatever"
        piece = line[start:punct_end].strip()
        if piece:
            out.append(piece)
        start = punct_end
    rest = line[start:].strip()
    if rest:
        out.append(rest)


def split_sentences(text: str) -> list[Sentence]:
    """Split cleaned message text into sentences."""
    out: list[Sentence] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        list_item = False
        b = _BULLET_RE.match(line)
        if b:
            list_item = not b.group(0).strip().startswith("#") and not b.group(0).strip().startswith(">")
            line = line[b.end() :].strip()
        pieces: list[str] = []
        _split_line(line, pieces)
        out.extend(Sentence(p, list_item) for p in pieces)
    return out


_ENGLISH = words(
    """the a an i is are was were to of and in my me you it for on with that this have has had be at we he she
    they not but so do did does just like your our their will would can could what when where who how there
    from about been am i'm it's don't i've i'll went going get got really very then up out all if or as by
    into over after before also your any one two"""
)
_FOREIGN = words(
    """de la el los las y que en un una es por con para del al lo le les des et est je tu il nous vous une du
    au aux ce cette sont pas ich und der die das ist nicht ein eine mit zu von auf für den dem wir sie bin
    habe ja di che è per non sono ho della il gli nel um uma não com os se na no eu muito sua seu ela ele
    mi mio mia te ti su pero muy yo tengo soy estoy mais avec dans pour sur ou qui je j'ai c'est bei auch
    aber oder wie sehr zum zur im ik het een niet van jag och att det är en har inte me gusta encanta
    trabajo vivo hablo quiero tiene hay aime suis habite travaille wohne arbeite heiße mag liebe lavoro chiamo
    moi toi nos vos também você"""
)
_LATIN_RE = re.compile(r"[A-Za-z]{3}")
_FWORD_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def is_foreign(text: str) -> bool:
    """True when a Latin-script sentence is more likely not English (more foreign function words)."""
    words = _FWORD_RE.findall(text.lower())
    if len(words) < 3:
        return False
    en = sum(1 for w in words if w in _ENGLISH)
    fo = sum(1 for w in words if w in _FOREIGN)
    if fo > en:
        return True
    # no function word of either kind: only a non-Latin script (Cyrillic, Greek, Arabic...) is foreign
    return en == 0 and fo == 0 and len(words) >= 3 and not text.isascii() and not _LATIN_RE.search(text)

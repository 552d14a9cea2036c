"""Every prompt deepcontext sends to an LLM, in one place, in English.

Each task keeps the language of the conversation: facts extracted from a Chinese conversation are
written in Chinese, summaries of a French conversation in French. The render functions only format;
the callers validate what comes back.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

__all__ = [
    "CLASSIFY_SYSTEM",
    "EXTRACT_SYSTEM",
    "JSON_INSTRUCTIONS",
    "LANGUAGE_RULE",
    "MERGE_SYSTEM",
    "PLAN_SYSTEM",
    "REPAIR",
    "SUMMARY_SYSTEM",
    "format_time",
    "json_instructions",
    "repair_message",
]

LANGUAGE_RULE = (
    "Keep the language of the conversation: write every text in the language the messages are written in "
    "(a conversation in Chinese gives facts in Chinese, one in Spanish gives facts in Spanish). Never translate. "
    "Names stay as they were written."
)

JSON_INSTRUCTIONS = (
    "Answer with one JSON object and nothing else: no prose, no markdown fences, no reasoning before or after it. "
    "It must validate against this JSON Schema:\n{schema}"
)

REPAIR = (
    "Your previous answer could not be used: {error}\n"
    "Reply again with only the corrected JSON object (no prose, no markdown), valid against the schema given above."
)


def json_instructions(schema: dict[str, Any]) -> str:
    """The instruction appended to the system prompt of every JSON call."""
    return JSON_INSTRUCTIONS.format(schema=json.dumps(schema, ensure_ascii=False, separators=(",", ":")))


def repair_message(error: str) -> str:
    """The user message of the single repair attempt."""
    return REPAIR.format(error=error)


def format_time(when: datetime | None) -> str:
    """A time as the prompts show it: ``2024-05-03 14:00 UTC, Friday``."""
    if when is None:
        return "unknown time"
    offset = when.utcoffset()
    zone = "UTC" if offset is not None and not offset else when.strftime("%z") or "UTC"
    return f"{when:%Y-%m-%d %H:%M} {zone}, {when:%A}"


# --- extraction -------------------------------------------------------------------------------------

EXTRACT_SYSTEM = """You extract memories from a conversation for the long-term memory of an AI assistant.

Return three lists.

facts: each one short, self-contained statement that is understandable without the conversation \
(write names instead of "he", "she", "I"; call the user by their name when it is known, else "User").
- type "semantic": a lasting fact, preference, relationship or plan ("Ana works at Acme", "Ana is vegetarian").
- type "episodic": an event tied to a time ("Ana moved to Lisbon on 2024-05-03").
- type "procedural": how to do something, steps or instructions ("To deploy the app, run make release").
- importance 0..1: how useful it is to remember for future conversations (a name, job, family or health fact is \
high; a passing remark is low).
- confidence 0..1: how certain it is from what was said (hedged, joking or second-hand statements are lower).
- entities: the names of the entities the fact is about.
- source_indices: the numbers [n] of the messages the fact comes from. Cite only numbered messages; the \
earlier messages shown as context cannot be cited.
- occurred_at: for episodic facts, when the event happened or will happen, as YYYY-MM-DD (or a full ISO 8601 \
time when the time of day is stated). Resolve relative dates ("yesterday", "last Friday", "next month") against \
the time the citing message was said, shown in its header. Use null when no time can be worked out. A \
recurring time ("on Thursday nights", "every Tuesday", "on weekends") is a habit, not a date: keep it in the \
text as said, with occurred_at null.

entities: people, organizations, locations, products, technologies, events, concepts and preferences that the \
facts mention, each with a type (person, organization, location, product, technology, date, event, concept, \
preference, other) and source_indices.

relations: links between two entities: source, relation (a snake_case verb phrase: works_at, lives_in, likes, \
married_to, has_child, uses, ...), target, and source_indices.

Rules:
- Only what the messages state or clearly imply. No guesses, no general world knowledge, nothing about the \
assistant's own abilities. Skip greetings, thanks and questions that carry no information.
- What the assistant says counts only when the user confirms or accepts it.
- Prefer several short facts over one long one. Keep numbers, names, dates and places exactly.
- One fact per thing that can change on its own: "I live in Leeds and teach maths at Parkside" is two facts \
("Ana lives in Leeds", "Ana teaches maths at Parkside"), so a later move leaves the job alone.
- Every fact starts with whom it is about: the user (by name, else "User") or the other person as the user \
named them ("Ana's brother Tom", "Ana's friend Pavel"). What happened to someone else is theirs: "My brother got \
a flat in Dublin" is "Ana's brother got a flat in Dublin", never a fact about where Ana lives.
- A change said as an event stays a change: "I traded the Golf in for a Kia" is "Ana traded her VW Golf in for a \
Kia", naming what ended and what began.
- {language_rule}
- If nothing is worth remembering, return empty lists.""".replace("{language_rule}", LANGUAGE_RULE)


# --- classification ----------------------------------------------------------------------------------

CLASSIFY_SYSTEM = """You maintain the memory of an AI assistant about one user. For each new candidate fact you \
are shown the most similar memories already stored (id, text, similarity, when it was said). Decide one action \
per candidate:

- ADD: new information that none of the memories shown covers.
- UPDATE: the candidate refines or adds detail to one memory shown and both stay true together ("likes pizza" + \
"especially margherita"). Give that memory_id and, in text, the combined new version keeping every detail of both.
- REPLACE: the candidate contradicts one memory shown, which is no longer true ("lives in Paris" then "moved to \
Berlin"). Give that memory_id; text is the candidate's text (reworded only if needed to stand alone). When the \
candidate is a change said as an event that names what took the memory's place ("Ana left Starling and joined \
Wise" against "Ana works at Starling"), text says what holds now in the memory's own words ("Ana works at \
Wise"): the event's wording stays in the conversation.
- DELETE: the candidate says that one memory shown is no longer true, without a new value ("no longer has a \
car"). Give that memory_id.
- NOOP: the candidate says the same as one memory shown. Give that memory_id.

memory_id must be an id from the list shown for that same candidate; never an id from another candidate's list, \
never an invented one. For ADD, memory_id is null.
Old versions are kept in the history, nothing is lost: prefer REPLACE over DELETE when the new value is known, \
and ADD when unsure. Return exactly one decision per candidate, with its candidate number and a short reason.
{language_rule}""".replace("{language_rule}", LANGUAGE_RULE)


# --- summaries ----------------------------------------------------------------------------------------

SUMMARY_SYSTEM = """You keep the running summary of a conversation for an AI assistant's memory.

Write an updated summary that merges the previous summary (if any) with the new messages: who takes part, \
what was discussed and decided, facts learned about the user, open questions and commitments, with their dates. \
Keep names, numbers and dates exactly. Drop small talk. At most {max_words} words.
{language_rule}
Reply with the summary text only: no title, no preamble, no markdown.""".replace("{language_rule}", LANGUAGE_RULE)


# --- consolidation ------------------------------------------------------------------------------------

MERGE_SYSTEM = """You consolidate the memories an AI assistant keeps about one user.

Merge the numbered memories into as few self-contained facts as possible without losing any detail (names, \
numbers, dates, places, conditions). Each output fact lists in sources the numbers of the memories it covers.
- Memories that repeat or refine each other become one fact.
- Group by what the memories are about (one person, one project, one place, one habit). Never put unrelated \
events into one fact: a trip to Madrid and a trip to Porto are two facts.
- Write each fact as one concise sentence, or a short list for one subject ("Maya works at Acme; lives in \
Lisbon; likes green tea."), at most 300 characters. Keep every date as the memories give it; name people \
and things instead of using pronouns.
- Memories that contradict each other are NOT merged: keep each one as its own fact citing its own number. \
Never invent a compromise or an average between them.
- Do not add anything that the memories do not say.
- Every input number must appear in the sources of at least one output fact.
{language_rule}""".replace("{language_rule}", LANGUAGE_RULE)


# --- dialogue planning ----------------------------------------------------------------------------

PLAN_SYSTEM = """You plan the context of the next answer in a conversation kept as a graph of rounds. Each \
round is a node with an integer id; a summary node stands for older rounds that were compressed.

You see the new user message, the nodes it continues from (anchors), how long the current chain is against \
the context budget, a few candidate nodes picked by relevance and recency, and some key memories.

Decide:
- selected_node_ids: nodes whose history the answer needs. Always include the anchors; add another candidate \
only when the message refers back to it.
- nodes_to_pack: nodes whose older history should be compressed into a summary: usually the first anchor, and \
only when the chain is longer than the budget. Otherwise an empty list.
- memories_to_extract: facts worth keeping for the rest of the conversation (formulas, definitions, decisions, \
preferences, names, things the user asks to remember), each with content, tags, pinned (needed in every later \
answer), packable (false: its source nodes must never be compressed) and source_node_ids (the nodes it comes \
from; empty when it comes from the new message). Do not repeat the key memories shown.
- memory_queries: a few short keywords to look up key memories for this message.
- reasoning: one short sentence.

Use only node ids shown in the lists, written as integers. {language_rule}""".replace("{language_rule}", LANGUAGE_RULE)

"""Metadata filters on a memory's top-level metadata keys, parsed from JSON and compiled into the
SQL of either backend. The accepted form (mem0's, which it extends)::

    {"team": "red"}                           equality (several keys: all must hold)
    {"priority": {"gte": 5, "lt": 9}}         operators: eq ne in nin gt gte lt lte contains icontains
    {"category": "*"}                         the key is present, whatever its value
    {"AND": [...]}, {"OR": [...]}, {"NOT": [...]}   (NOT: none of the conditions holds)

Keys are bound parameters, so any string is a key. ``ne``/``nin`` pass a memory without the key.
Comparisons are typed (numbers numerically, strings by code point); ``contains`` matches a
substring or a list element, ``icontains`` ignoring case (ASCII on SQLite).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Numeric, String, and_, bindparam, case, cast, exists, func, literal, not_, or_, select, true
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement

from deepcontext.errors import ValidationError

__all__ = ["OPERATORS", "AllOf", "AnyOf", "Cond", "MetaFilter", "NotOf", "compile_filter", "parse_metadata_filter"]

#: operators a condition may use ("exists" is written "*")
OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")
_LOGIC = ("AND", "OR", "NOT")
_MAX_DEPTH = 10
_MAX_CONDITIONS = 200
_MAX_LIST = 500
_MAX_KEY = 255
_MAX_STRING = 4096
_INT64 = 2**63


@dataclass(frozen=True, slots=True)
class Cond:
    """``key`` compared by ``op`` (eq, in, gt, gte, lt, lte, contains, icontains, exists)."""

    key: str
    op: str
    value: Any = None  # a scalar; a tuple of scalars for "in"; None for "exists"


@dataclass(frozen=True, slots=True)
class AllOf:
    items: tuple[MetaFilter, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    items: tuple[MetaFilter, ...]


@dataclass(frozen=True, slots=True)
class NotOf:
    item: MetaFilter


MetaFilter = Cond | AllOf | AnyOf | NotOf


# --- parsing ----------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, field: str) -> None:
        self.field = field
        self.count = 0

    def fail(self, message: str, where: str) -> ValidationError:
        return ValidationError(f"{where}: {message}", field=where)

    def node(self, obj: Any, where: str, depth: int) -> MetaFilter:
        if depth > _MAX_DEPTH:
            raise self.fail(f"nested more than {_MAX_DEPTH} levels", where)
        if not isinstance(obj, Mapping):
            raise self.fail("a filter must be an object of key: condition", where)
        parts: list[MetaFilter] = []
        for key, cond in obj.items():
            if not isinstance(key, str):
                raise self.fail("keys must be strings", where)
            if key in _LOGIC:
                parts.append(self.logic(key, cond, f"{where}.{key}", depth))
            else:
                parts.append(self.condition(key, cond, f"{where}.{key}" if len(key) < 64 else where))
        if not parts:
            raise self.fail("an empty filter", where)
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def logic(self, op: str, items: Any, where: str, depth: int) -> MetaFilter:
        if isinstance(items, Mapping):
            items = [items]
        if not isinstance(items, (list, tuple)) or not items:
            raise self.fail(f"{op} takes a non-empty list of filters", where)
        nodes = tuple(self.node(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(items))
        if op == "AND":
            return nodes[0] if len(nodes) == 1 else AllOf(nodes)
        either = nodes[0] if len(nodes) == 1 else AnyOf(nodes)
        return either if op == "OR" else NotOf(either)

    def key(self, key: str, where: str) -> str:
        if not key or len(key) > _MAX_KEY:
            raise self.fail(f"a metadata key must have 1 to {_MAX_KEY} characters", where)
        _encodable(key, where)
        return key

    def condition(self, key: str, cond: Any, where: str) -> MetaFilter:
        key = self.key(key, where)
        self.count += 1
        if self.count > _MAX_CONDITIONS:
            raise self.fail(f"more than {_MAX_CONDITIONS} conditions", where)
        if isinstance(cond, str) and cond == "*":
            return Cond(key, "exists")
        if not isinstance(cond, Mapping):
            return Cond(key, "eq", self.scalar(cond, where))
        if not cond:
            raise self.fail("an empty set of operators", where)
        parts: list[MetaFilter] = []
        for op, value in cond.items():
            if op not in OPERATORS:
                raise self.fail(f"unknown operator {op!r}; use one of {', '.join(OPERATORS)}", where)
            at = f"{where}.{op}"
            if op in ("in", "nin"):
                if not isinstance(value, (list, tuple)) or not value or len(value) > _MAX_LIST:
                    raise self.fail(f"{op} takes a list of 1 to {_MAX_LIST} values", at)
                node: MetaFilter = Cond(key, "in", tuple(dict.fromkeys(self.scalar(v, at) for v in value)))
            elif op in ("gt", "gte", "lt", "lte"):
                v = self.scalar(value, at)
                if isinstance(v, bool):
                    raise self.fail(f"{op} compares numbers or strings, not booleans", at)
                node = Cond(key, op, v)
            elif op == "icontains":
                if not isinstance(value, str):
                    raise self.fail("icontains takes a string", at)
                node = Cond(key, op, self.scalar(value, at))
            else:  # eq, ne, contains
                node = Cond(key, "eq" if op == "ne" else op, self.scalar(value, at))
            parts.append(NotOf(node) if op in ("ne", "nin") else node)
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def scalar(self, value: Any, where: str) -> str | int | float | bool:
        if isinstance(value, str):
            if len(value) > _MAX_STRING:
                raise self.fail(f"strings in filters are limited to {_MAX_STRING} characters", where)
            _encodable(value, where)
            return value
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if not -_INT64 <= value < _INT64:
                raise self.fail("integers must fit in 64 bits", where)
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail("numbers must be finite", where)
            return value
        raise self.fail(f"filter values must be strings, numbers or booleans, got {type(value).__name__}", where)


def _encodable(value: str, where: str) -> None:
    if "\x00" in value:
        raise ValidationError(f"{where}: contains a NUL character", field=where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{where}: not valid Unicode (lone surrogate)", field=where) from None


def parse_metadata_filter(obj: Any, field: str = "metadata") -> MetaFilter | None:
    """The filter tree of a JSON filter (None for an empty one). Raises ValidationError."""
    if obj is None or (isinstance(obj, Mapping) and not obj):
        return None
    return _Parser(field).node(obj, field, 0)


# --- SQL ---------------------------------------------------------------------------------------------
def compile_filter(node: MetaFilter, column: Any, dialect: str) -> ColumnElement[bool]:
    """``node`` as a boolean SQL expression over the JSON ``column`` (sqlite or postgresql)."""
    if isinstance(node, AllOf):
        return and_(*(compile_filter(n, column, dialect) for n in node.items))
    if isinstance(node, AnyOf):
        return or_(*(compile_filter(n, column, dialect) for n in node.items))
    if isinstance(node, NotOf):
        return not_(compile_filter(node.item, column, dialect))
    return _pg_cond(node, column) if dialect == "postgresql" else _sqlite_cond(node, column)


def _kind(value: Any) -> str:
    return "bool" if isinstance(value, bool) else "str" if isinstance(value, str) else "num"


def _sqlite_cond(c: Cond, column: Any) -> ColumnElement[bool]:
    # the object's members as rows (key, value, type) of json_each: the key is compared as a value
    je = func.json_each(column).table_valued("key", "value", "type").alias("je")
    val, typ = je.c.value, je.c.type

    def typed(v: Any) -> ColumnElement[bool]:
        k = _kind(v)
        if k == "bool":
            return typ == ("true" if v else "false")
        if k == "str":
            return and_(typ == "text", val == bindparam(None, v, type_=String))
        return and_(typ.in_(["integer", "real"]), val == literal(v))

    if c.op == "exists":
        pred: ColumnElement[bool] = true()
    elif c.op == "eq":
        pred = typed(c.value)
    elif c.op == "in":
        pred = or_(*(typed(v) for v in c.value))
    elif c.op in ("gt", "gte", "lt", "lte"):
        types = ["text"] if isinstance(c.value, str) else ["integer", "real"]
        pred = and_(typ.in_(types), _compare(val, c.op, literal(c.value)))
    else:  # contains, icontains
        el = func.json_each(val).table_valued("value", "type").alias("el")
        substring: ColumnElement[bool] | None
        if c.op == "icontains":
            needle = func.lower(bindparam(None, c.value, type_=String))
            substring = and_(typ == "text", func.instr(func.lower(val), needle) > 0)
            element = and_(el.c.type == "text", func.lower(el.c.value) == needle)
        else:
            substring = None
            if isinstance(c.value, str):
                substring = and_(typ == "text", func.instr(val, bindparam(None, c.value, type_=String)) > 0)
            k = _kind(c.value)
            if k == "bool":
                element = el.c.type == ("true" if c.value else "false")
            elif k == "str":
                element = and_(el.c.type == "text", el.c.value == bindparam(None, c.value, type_=String))
            else:
                element = and_(el.c.type.in_(["integer", "real"]), el.c.value == literal(c.value))
        in_list = and_(typ == "array", exists(select(literal(1)).select_from(el).where(element)))
        pred = in_list if substring is None else or_(substring, in_list)
    return exists(select(literal(1)).select_from(je).where(je.c.key == bindparam(None, c.key, type_=String), pred))


def _compare(left: Any, op: str, right: Any) -> ColumnElement[bool]:
    if op == "gt":
        return left > right  # type: ignore[no-any-return]
    if op == "gte":
        return left >= right  # type: ignore[no-any-return]
    if op == "lt":
        return left < right  # type: ignore[no-any-return]
    return left <= right  # type: ignore[no-any-return]


def _pg_cond(c: Cond, column: Any) -> ColumnElement[bool]:
    key = bindparam(None, c.key, type_=String)
    member = column.op("->", return_type=JSONB)(key)
    typeof = func.jsonb_typeof(member)

    def contains(doc: Any) -> ColumnElement[bool]:
        # jsonb containment of {key: value}: the key a bound JSON document, numbers equal numerically
        return column.op("@>", is_comparison=True)(bindparam(None, doc, type_=JSONB))  # type: ignore[no-any-return]

    if c.op == "exists":
        return member.isnot(None)  # type: ignore[no-any-return]
    if c.op == "eq":
        return contains({c.key: c.value})
    if c.op == "in":
        return or_(*(contains({c.key: v}) for v in c.value))
    text = column.op("->>", return_type=String)(key)
    if c.op in ("gt", "gte", "lt", "lte"):
        if isinstance(c.value, str):
            left: Any = case((typeof == "string", text), else_=None).collate("C")
            return _compare(left, c.op, bindparam(None, c.value, type_=String))
        # the cast only where the member is a number: CASE keeps it from ever seeing a string
        left = case((typeof == "number", cast(text, Numeric)), else_=None)
        return _compare(left, c.op, cast(literal(c.value), Numeric))
    if c.op == "contains":
        in_list = contains({c.key: [c.value]})
        if not isinstance(c.value, str):
            return in_list
        return or_(and_(typeof == "string", func.strpos(text, bindparam(None, c.value, type_=String)) > 0), in_list)
    # icontains
    needle = func.lower(bindparam(None, c.value, type_=String))
    items = (
        func.jsonb_array_elements_text(case((typeof == "array", member), else_=literal([], JSONB)))
        .table_valued("value")
        .alias("el")
    )
    element = exists(select(literal(1)).select_from(items).where(func.lower(items.c.value) == needle))
    return or_(and_(typeof == "string", func.strpos(func.lower(text), needle) > 0), element)

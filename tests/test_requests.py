"""One typed request per operation: the facade, the sync shell, REST, MCP and the CLI are checked
against ``deepcontext.services.requests``, so a parameter added to a request fails here until each
layer takes it (with the same default and limits) or the table below says why it does not.

Every layer ends in the facade, which validates through the request; these checks are about what
each layer offers and tells its users (signatures, OpenAPI, MCP tool schemas, CLI options).
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer.main
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from deepcontext import DeepContext, SyncDeepContext
from deepcontext.errors import ValidationError
from deepcontext.services.requests import (
    REQUESTS,
    AddRequest,
    ContextRequest,
    EditRequest,
    ImportRequest,
    ListRequest,
    Request,
    SearchRequest,
    bounds,
)
from deepcontext.settings import DeepContextSettings

REQUIRED = object()


def _model_params(model: type[Request]) -> dict[str, tuple[Any, float | None, float | None]]:
    """``{name: (default, lowest, highest)}`` of a request, by the name callers use."""
    out = {}
    for name, f in model.model_fields.items():
        default = REQUIRED if f.default is PydanticUndefined else f.default
        out[f.alias or name] = (default, *bounds(model, name))
    return out


@dataclass
class Layer:
    """How one layer offers one operation: its parameters by the request's names."""

    params: dict[str, tuple[Any, float | None, float | None]]
    #: request fields this layer does not offer, and why
    left_out: dict[str, str] = field(default_factory=dict)
    #: the layer's own parameters that are not the request's (output format, paging...)
    own: set[str] = field(default_factory=set)
    #: fields whose default or limits differ on purpose, and why
    differs: dict[str, str] = field(default_factory=dict)


def _check(op: str, layer_name: str, layer: Layer) -> None:
    model = _model_params(REQUESTS[op])
    offered = set(layer.params) - layer.own
    unknown = offered - set(model)
    assert not unknown, f"{layer_name} {op}: parameters the request does not have: {sorted(unknown)}"
    missing = set(model) - offered - set(layer.left_out)
    assert not missing, f"{layer_name} {op}: the request's {sorted(missing)} are neither offered nor left out with a reason"
    stale = set(layer.left_out) & offered
    assert not stale, f"{layer_name} {op}: {sorted(stale)} are offered but listed as left out"
    for name in sorted(offered - set(layer.differs)):
        want_default, want_lo, want_hi = model[name]
        default, lo, hi = layer.params[name]
        if default is not REQUIRED and want_default is not REQUIRED:
            assert default == want_default, f"{layer_name} {op}.{name}: default {default!r}, the request's {want_default!r}"
        # a layer's own encodings (a time as epoch seconds) have ranges of their own
        if (lo is not None or hi is not None) and (want_lo is not None or want_hi is not None):
            # a JSON schema holds numbers as floats: 2**63 - 1 reads back as 2**63
            same = [(None if v is None else float(v)) for v in (lo, hi)] == [
                (None if v is None else float(v)) for v in (want_lo, want_hi)
            ]
            assert same, f"{layer_name} {op}.{name}: limits {lo}..{hi}, the request's {want_lo}..{want_hi}"


# --- the layers' parameters ------------------------------------------------------------------------


def _signature(fn: Any, skip: tuple[str, ...] = ("self",)) -> dict[str, tuple[Any, None, None]]:
    out: dict[str, tuple[Any, None, None]] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name not in skip:
            out[p.name] = (REQUIRED if p.default is inspect.Parameter.empty else p.default, None, None)
    return out


def _schema_limits(prop: dict[str, Any]) -> tuple[float | None, float | None]:
    for branch in [prop, *prop.get("anyOf", [])]:
        if "minimum" in branch or "maximum" in branch:
            lo, hi = branch.get("minimum"), branch.get("maximum")
            return (None if lo is None else int(lo) if float(lo).is_integer() else lo), (
                None if hi is None else int(hi) if float(hi).is_integer() else hi
            )
    return None, None


def _body(model: type[BaseModel], schema: dict[str, Any]) -> dict[str, tuple[Any, float | None, float | None]]:
    out = {}
    for name, f in model.model_fields.items():
        default = REQUIRED if f.default is PydanticUndefined else f.default
        out[name] = (default, *_schema_limits(schema["properties"][name]))
    return out


def _json_schema_params(schema: dict[str, Any]) -> dict[str, tuple[Any, float | None, float | None]]:
    required = set(schema.get("required", []))
    return {
        name: (REQUIRED if name in required else prop.get("default"), *_schema_limits(prop))
        for name, prop in schema["properties"].items()
    }


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from deepcontext.server.app import create_app
    from deepcontext.server.mcp_server import build_mcp_server, local_scope_resolver

    db = tmp_path_factory.mktemp("requests") / "r.db"
    ctx = DeepContext(database_url=f"sqlite:///{db}", embedder="hash")
    api = create_app(ctx).openapi()
    tools = asyncio.run(build_mcp_server(ctx, local_scope_resolver(None)).list_tools())
    return {"openapi": api, "tools": {t.name: t.input_schema for t in tools}}


def _rest(surfaces: dict[str, Any]) -> dict[str, Layer]:
    from deepcontext.server.routes.context import ContextBody
    from deepcontext.server.schemas import AddBody, PatchMemoryBody, SearchBody, UpdateBody

    comps = surfaces["openapi"]["components"]["schemas"]
    listing = {
        p["name"]: (p["schema"].get("default", REQUIRED if p.get("required") else None), *_schema_limits(p["schema"]))
        for p in surfaces["openapi"]["paths"]["/v1/memories"]["get"]["parameters"]
    }
    server_decides = "the server decides it from the API key (a read-only key never counts access)"
    edit = _body(PatchMemoryBody, comps["PatchMemoryBody"])
    edit["memory_id"] = (REQUIRED, None, None)  # the path's {memory_id}
    return {
        "add": Layer(_body(AddBody, comps["AddBody"])),
        "search": Layer(_body(SearchBody, comps["SearchBody"]), left_out={"track_access": server_decides}),
        "context": Layer(
            _body(ContextBody, comps["ContextBody"]),
            left_out={"track_access": server_decides, "schema": "a deepcq schema is Python code, not JSON"},
            differs={"budget_tokens": "the API caps a context at 200,000 tokens (a response's size)"},
        ),
        "list": Layer(listing),
        "edit": Layer(edit, left_out={"clear_expiry": "JSON says it directly: expires_at null clears the expiry"}),
        # DeepContext 0.1's PUT /memory/update, kept as it was; PATCH /v1/memories/{id} (edit) takes metadata
        "update": Layer(_body(UpdateBody, comps["UpdateBody"]), left_out={"metadata": "0.1's body had none"}),
    }


def _mcp(surfaces: dict[str, Any]) -> dict[str, Layer]:
    tools = surfaces["tools"]
    context = _json_schema_params(tools["get_context"])
    context["memory_limit"] = context.pop("limit")  # a tool's parameter is named for the model reading it
    scope_only = "a tool offers the filters an assistant needs; the rest stay on REST and Python"
    return {
        "add": Layer(
            _json_schema_params(tools["add_memories"]),
            left_out={
                "timestamp": "messages are said now",
                "expires_at": scope_only,
                "ttl": scope_only,
                "infer": "a tool always extracts",
            },
        ),
        "search": Layer(
            _json_schema_params(tools["search_memories"]),
            left_out={k: scope_only for k in ("include_graph", "conversation_id", "after", "before", "config", "track_access")},
        ),
        "context": Layer(
            context,
            left_out={
                k: scope_only
                for k in ("shares", "schema", "min_intent", "min_similarity", "max_conversation_nodes", "track_access")
            },
            differs={"budget_tokens": "capped like the REST API's"},
        ),
        "list": Layer(
            _json_schema_params(tools["list_memories"]),
            left_out={k: scope_only for k in ("conversation_id", "after", "before", "include_inactive")},
            differs={"limit": "a page an assistant reads: at most 200"},
        ),
    }


_CLI_NAMES = {
    "user": "user_id",
    "conversation": "conversation_id",
    "agent": "agent_id",
    "preset_name": "config",
    "budget": "budget_tokens",
}


def _cli_command(name: str) -> dict[str, tuple[Any, None, None]]:
    from deepcontext.cli.main import app

    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    out: dict[str, tuple[Any, None, None]] = {}
    for p in cmd.params:
        default = REQUIRED if p.required else (None if p.default == () else p.default)
        out[_CLI_NAMES.get(p.name, p.name)] = (default, None, None)
    return out


def _cli() -> dict[str, Layer]:
    output = {"json_out"}
    not_yet = "not offered by the command; the library and REST take it"
    return {
        "add": Layer(
            _cli_command("add"),
            own=output | {"path", "user_name", "restart"},
            left_out={
                "messages": "read from the file or stdin given as path",
                "metadata": not_yet,
                "expires_at": not_yet,
                "ttl": not_yet,
                "infer": not_yet,
            },
        ),
        "search": Layer(
            _cli_command("search"),
            own=output,
            left_out={k: not_yet for k in ("include_graph", "after", "before", "track_access")},
        ),
        "context": Layer(
            _cli_command("context"),
            own=output | {"text_only"},
            left_out={
                k: not_yet
                for k in (
                    "shares",
                    "schema",
                    "min_intent",
                    "memory_limit",
                    "min_similarity",
                    "max_conversation_nodes",
                    "track_access",
                    "agent_id",
                    "run_id",
                )
            },
        ),
        "list": Layer(
            _cli_command("list"),
            own=output,
            left_out={k: not_yet for k in ("conversation_id", "after", "before")},
            differs={"limit": "a terminal page: 20 rows"},
        ),
        "import_records": Layer(
            {
                ("part_size" if k == "batch" else "defer_vector_index" if k == "defer_index" else k): v
                for k, v in _cli_command("import").items()
            },
            own={"path"},
            left_out={"records": "read from the file given as path", "progress": "the command draws a progress bar"},
            differs={"part_size": "the command always imports in parts, so that a large file can be resumed"},
        ),
    }


# --- the checks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(REQUESTS))
def test_the_facade_and_the_sync_shell_take_the_request_in_its_order(op: str) -> None:
    model = _model_params(REQUESTS[op])
    for cls in (DeepContext, SyncDeepContext):
        params = _signature(getattr(cls, op))
        assert list(params) == list(model), f"{cls.__name__}.{op}: {list(params)} against the request's {list(model)}"
        for name, (default, _, _) in params.items():
            assert default == model[name][0], f"{cls.__name__}.{op}({name}=...): {default!r} against {model[name][0]!r}"


def test_rest_offers_each_request(surfaces: dict[str, Any]) -> None:
    for op, layer in _rest(surfaces).items():
        _check(op, "REST", layer)


def test_mcp_tools_offer_each_request(surfaces: dict[str, Any]) -> None:
    for op, layer in _mcp(surfaces).items():
        _check(op, "MCP", layer)


def test_cli_commands_offer_each_request() -> None:
    for op, layer in _cli().items():
        _check(op, "CLI", layer)


def test_the_check_fails_on_a_parameter_only_the_request_has() -> None:
    layer = Layer({name: v for name, v in _model_params(SearchRequest).items() if name != "min_score"})
    with pytest.raises(AssertionError, match="min_score"):
        _check("search", "test", layer)
    layer = Layer({**_model_params(SearchRequest), "limit": (20, 1, 100)})
    with pytest.raises(AssertionError, match="default 20"):
        _check("search", "test", layer)


# --- the requests themselves -----------------------------------------------------------------------

SETTINGS = DeepContextSettings()
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("model", "values", "field"),
    [
        (SearchRequest, {"limit": True}, "limit"),
        (SearchRequest, {"limit": 10**30}, "limit"),
        (SearchRequest, {"limit": "5"}, "limit"),
        (SearchRequest, {"min_score": float("nan")}, "min_score"),
        (SearchRequest, {"min_score": 10**400}, "min_score"),
        (SearchRequest, {"include_graph": 1}, "include_graph"),
        (SearchRequest, {"track_access": "yes"}, "track_access"),
        (SearchRequest, {"tier": "archive"}, "tier"),
        (SearchRequest, {"query": " "}, "query"),
        (SearchRequest, {"query": "x" * 100_000}, "query"),
        (SearchRequest, {"user_id": 7}, "user_id"),
        (SearchRequest, {"after": "2025-02-01", "before": "2025-01-01"}, "after"),
        (SearchRequest, {"config": 3}, "config"),
        (ContextRequest, {"budget_tokens": 0}, "budget_tokens"),
        (ContextRequest, {"memory_limit": 101}, "memory_limit"),
        (ContextRequest, {"min_similarity": None}, "min_similarity"),
        (ContextRequest, {"schema": {"tiers": []}}, "schema"),
        (ListRequest, {"limit": 1001}, "limit"),
        (ListRequest, {"include_inactive": "no"}, "include_inactive"),
        (ImportRequest, {"part_size": 0}, "part_size"),
        (ImportRequest, {"progress": "bar"}, "progress"),
        (ImportRequest, {"defer_vector_index": 1}, "defer_vector_index"),
        (ImportRequest, {"user_id": ""}, "user_id"),
    ],
)
def test_a_bad_value_is_one_validation_error_naming_its_field(model: type[Request], values: dict[str, Any], field: str) -> None:
    base = {
        ListRequest: {"user_id": "ana"},
        ImportRequest: {"records": []},
    }.get(model, {"query": "where", "user_id": "ana"})
    with pytest.raises(ValidationError) as err:
        model.of(SETTINGS, **{**base, **values})
    assert err.value.field == field
    assert str(err.value).startswith(field), str(err.value)


def test_add_and_edit_requests_check_against_now() -> None:
    msgs = [{"role": "user", "content": "I moved to Porto."}]
    req = AddRequest.of(SETTINGS, messages=msgs, user_id="ana", ttl=60, _context={"now": NOW})
    assert req.expiry == datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    assert req.parsed_messages[0].said_at == NOW and req.parsed_messages[0].content == "I moved to Porto."
    with pytest.raises(ValidationError, match="not both"):
        AddRequest.of(SETTINGS, messages=msgs, user_id="ana", ttl=60, expires_at="2027-01-01", _context={"now": NOW})
    with pytest.raises(ValidationError, match="in the past") as err:
        EditRequest.of(SETTINGS, memory_id=1, user_id="ana", expires_at="2025-06-01", _context={"now": NOW})
    assert err.value.field == "expires_at"
    edit = EditRequest.of(SETTINGS, memory_id=1, user_id="ana", text="  Lives in Porto. ", _context={"now": NOW})
    assert edit.new_text == "Lives in Porto." and edit.new_expiry is None
    with pytest.raises(ValidationError) as err:
        EditRequest.of(SETTINGS, memory_id=2**63, user_id="ana", _context={"now": NOW})
    assert err.value.field == "memory_id"


def test_a_request_holds_what_the_service_reads() -> None:
    req = SearchRequest.of(SETTINGS, query="where", user_id="ana", tier="long_term", agent_id=["a", "a", "b"])
    assert req.user_id == "ana"
    assert [t.value for t in req.filters.tiers or ()] == ["long_term"] and req.filters.agent_ids == ("a", "b")
    assert req.search_config.rrf_k == SearchRequest.of(SETTINGS, query="q", user_id="u").search_config.rrf_k
    ctx = ContextRequest.of(SETTINGS, query="q", user_id="u", budget_tokens=8000)
    assert ctx.search_limit == 100 and ContextRequest.of(SETTINGS, query="q", user_id="u").search_limit == 50
    page = ListRequest.of(SETTINGS, user_id="u", include_inactive=True)
    assert len(page.filters.statuses) == 5


def test_the_facade_refuses_through_the_request(tmp_path: Path) -> None:
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/f.db", embedder="hash") as ctx:
        with pytest.raises(ValidationError) as err:
            ctx.search("where", "ana", limit=0)
        assert err.value.field == "limit"
        with pytest.raises(ValidationError) as err:
            ctx.list("ana", limit=5000)
        assert err.value.field == "limit"
        with pytest.raises(ValidationError) as err:
            ctx.add([{"role": "user", "content": "hi"}], "ana", infer="no")  # type: ignore[arg-type]
        assert err.value.field == "infer"
        assert ctx.stats("ana").get("memories", 0) == 0


def test_an_error_shows_a_huge_value_briefly() -> None:
    with pytest.raises(ValidationError) as err:
        SearchRequest.of(SETTINGS, query="where", user_id="ana", limit="9" * 1_000_000)
    assert err.value.field == "limit" and len(str(err.value)) < 200

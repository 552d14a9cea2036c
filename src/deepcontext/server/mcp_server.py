"""The MCP server (official ``mcp`` SDK, 2.x): deepcontext's memory as tools for MCP clients.

Tools: ``add_memories``, ``search_memories``, ``get_context``, ``list_memories``,
``delete_memory``, ``graph_neighbours``. Each takes an optional ``user_id``; without one the
configured default (setting ``mcp_default_user``) is used.

Transports: stdio (``deepcontext mcp``: a local, trusted process; the local scope, i.e. the
``local_tenant`` setting or the library's own user ids) and streamable HTTP (``deepcontext mcp
--http``: an API key per request, exactly as the REST API, :func:`http_app`).
"""

# no `from __future__ import annotations`: the SDK reads the tools' annotations at registration

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from deepcontext.core import DeepContext
from deepcontext.errors import AuthError, DeepContextError
from deepcontext.server.net import is_loopback
from deepcontext.server.tenancy import Scope
from deepcontext.services.activity import calls_from

__all__ = ["MCPAuthMiddleware", "build_mcp_server", "format_context", "http_app", "local_scope_resolver"]

log = logging.getLogger("deepcontext.server")
STATE_KEY = "deepcontext_scope"

ScopeResolver = Callable[[Any], Scope]


class ToolMessage(BaseModel):
    """One conversation message."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str = Field(min_length=1, max_length=32_000)
    name: str | None = Field(default=None, max_length=255, description="The speaker's name")


def _public(exc: DeepContextError) -> str:
    from deepcontext.server.problems import classify

    return classify(exc)[2]


def format_context(user_id: str, query: str, results: list[Any]) -> str:
    """Search results as a block of text to put in a prompt, most relevant first."""
    if not results:
        return f"No memories of {user_id} relate to: {query}"
    lines = [f"Memories of {user_id} relevant to: {query} (most relevant first)"]
    for i, r in enumerate(results, start=1):
        when = r.said_at or r.created_at
        lines.append(f"{i}. [{r.memory_type.value}, {r.tier.value}, {when:%Y-%m-%d}] {r.text}")
    return "\n".join(lines)


def build_mcp_server(ctx: DeepContext, resolve_scope: ScopeResolver, *, default_user: str | None = None) -> Any:
    """An ``MCPServer`` whose tools work on ``ctx`` in the scope ``resolve_scope(mcp_context)``
    returns (it raises AuthError to refuse)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    import deepcontext

    server = MCPServer(
        "deepcontext",
        version=deepcontext.__version__,
        instructions="Long-term memory of users: store conversations with add_memories, recall with "
        "get_context or search_memories before answering, walk the knowledge graph with graph_neighbours.",
    )

    UserArg = Annotated[
        str | None, Field(default=None, description="The user whose memories to use (default: the server's default user)")
    ]

    AgentArg = Annotated[
        str | None,
        Field(default=None, min_length=1, max_length=255, description="The agent the memories belong to (inside the user)"),
    ]
    RunArg = Annotated[
        str | None, Field(default=None, min_length=1, max_length=255, description="The run (session) the memories belong to")
    ]
    MetadataArg = Annotated[
        dict[str, Any] | None,
        Field(
            default=None,
            description="Conditions on metadata keys: {key: value} or {key: {op: value}}, op one of eq ne in nin gt "
            "gte lt lte contains icontains; {key: '*'}; AND / OR / NOT lists",
        ),
    ]

    def user_of(mcp_ctx: Any, user_id: str | None, *, write: bool = False) -> tuple[Scope, str, str]:
        scope = resolve_scope(mcp_ctx)
        if write:
            scope.check_write()
        external = user_id or default_user
        if not external:
            raise ToolError("user_id is required (no default user is configured: setting mcp_default_user)")
        return scope, external, scope.user(external)

    async def guarded(fn: Callable[[], Any]) -> Any:
        try:
            return await fn()
        except ToolError:
            raise
        except DeepContextError as exc:
            raise ToolError(_public(exc)) from None

    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    async def add_memories(
        messages: Annotated[
            list[ToolMessage] | str,
            Field(description="Messages [{role, content, name?}] or one text said by the user"),
        ],
        mcp_ctx: Context,
        user_id: UserArg = None,
        conversation_id: Annotated[str, Field(description="Conversation the messages belong to")] = "default",
        agent_id: AgentArg = None,
        run_id: RunArg = None,
        metadata: Annotated[dict[str, Any] | None, Field(default=None, description="Attached to every memory")] = None,
    ) -> dict[str, Any]:
        """Remember a conversation: stores the messages and the facts, events and entities derived
        from them."""

        async def go() -> dict[str, Any]:
            _, _, uid = user_of(mcp_ctx, user_id, write=True)
            msgs = (
                [{"role": "user", "content": messages}]
                if isinstance(messages, str)
                else [m.model_dump(exclude_none=True) for m in messages]
            )
            r = await ctx.add(msgs, uid, conversation_id, agent_id=agent_id, run_id=run_id, metadata=metadata)
            return {
                "memories_added": r.memories_added,
                "memories_updated": r.memories_updated,
                "memory_ids": r.memory_ids,
                "facts": r.semantic_facts + r.episodic_facts + r.procedural_facts,
                "entities": r.entities_found,
            }

        return await guarded(go)

    @server.tool(annotations=read)
    async def search_memories(
        query: Annotated[str, Field(min_length=1, max_length=4000, description="What to look for")],
        mcp_ctx: Context,
        user_id: UserArg = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        tier: Literal["working", "short_term", "long_term"] | None = None,
        memory_type: Literal["semantic", "episodic", "procedural"] | None = None,
        include_superseded: Annotated[
            bool, Field(description="Also older values a later statement changed (e.g. where the user lived before)")
        ] = False,
        min_score: Annotated[
            float | None,
            Field(ge=0, le=1, description="Leave out results whose score (estimated chance of being relevant) is below this"),
        ] = None,
        agent_id: AgentArg = None,
        run_id: RunArg = None,
        metadata: MetadataArg = None,
    ) -> dict[str, Any]:
        """Hybrid search (meaning, keywords, knowledge graph) over the user's memories, optionally
        of one agent and / or run and filtered on metadata. Each result's score is the estimated
        chance, from 0 to 1, that it is relevant."""

        async def go() -> dict[str, Any]:
            scope, _, uid = user_of(mcp_ctx, user_id)
            with calls_from("mcp", scope.key_id):
                res = await ctx.search(
                    query, uid, limit=limit, tier=tier, memory_type=memory_type, include_superseded=include_superseded,
                    min_score=min_score, agent_id=agent_id, run_id=run_id, metadata=metadata,
                    track_access=False if scope.read_only else None,
                )  # fmt: skip
            return {
                "results": [
                    {
                        "memory_id": r.memory_id,
                        "text": r.text,
                        "score": round(r.score, 6),
                        "memory_type": r.memory_type.value,
                        "tier": r.tier.value,
                        "said_at": r.said_at.isoformat() if r.said_at else None,
                        "entities": r.entities,
                        "superseded_by": r.superseded_by,
                        "agent_id": r.agent_id,
                        "run_id": r.run_id,
                    }
                    for r in res.results
                ]
            }

        return await guarded(go)

    @server.tool(annotations=read)
    async def get_context(
        query: Annotated[str, Field(min_length=1, max_length=4000, description="The message to answer, or a topic")],
        mcp_ctx: Context,
        user_id: UserArg = None,
        conversation_id: Annotated[
            str | None, Field(default=None, max_length=255, description="Also show this conversation's recent turns")
        ] = None,
        budget_tokens: Annotated[int, Field(ge=1, le=200_000, description="Most tokens the context may take")] = 2000,
        limit: Annotated[
            int | None,
            Field(ge=1, le=100, description="Search results considered (default: one per 40 tokens of budget, at least 20)"),
        ] = None,
        agent_id: AgentArg = None,
        run_id: RunArg = None,
    ) -> str:
        """What is remembered about the user that bears on ``query``, as text ready for a prompt:
        pinned memories, relevant memories with their dates, working-memory sections selected by
        intent and the conversation's recent path, within ``budget_tokens``."""

        async def go() -> str:
            scope, external, uid = user_of(mcp_ctx, user_id)
            with calls_from("mcp", scope.key_id):
                res = await ctx.context(
                    query, uid, conversation_id or None, budget_tokens=budget_tokens, memory_limit=limit,
                    agent_id=agent_id, run_id=run_id, track_access=False if scope.read_only else None,
                )  # fmt: skip
            return res.text or f"Nothing remembered about {external} bears on: {query}"

        return await guarded(go)

    @server.tool(annotations=read)
    async def list_memories(
        mcp_ctx: Context,
        user_id: UserArg = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        tier: Literal["working", "short_term", "long_term"] | None = None,
        memory_type: Literal["semantic", "episodic", "procedural"] | None = None,
        agent_id: AgentArg = None,
        run_id: RunArg = None,
        metadata: MetadataArg = None,
    ) -> dict[str, Any]:
        """The user's memories, newest first, one page at a time (optionally of one agent and / or
        run, filtered on metadata)."""

        async def go() -> dict[str, Any]:
            _, _, uid = user_of(mcp_ctx, user_id)
            page = await ctx.list(
                uid, tier=tier, memory_type=memory_type, limit=limit, cursor=cursor,
                agent_id=agent_id, run_id=run_id, metadata=metadata,
            )  # fmt: skip
            return {
                "total": page.total,
                "next_cursor": page.next_cursor,
                "memories": [
                    {
                        "memory_id": m.id,
                        "text": m.text,
                        "memory_type": m.memory_type.value,
                        "tier": m.tier.value,
                        "created_at": m.created_at.isoformat(),
                        "agent_id": m.agent_id,
                        "run_id": m.run_id,
                    }
                    for m in page.memories
                ],
            }

        return await guarded(go)

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
    )
    async def delete_memory(
        memory_id: Annotated[int, Field(ge=1, le=2**63 - 1, description="The memory to forget")],
        mcp_ctx: Context,
        user_id: UserArg = None,
    ) -> dict[str, Any]:
        """Forget one memory (soft delete: it stays in the memory's history)."""

        async def go() -> dict[str, Any]:
            _, _, uid = user_of(mcp_ctx, user_id, write=True)
            return dict(await ctx.delete(memory_id, uid))

        return await guarded(go)

    @server.tool(annotations=read)
    async def graph_neighbours(
        entity: Annotated[str, Field(min_length=1, max_length=512, description="An entity name, e.g. a person or a place")],
        mcp_ctx: Context,
        user_id: UserArg = None,
        depth: Annotated[int, Field(ge=1, le=5)] = 2,
    ) -> dict[str, Any]:
        """Walk the knowledge graph from an entity: what it is related to, up to ``depth`` hops."""

        async def go() -> dict[str, Any]:
            _, _, uid = user_of(mcp_ctx, user_id)
            return {"neighbours": await ctx.get_entity_graph(uid, entity, depth=depth)}

        return await guarded(go)

    return server


def local_scope_resolver(tenant: str | None) -> ScopeResolver:
    """Every call runs in the local scope (stdio; HTTP without authentication)."""
    scope = Scope.local(tenant)
    return lambda _mcp_ctx: scope


def _request_scope(mcp_ctx: Any) -> Scope:
    """The scope :class:`MCPAuthMiddleware` attached to the HTTP request of this call."""
    request = mcp_ctx.request_context.request
    scope = getattr(request.state, STATE_KEY, None) if isinstance(request, Request) else None
    if not isinstance(scope, Scope):
        raise AuthError("unauthenticated MCP request", status_code=401)
    return scope


class MCPAuthMiddleware:
    """Authenticates every HTTP request of the MCP app like the REST API does: an API key
    (``Authorization: Bearer`` or ``X-API-Key``), or, with authentication off, a loopback client;
    the resulting scope goes into ``request.state`` for the tools."""

    def __init__(self, app: ASGIApp, ctx: DeepContext, *, require_auth: bool, local_tenant: str | None) -> None:
        self.app = app
        self.ctx = ctx
        self.require_auth = require_auth
        self.local = Scope.local(local_tenant)

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            resolved = await self._authenticate(scope)
        except AuthError as exc:
            from deepcontext.server.problems import problem_response

            await problem_response(exc.status_code, str(exc))(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = resolved
        await self.app(scope, receive, send)

    async def _authenticate(self, scope: ASGIScope) -> Scope:
        if not self.require_auth:
            client = scope.get("client")
            if not client or not is_loopback(client[0]):
                raise AuthError("authentication is off: only loopback clients are served", status_code=403)
            return self.local
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        presented = headers.get("x-api-key")
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            presented = auth[7:].strip()
        if not presented:
            raise AuthError("missing API key (Authorization: Bearer <key> or X-API-Key: <key>)", status_code=401)
        from deepcontext.server.auth import scope_from_key

        return await scope_from_key(self.ctx, presented)


def http_app(
    ctx: DeepContext,
    *,
    require_auth: bool,
    local_tenant: str | None = None,
    default_user: str | None = None,
    host: str = "127.0.0.1",
    path: str = "/mcp",
) -> ASGIApp:
    """The streamable HTTP MCP app (stateless, JSON responses) behind :class:`MCPAuthMiddleware`."""
    resolver = _request_scope if require_auth else local_scope_resolver(local_tenant)
    server = build_mcp_server(ctx, resolver, default_user=default_user)
    app = server.streamable_http_app(streamable_http_path=path, stateless_http=True, json_response=True, host=host)
    return MCPAuthMiddleware(app, ctx, require_auth=require_auth, local_tenant=local_tenant)

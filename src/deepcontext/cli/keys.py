"""API keys of the REST API and the MCP server: ``deepcontext keys create | list | revoke``."""

from __future__ import annotations

from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, print_json, run

keys_app = typer.Typer(
    help="Create, list and revoke API keys of the REST API and the MCP server.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def create(
    tenant: str = typer.Option(..., "--tenant", "-t", help="The tenant the key belongs to (its data is the tenant's)"),
    user: list[str] = typer.Option(None, "--user", "-u", help="Limit the key to this user (repeat for several)"),
    read_only: bool = typer.Option(False, "--read-only", help="The key may read but not write"),
    name: str = typer.Option(None, "--name", "-n", help="A label for listings"),
    json_out: bool = typer.Option(False, "--json", help="Print the key and its details as JSON"),
) -> None:
    """Create a key and print it (once: only its hash is stored)."""

    async def body(ctx: Any) -> Any:
        return ctx.store.keys.create(tenant, now=ctx.clock.now(), user_ids=user or None, read_only=read_only, name=name)

    key, text = run(body, create=True, embeds=False)
    if json_out:
        print_json({"key": text, **key.as_dict()})
        return
    print(text)
    scope = ", ".join(key.user_ids) if key.user_ids else "every user"
    console(stderr=True).print(
        f"key {key.key_id} for tenant {key.tenant!r} ({scope}{', read-only' if key.read_only else ''}); "
        "store it now: it is not shown again",
        markup=False,
    )


@keys_app.command("list")
def list_cmd(
    tenant: str = typer.Option(None, "--tenant", "-t", help="Only this tenant's keys"),
    active: bool = typer.Option(False, "--active", help="Leave revoked keys out"),
    json_out: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """List keys (never their secrets)."""

    async def body(ctx: Any) -> Any:
        return ctx.store.keys.all(tenant=tenant, include_revoked=not active)

    keys = run(body, embeds=False)
    if json_out:
        print_json([k.as_dict() for k in keys])
        return
    if not keys:
        console(stderr=True).print("no API keys")
    for k in keys:
        fields = [
            k.key_id,
            f"tenant={k.tenant}",
            "read-only" if k.read_only else "read-write",
            "users=" + (",".join(k.user_ids) if k.user_ids else "*"),
            f"created={k.created_at:%Y-%m-%dT%H:%M:%SZ}",
            f"last_used={k.last_used_at:%Y-%m-%dT%H:%M:%SZ}" if k.last_used_at else "last_used=never",
        ]
        if k.revoked_at:
            fields.append(f"REVOKED={k.revoked_at:%Y-%m-%dT%H:%M:%SZ}")
        if k.name:
            fields.append(f"name={k.name!r}")
        print("  ".join(fields))


@keys_app.command("revoke")
def revoke(key_id: str = typer.Argument(..., help="The key's id (the part after 'dck_', as listed)")) -> None:
    """Revoke a key: every request with it is refused from now on."""

    async def body(ctx: Any) -> Any:
        return ctx.store.keys.revoke(key_id, now=ctx.clock.now())

    key = run(body, embeds=False)
    console().print(f"revoked {key.key_id} (tenant {key.tenant!r})", markup=False)

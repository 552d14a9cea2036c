"""MkDocs hook: the CLI and REST reference pages are generated at build time, from the typer app
and from the server's OpenAPI schema, so they cannot drift from the code.

A page holding ``<!-- cli-reference -->`` or ``<!-- rest-reference -->`` gets the generated
Markdown in place of that line.
"""

from __future__ import annotations

import json
from typing import Any

CLI_MARK = "<!-- cli-reference -->"
REST_MARK = "<!-- rest-reference -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_reference())
    if REST_MARK in markdown:
        markdown = markdown.replace(REST_MARK, rest_reference())
    return markdown


# --- CLI ---------------------------------------------------------------------------------------


def cli_reference() -> str:
    import typer

    from deepcontext.cli.main import app

    root = typer.main.get_command(app)
    out: list[str] = []
    _command(root, root.context_class(root, info_name="deepcontext"), out, level=2)
    return "\n".join(out)


def _command(cmd: Any, ctx: Any, out: list[str], level: int) -> None:
    """One command's section (typer's own click: duck-typed, as ``--help`` reads it)."""
    name = ctx.command_path
    out += [f"{'#' * level} `{name}`", ""]
    if cmd.help:
        out += [_plain(cmd.help), ""]
    pieces = " ".join(cmd.collect_usage_pieces(ctx))
    out += ["```text", f"{name} {pieces}".rstrip(), "```", ""]
    rows = []
    for p in cmd.get_params(ctx):
        if getattr(p, "hidden", False):
            continue
        record = p.get_help_record(ctx)
        if p.param_type_name == "argument":
            names, helptext = f"`{p.name.upper()}`", (p.help or "") + (" (required)" if p.required else "")
        elif record is not None:
            names, helptext = " ".join(f"`{o}`" for o in record[0].split(", ")), record[1]
        else:
            continue
        rows.append(f"| {names} | {_cell(helptext)} |")
    if rows:
        out += ["| argument / option | description |", "|---|---|", *rows, ""]
    if hasattr(cmd, "list_commands"):
        for sub_name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, sub_name)
            if sub is None or sub.hidden:
                continue
            _command(sub, sub.context_class(sub, info_name=sub_name, parent=ctx), out, min(level + 1, 4))


# --- REST --------------------------------------------------------------------------------------


def rest_reference() -> str:
    from deepcontext.server import create_app
    from deepcontext.settings import DeepContextSettings

    schema = create_app(DeepContextSettings(database_url="sqlite:///unused.db")).openapi()
    comps = schema.get("components", {}).get("schemas", {})
    out: list[str] = []
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in schema["paths"].items():
        for method, op in item.items():
            tag = (op.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append((method.upper(), path, op))
    for tag, ops in by_tag.items():
        out += [f"## {tag}", ""]
        for method, path, op in ops:
            out += _operation(method, path, op, comps)
    return "\n".join(out)


def _operation(method: str, path: str, op: dict[str, Any], comps: dict[str, Any]) -> list[str]:
    out = [f"### `{method} {path}`", ""]
    if op.get("summary"):
        out += [f"**{op['summary']}**", ""]
    if op.get("description"):
        out += [_plain(op["description"]), ""]
    params = op.get("parameters", [])
    if params:
        out += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for p in params:
            out.append(
                f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} | "
                f"{'yes' if p.get('required') else ''} | {_cell(p.get('description', ''))} |"
            )
        out.append("")
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        out += _body(body, comps)
    codes = ", ".join(f"`{code}` {r.get('description', '')}".rstrip() for code, r in op.get("responses", {}).items())
    out += [f"Responses: {codes}", ""]
    return out


def _body(schema: dict[str, Any], comps: dict[str, Any]) -> list[str]:
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    resolved = comps.get(name, schema)
    props = resolved.get("properties", {})
    if not props:
        return [f"Body: {_type(schema)}", ""]
    required = set(resolved.get("required", []))
    out = [
        f"Body (`{name}`, JSON):" if name else "Body (JSON):",
        "",
        "| field | type | required | default | description |",
        "|---|---|---|---|---|",
    ]
    for field, spec in props.items():
        default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ""
        out.append(
            f"| `{field}` | {_type(spec)} | {'yes' if field in required else ''} | {default} | "
            f"{_cell(spec.get('description', ''))} |"
        )
    return [*out, ""]


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in spec:
            return " \\| ".join(_type(s) for s in spec[key])
    if spec.get("type") == "array":
        return f"array of {_type(spec.get('items', {}))}"
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    return str(spec.get("type", "any"))


# --- text --------------------------------------------------------------------------------------


def _plain(text: str) -> str:
    """Click's paragraph markers out; the text is Markdown already."""
    return text.replace("\b\n", "").strip()


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")

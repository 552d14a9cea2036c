"""Commands that embed nothing neither load nor check the configured embedder: a database made with
one embedder is listed, exported, cleaned and its API keys revoked under settings naming another
(here OpenAI without a key, which cannot even be built); commands that embed still refuse it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_cli

#: the database's embedder, and one the settings name instead (building it fails: no API key)
MADE_WITH = {"DEEPCONTEXT_EMBEDDER": "hash", "DEEPCONTEXT_EMBEDDING_DIMENSIONS": "64"}
OTHER = {"DEEPCONTEXT_EMBEDDER": "openai"}


def cli(tmp_path: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(["--db", str(tmp_path / "m.db"), *args], stdin=stdin, env={"HOME": str(tmp_path), **env})


def test_commands_that_embed_nothing_ignore_the_configured_embedder(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "I work at Globex in Madrid and my sister Eva lives in Porto."}]
    for user in ("ana", "bob"):
        p = cli(tmp_path, MADE_WITH, "add", "-", "--user", user, "--conversation", "c1", stdin=json.dumps(msgs))
        assert p.returncode == 0, p.stderr
    p = cli(tmp_path, MADE_WITH, "keys", "create", "--tenant", "acme", "--json")
    assert p.returncode == 0, p.stderr
    key_id = json.loads(p.stdout)["key_id"]
    mid = json.loads(cli(tmp_path, MADE_WITH, "list", "--user", "ana", "--json").stdout)["memories"][0]["id"]

    # the check still holds where vectors are made: a search under the other embedder is refused
    p = cli(tmp_path, OTHER, "search", "Where does Ana work?", "--user", "ana")
    assert p.returncode != 0 and "Traceback" not in p.stderr

    def ok(*args: str) -> str:
        p = cli(tmp_path, OTHER, *args)
        assert p.returncode == 0, (args, p.stderr)
        return p.stdout

    assert any(k["key_id"] == key_id for k in json.loads(ok("keys", "list", "--json")))
    ok("keys", "revoke", key_id)
    assert json.loads(ok("keys", "list", "--json"))[0]["revoked_at"] is not None
    assert ok("users").split() == ["ana", "bob"]
    assert json.loads(ok("stats", "--user", "ana"))["memories"] >= 1
    assert json.loads(ok("get", str(mid), "--user", "ana"))["id"] == mid
    ok("history", str(mid), "--user", "ana")
    ok("graph", "Globex", "--user", "ana", "--json")
    ok("dialogue", "export", "--user", "ana", "--conversation", "c1")
    header = json.loads(ok("export", "--user", "ana").splitlines()[0])
    assert (header["embedder"], header["dimensions"]) == ("hash-v1-64", 64)  # the vectors' embedder
    ok("lifecycle", "--user", "ana", "--no-consolidate", "--json")
    ok("delete", str(mid), "--user", "ana")
    ok("delete-user", "bob", "--yes")
    assert ok("users").split() == ["ana"]
    # the database still records its own embedder: the first one works on as before
    p = cli(tmp_path, MADE_WITH, "search", "Where does Ana work?", "--user", "ana", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["results"], p.stderr

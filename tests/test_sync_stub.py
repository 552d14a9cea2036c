"""SyncDeepContext's blocking methods are generated at import time; their static types come from
``sync.pyi``, generated from the same signatures. The stub is current, and a type checker sees
the real parameters and results through it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_stub_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_sync_stub.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_a_type_checker_sees_the_real_signatures(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the dev extra")
    user = tmp_path / "user_code.py"
    user.write_text(
        "from deepcontext import SyncDeepContext\n"
        "with SyncDeepContext() as ctx:\n"
        "    reveal_type(ctx.search('where?', 'ana', limit=3))\n"
        "    reveal_type(ctx.export('ana'))\n"
        "    ctx.search('where?', 'ana', limitt=3)\n",
        encoding="utf-8",
    )
    stdout, _, status = mypy_api.run(["--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(user)])
    assert 'Revealed type is "deepcontext.types.SearchResponse"' in stdout, stdout
    assert 'Revealed type is "list[dict[str, Any]]"' in stdout, stdout
    assert 'Unexpected keyword argument "limitt"' in stdout, stdout
    assert status == 1  # the misspelt keyword, and only it, is an error
    assert stdout.count("error:") == 1, stdout

"""The documentation site builds strictly (a broken link, anchor or reference fails), and the
front page and the benchmark results keep their shape."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.examples import ROOT

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": str(Path(sys.executable).parent), "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    rest = (tmp_path / "site" / "reference" / "rest" / "index.html").read_text()
    python = (tmp_path / "site" / "reference" / "python" / "index.html").read_text()
    # the generated references hold every command, endpoint and public method
    assert "deepcontext search" in cli and "deepcontext keys create" in cli
    assert "/v1/search" in rest and "/v1/memories/{memory_id}" in rest
    assert "run_lifecycle" in python and "deepcontext.SyncDeepContext.search" in python


def test_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; reference material belongs in docs/"
    text = "\n".join(lines)
    for command in ("./scripts/demo.sh", "./scripts/test.sh"):
        assert command in text


def test_results_are_current_tables_not_a_diary() -> None:
    assert not (ROOT / "benchmarks" / "results" / "SUMMARY.md").exists()
    dated = re.compile(r"^#+ .*\b20\d\d-\d\d-\d\d\b", re.M)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        assert not dated.search(path.read_text(encoding="utf-8")), f"{path.name}: a dated section heading"

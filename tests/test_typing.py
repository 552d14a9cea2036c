"""The package type-checks: mypy (pinned in the dev extra, configured in pyproject.toml) reports
no error in src/deepcontext and the benchmark harness (src/deepcontext_bench). A change that breaks the public API's annotations fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the dev extra")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_package_type_checks(tmp_path: Path) -> None:
    stdout, stderr, status = mypy_api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(ROOT / "src" / "deepcontext"),
            str(ROOT / "src" / "deepcontext_bench"),
        ]
    )
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
    assert "Success: no issues found" in stdout

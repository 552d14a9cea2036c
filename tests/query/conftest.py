"""Shared fixtures for the deepcontext.query tests.

``buggy_impl`` runs a defect test against deepcontext.query and, when the benchmark-only package
deepcq 0.3.0 is installed, against deepcq too, where it is expected to fail (strict xfail): the
test shows both the fix and the defect it fixes.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

DEEPCQ_DEFECT = pytest.mark.xfail(strict=True, reason="defect of deepcq 0.3.0, fixed in deepcontext.query")


@pytest.fixture(params=["deepcontext.query", pytest.param("deepcq", marks=DEEPCQ_DEFECT)])
def buggy_impl(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "deepcq":
        pytest.importorskip("deepcq")
    return importlib.import_module(request.param)

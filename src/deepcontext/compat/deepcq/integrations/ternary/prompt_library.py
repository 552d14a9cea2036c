"""``deepcq.integrations.ternary.prompt_library``: prompt templates from local CSV files.

deepcq could also download the CSV files from GitHub (``DEFAULT_URLS``, ``from_urls``);
deepcontext never downloads at run time, so both raise an error that says what to do instead.
"""

from __future__ import annotations

from typing import Any, NoReturn

from deepcontext.query.integrations import DEFAULT_SECTIONS
from deepcontext.query.integrations import PromptLibrary as _PromptLibrary

__all__ = ["SECTIONS", "PromptLibrary"]

#: deepcq's section names (the CSV files of the ternary-ai/prompts collection)
SECTIONS: list[str] = list(DEFAULT_SECTIONS)

_NO_URLS = (
    "DEFAULT_URLS is not available: deepcontext never downloads at run time; download the CSV files "
    "yourself and use PromptLibrary.from_local(directory) or PromptLibrary.from_files({section: path})"
)


class _NoDownloads:
    """A class attribute that explains itself instead of holding URLs."""

    def __get__(self, obj: object, owner: type | None = None) -> NoReturn:
        raise AttributeError(_NO_URLS)


class PromptLibrary(_PromptLibrary):
    """deepcontext's :class:`~deepcontext.query.PromptLibrary`, with deepcq's ``DEFAULT_URLS``
    attribute answering why there are none."""

    DEFAULT_URLS = _NoDownloads()


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_URLS":
        raise AttributeError(_NO_URLS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Names a package exports but imports only when first asked for (PEP 562).

``greenroom``, ``greenroom.config`` and ``greenroom.mcp`` list what they export and where
each name is defined; ``import greenroom`` then costs almost nothing, and a command pays
only for the modules it touches.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``exports`` map each name to
    the module that defines it, or to ``module:attribute`` when the package exports it
    under another name (one that would clash with a submodule, say). A name is imported on
    first use and then kept in the package, so later lookups never come back here. An
    ImportError (a missing optional dependency, with its advice) goes through unchanged."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__

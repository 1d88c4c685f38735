"""Every name the ``greenroom`` namespace exports is the object it promises, even once
every submodule is imported (a submodule of the same name would shadow a lazy export)."""

from __future__ import annotations

import importlib
import pkgutil
import types

import greenroom


def test_no_export_is_shadowed_by_a_submodule() -> None:
    for info in pkgutil.walk_packages(greenroom.__path__, "greenroom."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    shadowed = [n for n in greenroom.__all__ if isinstance(getattr(greenroom, n), types.ModuleType)]
    assert not shadowed, f"exports that resolve to a module: {shadowed}"

"""Names a package exports but imports only when first asked for (PEP 562).

``greenroom``, ``greenroom.config`` and ``greenroom.mcp`` list what they export and where
each name is defined; ``import greenroom`` then costs almost nothing, and a command pays
only for the modules it touches.

``greenroom`` also *presents* its classes and functions as its own: when one is first
resolved its ``__module__`` becomes ``"greenroom"``, so reprs, tracebacks and generated
docs say ``greenroom.Message``, not the private module it happens to live in today.
Two things read ``__module__`` for more than show, and both keep working:

- pickle finds a class or function again as ``getattr(module, qualname)``. Only names
  whose ``__qualname__`` is the exported name are presented, so ``greenroom.X`` is the
  object itself (a name exported under another one keeps its module).
- ``typing.get_type_hints`` (and through it ``attrs.resolve_types`` and cattrs, which
  structure session files) evaluates a class's string annotations in the globals of
  ``sys.modules[cls.__module__]``. Before a class is presented, its own annotations are
  evaluated where it was written and stored as objects; one that names something only a
  type checker imports stays a string, and could not be resolved before either.
"""

from __future__ import annotations

import importlib
import sys
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], *, present: bool = False
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``exports`` map each name to
    the module that defines it, or to ``module:attribute`` when the package exports it
    under another name (one that would clash with a submodule, say). A name is imported on
    first use and then kept in the package, so later lookups never come back here. An
    ImportError (a missing optional dependency, with its advice) goes through unchanged.

    With ``present``, classes and functions defined inside ``package`` take it as their
    ``__module__`` when first resolved (see the module docstring)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        if present:
            present_as(value, package, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__


def present_as(value: Any, package: str, name: str) -> bool:
    """Give ``value`` the ``__module__`` ``package`` when it is a class or function that
    ``package`` defines in a submodule and exports under its own name; True if it did."""
    if not isinstance(value, (type, types.FunctionType)):
        return False
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or not module.startswith(package + "."):
        return False
    if getattr(value, "__qualname__", None) != name:
        return False  # pickle would look for greenroom.<qualname> and not find it
    if isinstance(value, type):
        defined_in = sys.modules.get(module)
        if defined_in is not None:
            _pin_annotations(value, vars(defined_in))
    _defined_in[value] = module  # not an attribute: on a Protocol it would become a member
    value.__module__ = package
    return True


_defined_in: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def defined_in(value: Any) -> str:
    """The module that defines a class or function, also after ``present_as`` renamed its
    ``__module__`` (a stable name for ids that outlive the process, ``StateKey.id``)."""
    return _defined_in.get(value) or value.__module__


def _pin_annotations(cls: type, module_globals: Mapping[str, Any]) -> None:
    """Evaluate the string annotations ``cls`` itself declares, in the globals of the
    module that declares them, the way ``typing.get_type_hints`` would (module names
    first, then the class body's), and keep the results in their place."""
    # the class's own dict, not inspect.get_annotations: that returns a copy
    own = cls.__dict__.get("__annotations__")  # noqa: RUF063
    if not isinstance(own, dict):
        return
    body = dict(vars(cls))
    for key, value in own.items():
        if not isinstance(value, str):
            continue
        try:
            own[key] = eval(value, body, module_globals)
        except Exception:
            pass  # a name only a type checker sees: get_type_hints failed on it before too

"""The ``greenroom`` namespace is one list, ``_EXPORTS``: ``__all__`` is made from it, the
``TYPE_CHECKING`` block (what type checkers read) names the same names from the same
modules, every name is the object it promises (even once every submodule is imported),
and classes and functions say they are ``greenroom.X`` without breaking pickle, type
hints or cattrs (session files). ``import greenroom`` stays lazy."""

from __future__ import annotations

import ast
import importlib
import json
import pickle
import pkgutil
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import attrs
import pytest

import greenroom

INIT = Path(greenroom.__file__)


def type_checking_exports() -> dict[str, str]:
    """Name -> ``module`` (or ``module:attribute``) as the ``if TYPE_CHECKING:`` block of
    ``greenroom/__init__.py`` says, in the notation of ``_EXPORTS``."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1, "greenroom/__init__.py has one `if TYPE_CHECKING:` block"
    public: dict[str, str] = {}
    private: dict[str, str] = {}
    for node in blocks[0].body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname == alias.name:
                    public[alias.name] = f"{node.module}"
                elif alias.asname and alias.asname.startswith("_"):
                    private[alias.asname] = f"{node.module}:{alias.name}"
                else:
                    # `from m import X` is not a re-export for mypy --no-implicit-reexport or
                    # pyright (greenroom ships py.typed): users would get "not exported"
                    raise AssertionError(f"write `{alias.name} as {alias.name}` (line {node.lineno})")
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in private:
            (target,) = node.targets
            assert isinstance(target, ast.Name)
            public[target.id] = private.pop(node.value.id)
        else:
            raise AssertionError(f"unexpected statement in the TYPE_CHECKING block: {ast.unparse(node)}")
    assert not private, f"imported for a rename but never assigned: {sorted(private)}"
    return public


def test_all_is_made_from_the_one_list() -> None:
    assert greenroom.__all__ == sorted(greenroom._EXPORTS)
    assert set(greenroom.__all__) <= set(dir(greenroom))


def test_type_checkers_see_the_same_names_from_the_same_modules() -> None:
    seen = type_checking_exports()
    assert sorted(seen) == sorted(greenroom._EXPORTS), "the TYPE_CHECKING block and _EXPORTS name different sets"
    differ = {n: (seen[n], greenroom._EXPORTS[n]) for n in seen if seen[n] != greenroom._EXPORTS[n]}
    assert not differ, f"TYPE_CHECKING vs _EXPORTS: {differ}"


def test_every_export_resolves_to_the_object_its_module_defines() -> None:
    for name, where in greenroom._EXPORTS.items():
        module, _, attribute = where.partition(":")
        assert getattr(greenroom, name) is getattr(importlib.import_module(module), attribute or name), name
    with pytest.raises(AttributeError):
        greenroom.NoSuchName  # noqa: B018


def test_no_export_is_shadowed_by_a_submodule() -> None:
    for info in pkgutil.walk_packages(greenroom.__path__, "greenroom."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    shadowed = [n for n in greenroom.__all__ if isinstance(getattr(greenroom, n), types.ModuleType)]
    assert not shadowed, f"exports that resolve to a module: {shadowed}"


def presented() -> list[tuple[str, Any]]:
    """The exported classes and functions, each resolved through ``greenroom``."""
    out = []
    for name in greenroom.__all__:
        value = getattr(greenroom, name)
        if isinstance(value, (type, types.FunctionType)):
            out.append((name, value))
    return out


def test_classes_and_functions_say_they_are_greenroom_x() -> None:
    wrong = []
    for name, value in presented():
        if value.__qualname__ == name:
            if value.__module__ != "greenroom":
                wrong.append(f"{name}: {value.__module__}")
        else:
            # exported under another name: pickle looks objects up by module and qualname,
            # so it keeps the module it is defined in, where that lookup finds it
            assert value.__module__.startswith("greenroom."), name
    assert not wrong, f"not presented as greenroom.X: {wrong}"
    assert repr(greenroom.Message) == "<class 'greenroom.Message'>"


def test_every_exported_class_and_function_pickles_as_itself() -> None:
    for name, value in presented():
        assert pickle.loads(pickle.dumps(value)) is value, name


PICKLE_IN_CHILD = """
import json, pickle, sys
import greenroom
from greenroom.models import Message, ToolCall
from greenroom.run.policy import HiddenBy, HideReason
if sys.argv[1] == "dump":
    greenroom.Message, greenroom.ToolCall, greenroom.HideReason, greenroom.HiddenBy  # pickled as greenroom.X
    msg = Message(role="assistant", content="", tool_calls=(ToolCall("c1", "t", {"a": 1}),))
    sys.stdout.write(pickle.dumps((msg, HideReason(HiddenBy.DENY, "x*"), list(HiddenBy))).hex())
else:  # a fresh process that never touched greenroom.X
    msg, reason, members = pickle.loads(bytes.fromhex(sys.stdin.read()))
    seen = [type(msg).__module__, msg.tool_calls[0].arguments, reason.describe(), [m.value for m in members]]
    print(json.dumps(seen))
"""


def test_instances_pickled_as_greenroom_x_load_in_a_fresh_process() -> None:
    run = [sys.executable, "-c", PICKLE_IN_CHILD]
    dumped = subprocess.run([*run, "dump"], capture_output=True, text=True, check=True).stdout
    loaded = subprocess.run([*run, "load"], input=dumped, capture_output=True, text=True, check=True).stdout
    module, arguments, reason, members = json.loads(loaded)
    assert module == "greenroom" and arguments == {"a": 1}
    assert reason == "policy deny 'x*'" and members == [m.value for m in greenroom.HiddenBy]


HINTS_IN_CHILD = """
import importlib, json, sys, typing
import greenroom

def hints(cls):
    try:
        return typing.get_type_hints(cls)
    except Exception as exc:
        return None

classes = {}
for name, where in greenroom._EXPORTS.items():
    module, _, attribute = where.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)  # not through greenroom
    if isinstance(value, type):
        classes[name] = value
before = {name: hints(cls) for name, cls in classes.items()}
assert all(cls.__module__ != "greenroom" for cls in classes.values())
for name in classes:
    getattr(greenroom, name)  # presented from here on
lost = [name for name, cls in classes.items() if before[name] is not None and hints(cls) != before[name]]
print(json.dumps({"resolved": sum(h is not None for h in before.values()), "lost": lost}))
"""


def test_type_hints_resolve_as_they_did_where_the_class_is_defined() -> None:
    # typing.get_type_hints (attrs.resolve_types, cattrs) evaluates string annotations in
    # sys.modules[cls.__module__]: presenting a class must not move that. A fresh process,
    # so every class is seen both before and after it is presented.
    child = subprocess.run([sys.executable, "-c", HINTS_IN_CHILD], capture_output=True, text=True, check=True)
    found = json.loads(child.stdout)
    assert found["resolved"] > 30  # the check sees real classes
    assert found["lost"] == []


def test_session_data_structures_through_a_fresh_converter() -> None:
    from greenroom.config.model import make_converter

    converter = make_converter()  # nothing cached from before the classes were presented
    call = greenroom.ToolCall("c1", "get_weather", {"city": "Oslo"}, '{"city": "Oslo"}')
    messages = [
        greenroom.Message(role="user", content="weather?"),
        greenroom.Message(role="assistant", content="", tool_calls=(call,)),
        greenroom.Message(role="tool", content="sunny", tool_call_id="c1", name="get_weather"),
    ]
    data = json.loads(json.dumps(converter.unstructure(messages)))
    assert converter.structure(data, list[greenroom.Message]) == messages


def test_a_user_subclass_of_a_presented_attrs_class_resolves_its_types() -> None:
    @attrs.frozen
    class Noted(greenroom.Usage):
        note: str = ""

    attrs.resolve_types(Noted)
    hints = typing.get_type_hints(Noted)
    assert hints["note"] is str and hints["input_tokens"] is int


def test_import_greenroom_imports_no_submodule() -> None:
    # `greenroom --help` starts fast because names load on first use
    code = "import sys, greenroom; print(sorted(m for m in sys.modules if m.startswith('greenroom.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.replace("'", '"')) == ["greenroom._support", "greenroom._support.lazy"]


def test_a_state_key_id_does_not_change_when_greenroom_presents_its_class() -> None:
    """Session files keep state under ``StateKey.id``: the class's defining module, before
    and after ``greenroom.X`` renamed its ``__module__``."""
    import subprocess
    import sys

    code = (
        "from greenroom.state import StateKey, Scope, ToolUsage\n"
        "k = StateKey(ToolUsage, Scope.RUN, ToolUsage, 'core'); before = k.id\n"
        "import greenroom; assert greenroom.ToolUsage.__module__ == 'greenroom'\n"
        "print(before, k.id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["greenroom.state.ToolUsage", "greenroom.state.ToolUsage"]


def test_a_protocol_greenroom_presents_keeps_its_members() -> None:
    """``isinstance(x, greenroom.Tool)`` holds for any class with the protocol's members,
    also after the name was looked up (presenting adds no member to the protocol)."""
    import greenroom

    class Mine:
        descriptor = greenroom.ToolDescriptor("mine", "", {"type": "object", "properties": {}})
        timeout = None

        async def execute(self, args: object, ctx: object) -> str:
            return ""

    assert isinstance(Mine(), greenroom.Tool)


def test_the_kit_is_a_second_tier_of_its_own() -> None:
    """``greenroom.kit``: one list, every name resolves, its type-checking imports name the
    same, and no name is in both tiers."""
    import ast
    import importlib

    import greenroom
    import greenroom.kit as kit

    assert kit.__all__ == sorted(kit._EXPORTS)
    assert not set(kit.__all__) & set(greenroom.__all__)
    for name in kit.__all__:
        assert getattr(kit, name) is not None
    tree = ast.parse(Path(kit.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    typed = {a.asname or a.name for n in guarded.body if isinstance(n, ast.ImportFrom) for a in n.names}
    typed |= {t.id for n in guarded.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert {n for n in typed if not n.startswith("_")} == set(kit.__all__)
    assert importlib.import_module("greenroom.kit") is kit

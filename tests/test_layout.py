"""The layout rules every change keeps: one-way dependencies, small modules, no cycles.

- Core never imports a plugin and never names one: no first-party plugin's entry-point
  name, package, class, tool name or state type appears anywhere in ``core/greenroom``
  (a provider's name that is its vendor's too is the one exception: ``plugin_vocabulary``).
- Plugins import only the public ``greenroom`` namespace and ``greenroom.kit`` (what a
  third-party plugin has), and never each other; the lab (``greenroom_lab``) alone may
  also import another first-party plugin's top-level package (its public face), and no
  package imports the lab.
- Core holds the provider API, no provider over a vendor's API (those are plugins).
- No module is over 400 lines, and no import cycle exists among modules' import-time
  imports (imports under ``TYPE_CHECKING`` and inside functions do not run at import);
  counting the imports for types too, no knot ties more than three modules together.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "greenroom"
PLUGINS = ROOT / "plugins"
MAX_LINES = 400


def modules(base: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(base.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def first_party_plugins() -> dict[str, str]:
    """Entry-point name -> top-level package, for plugins that live under plugins/."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    eps = data["project"]["entry-points"]["greenroom.plugins"]
    packages = {p.name for p in PLUGINS.iterdir() if (p / "__init__.py").exists()}
    tops = {name: ref.split(":")[0].split(".")[0] for name, ref in eps.items()}
    return {name: top for name, top in tops.items() if top in packages}


def plugin_vocabulary() -> set[str]:
    """What only a first-party plugin may say: its entry-point name, its package and
    class, the tools it contributes and the state types it registers.

    A model provider's entry-point name that is also its model prefix (``openai`` of
    ``openai:gpt-4o``) is left out: it is the vendor's name too, which core may use in a
    model-family table or an example model (``agent.model = "openai:gpt-4o-mini"``); its
    package and class stay in."""
    from greenroom import StateRegistry
    from greenroom.plugins.discovery import discover

    words: set[str] = set()
    plugins = first_party_plugins()
    words.update(plugins)
    words.update(plugins.values())
    for record in discover():
        if record.name not in plugins or record.cls is None:
            continue
        words.add(record.cls.__name__)
        instance = record.cls()
        providers = getattr(instance, "greenroom_model_providers", None)
        if providers is not None and record.name in (providers() or {}):
            words.discard(record.name)
        registry = StateRegistry()
        hook = getattr(instance, "greenroom_register_state", None)
        if hook is not None:
            hook(registry=registry)
        words.update(key.cls.__name__ for key in registry if key.owner == record.name)
        tools_hook = getattr(instance, "greenroom_tools", None)
        if tools_hook is not None:
            from greenroom import ToolGroup, ToolSet

            group = ToolGroup(id="g", name="g", description="", loader=_no_tools, known=[])
            for t in tools_hook(tools=ToolSet(), groups={"g": group}) or ():
                words.add(t.descriptor.name)
    return words


async def _no_tools() -> list[object]:
    return []


def named(words: set[str], text: str) -> list[str]:
    """The words ``text`` names as words: ``lab`` is not named by ``label``."""
    return [w for w in sorted(words) if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text)]


def test_core_names_no_plugin() -> None:
    words = plugin_vocabulary()
    assert {"ToolSearch", "deferred-tools", "greenroom_deferred", "lab"} <= words  # the scan sees the real plugins
    assert {"greenroom_openai", "OpenAIProvider", "greenroom_anthropic"} <= words and "openai" not in words
    assert named(words, "from greenroom_deferred.x import y; [plugins.lab]") == ["greenroom_deferred", "lab"]
    assert named(words, "a label, available") == []
    found = []
    for _, path in modules(CORE):
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(ROOT)}: {w}" for w in named(words, text)]
    for path in CORE.rglob("*"):
        if path.suffix in (".toml", ".json", ".jsonl") and path.is_file():
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}: {w}" for w in named(words, text)]
    assert not found, "core names a plugin:\n" + "\n".join(found)


PROVIDER_BASES = {"ProviderModel", "SDKModel"}
"""The provider API's base classes: core defines them, a provider subclasses them."""


def vendor_models(tree: ast.Module) -> list[str]:
    """The classes of ``tree`` built on the provider API (a model behind a vendor's API)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name not in PROVIDER_BASES:
            bases = {
                b.id if isinstance(b, ast.Name) else b.attr
                for b in node.bases
                if isinstance(b, ast.Name | ast.Attribute)
            }
            if bases & PROVIDER_BASES:
                names.append(node.name)
    return names


def test_core_carries_no_vendor_wire_format() -> None:
    # the kernel holds the provider API and the offline scripted model; every provider that
    # talks to an API (OpenAI's, Anthropic's, Gemini's) is a plugin built on that API
    assert vendor_models(ast.parse("class A(greenroom.SDKModel): ...\nclass SDKModel(ProviderModel): ...")) == ["A"]
    assert {"OpenAIChatModel", "AnthropicModel", "GeminiModel"} <= {
        name for _, path in modules(PLUGINS) for name in vendor_models(ast.parse(path.read_text(encoding="utf-8")))
    }
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for _, path in modules(CORE)
        for name in vendor_models(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not found, "a provider in core:\n" + "\n".join(found)


def _imports(tree: ast.Module) -> Iterator[tuple[ast.stmt, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, node.module


LAB = "greenroom_lab"
"""The one package that may read other first-party plugins' public faces (DESIGN §1)."""


def import_problem(package: str, name: str, packages: set[str]) -> str | None:
    """What is wrong with ``package`` importing ``name``, or None."""
    top = name.split(".")[0]
    if name.startswith("greenroom.") and name != "greenroom.kit":
        return f"imports {name}"
    if top not in packages or top == package:
        return None
    if top == LAB:
        return "imports the lab"
    if package != LAB:
        return f"imports the plugin {top}"
    return None if name == top else f"imports {name}, past the public face of {top}"


def test_plugins_import_only_the_public_namespace() -> None:
    packages = set(first_party_plugins().values())
    assert {LAB, "greenroom_gateway"} <= packages  # registered like every first-party plugin
    rules = {
        ("greenroom_ranking", "greenroom_deferred"): "imports the plugin greenroom_deferred",
        ("greenroom_ranking", "greenroom_lab.eval"): "imports the lab",
        (LAB, "greenroom_deferred"): None,
        (LAB, "greenroom_deferred.descriptors"): "imports greenroom_deferred.descriptors, past the public face of "
        "greenroom_deferred",
        (LAB, "greenroom.run"): "imports greenroom.run",
    }
    assert {k: import_problem(*k, packages) for k in rules} == rules  # the rules say what they should
    bad = []
    for package in sorted(packages):
        for _, path in modules(PLUGINS / package):
            for node, name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
                problem = import_problem(package, name, packages)
                if problem:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {problem}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("base", [CORE, PLUGINS], ids=["core", "plugins"])
def test_no_module_over_the_limit(base: Path) -> None:
    long = []
    for _, path in modules(base):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not long, "\n".join(long)


def _runtime_imports(tree: ast.Module, types: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: top level, not under TYPE_CHECKING
    (with ``types``, those under TYPE_CHECKING too)."""
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and (
            types or not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        ):
            for sub in node.body + node.orelse:
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    yield sub
        elif isinstance(node, ast.Try):
            for sub in node.body:
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    yield sub


def import_graph(types: bool = False) -> dict[str, set[str]]:
    known: dict[str, Path] = {}
    for base in (CORE, *[p for p in PLUGINS.iterdir() if (p / "__init__.py").exists()]):
        known.update(modules(base))
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8")), types):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    pkg = name.split(".") if is_package else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - node.level + 1]
                    base = ".".join([*pkg, base] if base else pkg)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in known else base)
            graph[name].update(t for t in targets if t in known and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]  # the detector works
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


MAX_KNOT = 3
"""Most modules that may name each other round in a circle, imports for types included."""


def test_no_knot_of_more_than_three_modules_even_for_types() -> None:
    # a type-only import is a dependency a reader follows too: a knot of many modules
    # means none of them can be understood, or changed, alone
    knots = [c for c in cycles(import_graph(types=True)) if len(c) > MAX_KNOT]
    assert not knots, "knots:\n" + "\n".join(" <-> ".join(c) for c in knots)


MAX_MODULES_PER_PACKAGE = 15
"""A package that would hold more splits into a package of its own, a level down."""


@pytest.mark.parametrize("base", [CORE, PLUGINS], ids=["core", "plugins"])
def test_no_package_holds_more_than_the_cap(base: Path) -> None:
    crowded = []
    for folder in sorted({p.parent for p in base.rglob("*.py")}):
        n = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        if n > MAX_MODULES_PER_PACKAGE:
            crowded.append(f"{folder.relative_to(ROOT)}: {n} modules")
    assert not crowded, "go down a level:\n" + "\n".join(crowded)


LOWER_LAYERS = {
    # package -> the greenroom packages and top-level modules it must never import, at any
    # time (type-only imports included): read bottom-up, each layer makes sense alone
    "_support": {"run", "compose", "cli", "plugins", "mcp", "providers", "tools"},
    "tools": {"run", "compose", "cli", "plugins", "mcp", "providers"},
    "tokens": {"run", "compose", "cli", "plugins", "mcp", "providers"},
    "events": {"run", "compose", "cli", "mcp", "providers"},
    "plugins": {"run", "compose", "cli", "mcp", "providers"},
}


def _every_import(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def test_lower_layers_never_import_higher_ones_not_even_for_types() -> None:
    bad = []
    for package, forbidden in LOWER_LAYERS.items():
        base = CORE / package
        paths = [base.with_suffix(".py")] if not base.is_dir() else sorted(base.rglob("*.py"))
        for path in paths:
            for line, name in _every_import(ast.parse(path.read_text(encoding="utf-8"))):
                parts = name.split(".")
                if parts[0] == "greenroom" and len(parts) > 1 and parts[1] in forbidden:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert not bad, "\n".join(bad)


def test_core_keeps_few_modules_at_its_top() -> None:
    top = sorted(p.name for p in CORE.glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_MODULES_PER_PACKAGE, top


def test_only_the_run_package_reaches_inside_a_run_context() -> None:
    bad = []
    for base in (CORE, PLUGINS):
        for path in sorted(base.rglob("*.py")):
            if path.is_relative_to(CORE / "run"):
                continue
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "ctx._parts" in line or "ctx._scoping" in line or "ctx._session" in line:
                    bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_the_core_tests_mirror_cores_packages() -> None:
    packages = {p.name for p in CORE.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in (ROOT / "tests" / "core").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= packages, f"tests/core folders with no core package of that name: {sorted(folders - packages)}"


def test_shared_test_helpers_live_in_support() -> None:
    stray = sorted(p.name for p in (ROOT / "tests").glob("*.py") if not p.name.startswith("test_"))
    assert stray == ["conftest.py"], f"shared test helpers go in tests/support/: {stray}"

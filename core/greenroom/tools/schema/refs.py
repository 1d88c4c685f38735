"""The references in a parameter schema: each one resolves, and none loops.

References resolve as jsonschema resolves them (each against the ``$id`` scopes above it,
remote targets never fetched). A loop of references that never descends into the
arguments (``{"$ref": "#"}`` at the top, or two definitions that refer to each other
through ``allOf``) makes validation recurse until the stack runs out, whatever the
arguments are, so it is a problem too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import referencing
import referencing.exceptions
from jsonschema_specifications import REGISTRY as DIALECTS

from greenroom.tools.schema.problem import Path, SchemaFault, SchemaProblem, Scopes, pointer

# keywords whose subschemas apply to the same value as the schema that holds them
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")

Reference = tuple[str, Path, Scopes, Mapping[str, Any]]
"""A ``$ref`` (or ``$dynamicRef``): its text, where it is, its scopes, the subschema holding it."""


def reference_problem(
    schema: Mapping[str, Any],
    specification: referencing.Specification[Any],
    refs: Sequence[Reference],
    nodes: Sequence[Mapping[str, Any]],
) -> SchemaProblem | None:
    """The first reference that resolves to nothing, or a loop of references; ``nodes``
    are every subschema of ``schema``."""
    try:
        root = DIALECTS.resolver_with_root(specification.create_resource(schema))
    except Exception as exc:  # an $id that is not a URI
        return SchemaProblem(SchemaFault.DANGLING_REF, "#/$id", f"the schema's $id cannot be used: {exc}")
    targets: dict[int, list[tuple[Any, Path]]] = {}
    for ref, path, scopes, holder in refs:
        resolver = root
        try:
            for scope in scopes:
                resolver = resolver.in_subresource(specification.create_resource(scope))
            target = resolver.lookup(ref).contents
        except (referencing.exceptions.PointerToNowhere, referencing.exceptions.NoSuchAnchor):
            return SchemaProblem(SchemaFault.DANGLING_REF, pointer(path), f"{ref!r} points to nothing in the schema")
        except referencing.exceptions.Unresolvable:
            return SchemaProblem(
                SchemaFault.DANGLING_REF,
                pointer(path),
                f"{ref!r} is not part of the schema (remote schemas are never fetched)",
            )
        except Exception as exc:
            return SchemaProblem(SchemaFault.DANGLING_REF, pointer(path), f"{ref!r} cannot be resolved: {exc}")
        targets.setdefault(id(holder), []).append((target, path))
    return _loop(nodes, targets)


def _in_place(node: Mapping[str, Any]) -> Iterator[Any]:
    for key in _IN_PLACE_LISTS:
        seq = node.get(key)
        if isinstance(seq, list):
            yield from seq
    for key in _IN_PLACE_ONE:
        if key in node:
            yield node[key]
    for key in _IN_PLACE_MAPS:
        table = node.get(key)
        if isinstance(table, Mapping):
            yield from (sub for sub in table.values() if isinstance(sub, Mapping))


def _loop(nodes: Sequence[Mapping[str, Any]], targets: dict[int, list[tuple[Any, Path]]]) -> SchemaProblem | None:
    """A cycle among the subschemas that apply to one value (in-place keywords and
    references), found by an iterative depth-first search; reported at a reference on it."""
    known = {id(n): n for n in nodes}
    done: set[int] = set()
    for start in nodes:
        if id(start) in done:
            continue
        # each frame: a node, how it was entered (the reference's path, or None), its edges left
        stack: list[tuple[int, Path, Iterator[tuple[Any, Path]]]] = [(id(start), None, _edges(start, targets))]
        on_path = {id(start)}
        while stack:
            node_id, _, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                stack.pop()
                on_path.discard(node_id)
                done.add(node_id)
                continue
            child, via = step
            child_id = id(child)
            if child_id not in known or child_id in done:
                continue  # a boolean, a meta-schema, or a subschema already cleared
            if child_id in on_path:
                where = via  # the reference that closes the loop, or the last one on it
                for frame_id, entered, _ in reversed(stack):
                    if where is not None or frame_id == child_id:
                        break
                    where = entered
                return SchemaProblem(
                    SchemaFault.REF_CYCLE,
                    pointer(where),
                    "references lead back here without descending into the arguments, so validating never ends",
                )
            on_path.add(child_id)
            stack.append((child_id, via, _edges(known[child_id], targets)))
    return None


def _edges(node: Mapping[str, Any], targets: dict[int, list[tuple[Any, Path]]]) -> Iterator[tuple[Any, Path]]:
    yield from ((sub, None) for sub in _in_place(node))
    yield from targets.get(id(node), ())

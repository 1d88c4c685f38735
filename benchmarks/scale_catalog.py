"""Catalogs of 1k to 100k tools for ``benchmarks/scale.py``, built at run time from the
real datasets in ``../shared/datasets`` (never copied into the project).

Every tool of every dataset is kept with its description and schema. Tools are grouped
the way a large deployment is: seal_tools by its top-level domain (``Healthcare``,
``Logistics``: about 28 tools each), metatool's two plugin sets and the GitHub MCP server
as one group each. A catalog takes whole groups in a fixed shuffled order, and once every
group is used it starts again with renamed copies (``name__r1``, group ``healthcare_r1``),
so a larger catalog has more groups of the same realistic size, as when an agent is given
more servers. Only the last group taken may be cut short.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("GREENROOM_DATASETS", ROOT.parent / "shared" / "datasets"))
SOURCES = ("seal_tools", "metatool", "github_mcp")
SEED = 14  # the number: any fixed seed keeps every run's catalogs identical


@dataclass
class Catalog:
    """One generated catalog: the JSONL file, what is in it, and configs that use it."""

    size: int
    folder: Path
    path: Path
    names: list[str]
    groups: dict[str, int]  # group id -> tool count
    texts: list[str]  # "name description", the plain BM25 baseline's documents
    configs: dict[str, Path] = field(default_factory=dict)


def available(datasets: Path = DATASETS) -> list[str]:
    """The source datasets present (a machine without them skips the benchmark)."""
    return [s for s in SOURCES if (datasets / s / "tools.jsonl").exists()]


def slug(text: str) -> str:
    """A group id a model can type: lower case, words joined by ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "other"


def _group_of(source: str, record: dict[str, Any]) -> str:
    group = str(record.get("group") or "")
    if source == "seal_tools":
        return slug(group.split("/", 1)[0])  # "Healthcare/Nursing" -> healthcare
    if source == "metatool":
        return slug(f"metatool {group}")
    return slug(source.removesuffix("_mcp"))


def base_groups(datasets: Path = DATASETS) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every dataset's tools by group, in a fixed shuffled order, each name once."""
    groups: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for source in available(datasets):
        with (datasets / source / "tools.jsonl").open(encoding="utf-8") as lines:
            for line in lines:
                if not line.strip():
                    continue
                record = json.loads(line)
                if record["name"] in seen:
                    continue  # a repeated name would make the catalog loader drop one
                seen.add(record["name"])
                groups.setdefault(_group_of(source, record), []).append(record)
    order = sorted(groups)
    random.Random(SEED).shuffle(order)
    return [(g, groups[g]) for g in order]


def _repeated(base: list[tuple[str, list[dict[str, Any]]]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    rep = 0
    while True:
        for group, records in base:
            if rep == 0:
                yield group, records
                continue
            renamed = [{**r, "name": f"{r['name']}__r{rep}"} for r in records]
            yield f"{group}_r{rep}", renamed
        rep += 1


def build(size: int, folder: Path, datasets: Path = DATASETS) -> Catalog:
    """Write a catalog of ``size`` tools to ``folder/catalog.jsonl``."""
    base = base_groups(datasets)
    if not base:
        raise FileNotFoundError(f"no tools.jsonl under {datasets}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "catalog.jsonl"
    names: list[str] = []
    texts: list[str] = []
    counts: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as out:
        for group, records in _repeated(base):
            for record in records[: size - len(names)]:
                desc = str(record.get("description") or "")
                line = {"name": record["name"], "description": desc, "parameters": record.get("parameters")}
                out.write(json.dumps({**line, "group": group}) + "\n")
                names.append(record["name"])
                texts.append(f"{record['name']} {desc}")
                counts[group] = counts.get(group, 0) + 1
            if len(names) >= size:
                break
    return Catalog(size, folder, path, names, counts, texts)


def write_config(catalog: Catalog, label: str, *, max_steps: int = 20, deferred: str = "", search: str = "") -> Path:
    """A config of the catalog with the offline ``scripted`` model: it answers at once, or,
    given ``search``, makes that ToolSearch first. ``deferred`` is TOML for
    ``[plugins.deferred-tools]``. Every plugin keeps its defaults."""
    model = "scripted"
    if search:
        script = catalog.folder / f"{label}.jsonl"
        turns = [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": search}}]}, {"text": "done"}]
        script.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
        model = f"scripted:{script.name}"
    text = f'[agent]\nid = "scale-{catalog.size}"\nmodel = "{model}"\nmax_steps = {max_steps}\n\n'
    text += f'[tools]\ncatalogs = ["{catalog.path.name}"]\n'
    if deferred:
        text += f"\n[plugins.deferred-tools]\n{deferred}\n"
    path = catalog.folder / f"{label}.toml"
    path.write_text(text, encoding="utf-8")
    catalog.configs[label] = path
    return path


def queries(count: int, datasets: Path = DATASETS) -> list[str]:
    """``count`` user requests from the datasets that have queries, mixed in a fixed order."""
    found: list[str] = []
    for source in SOURCES:
        path = datasets / source / "queries.jsonl"
        if path.exists():
            with path.open(encoding="utf-8") as lines:
                found += [json.loads(line)["query"] for line in lines if line.strip()]
    if not found:
        found = ["search the web", "send an email", "weather forecast"]
    rng = random.Random(SEED)
    return [found[rng.randrange(len(found))] for _ in range(count)]


def misspell(name: str, rng: random.Random) -> str:
    """``name`` with two neighbouring letters swapped, or a letter dropped: a typo a model
    makes, close enough for a "did you mean" to find."""
    if len(name) < 4:
        return name + "x"
    i = rng.randrange(1, len(name) - 2)
    if rng.random() < 0.5:
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    return name[:i] + name[i + 1 :]

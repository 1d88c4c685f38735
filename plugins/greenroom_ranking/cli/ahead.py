"""``greenroom rank index``: a catalog's search indexes built ahead of its first search.

A run builds its indexes at its first search (seconds at 100,000 tools) and keeps them in
the index store (``store.IndexStore``), keyed by a digest of the tools and the settings.
Built ahead, by a deploy step, they are read instead. What is indexed is what a run
indexes: the searchable tools (``corpus.searchable``) of

- a config's runtime, built as ``greenroom run`` builds it (its tools, catalogs, groups
  and MCP servers' listings; the model is not built): the catalog of a preview run, what
  a run of that config may use, indexed by the search-ranking plugin that config sets up;
- a catalog file, read as ``[tools] catalogs`` reads it, with the default ranking
  settings: what a run of a config that lists this one catalog and nothing else indexes.

Both go through the engine a run uses, so the store's keys are the ones a run computes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import attrs

from greenroom import ConfigError, RunKind, ToolDescriptor, ToolSet, abuild_runtime, load_catalog
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.corpus import searchable
from greenroom_ranking.engine import RankingEngine

CATALOG_SUFFIXES = (".jsonl", ".json")

Step = Callable[[str, int, int], None]
"""Told at each step: what it does, how many steps are done, how many there are."""


class SourceError(Exception):
    """The path is not a config or catalog this can read (the message says where and why)."""


class NothingIndexed(Exception):
    """Nothing a run would read could be indexed (the message says why)."""


@attrs.frozen
class Indexed:
    """What ``index_ahead`` did."""

    tools: int
    built: tuple[str, ...]  # parts and rankers built now
    cached: tuple[str, ...]  # parts found in the store already
    folder: Path
    seconds: float

    def summary(self) -> str:
        built = ", ".join(self.built) or "none"
        cached = ", ".join(self.cached) or "none"
        return (
            f"{self.tools:,} tools indexed in {self.seconds:.1f} s: built {built}; "
            f"already cached {cached}; in {self.folder}"
        )


def index_ahead(path: Path, step: Step) -> Indexed:
    """Build (or find) the indexes a run over ``path`` (a config or a catalog) reads."""
    started = time.perf_counter()
    if path.suffix == ".toml":
        step(f"reading {path.name} (its tools and MCP servers)", 0, 1)
        engine, catalog = anyio.run(_of_config, path)
    elif path.suffix in CATALOG_SUFFIXES:
        step(f"reading {path.name}", 0, 1)
        engine, catalog = RankingEngine(RankingConfig()), _of_catalog(path)
    else:
        raise SourceError(f"{path}: expected a config (.toml) or a catalog ({', '.join(CATALOG_SUFFIXES)})")
    tools = searchable(catalog)
    if not tools:
        raise NothingIndexed(f"{path}: no tool a search could find (none, or every one is never deferred)")
    if not engine.config.index_cache:
        raise NothingIndexed(f"{path}: plugins.search-ranking.index_cache is off: a run would not read indexes")
    cache = engine.cache
    corpus = cache.view(tools).corpus
    rankers = engine.config.rankers
    for done, ranker in enumerate(rankers, 1):
        step(f"indexing {len(tools):,} tools: {ranker}", done, len(rankers) + 1)
        cache.index(corpus, ranker)
    unwritten = [key.split(":", 1)[0] for key in corpus.parts if not cache.store.file(key).exists()]
    if unwritten:
        raise NothingIndexed(f"{', '.join(unwritten)} could not be written to {cache.store.path}")
    return Indexed(len(tools), tuple(cache.builds), tuple(cache.loads), cache.store.path, time.perf_counter() - started)


async def _of_config(path: Path) -> tuple[RankingEngine, Sequence[ToolDescriptor]]:
    """The config's ranking engine, and the catalog a run of it may use."""
    if not path.is_file():
        raise SourceError(f"{path}: no such file")
    try:
        rt = await abuild_runtime(path, offline_model=True)
    except ConfigError as exc:
        raise SourceError(str(exc)) from None
    except Exception as exc:  # a plugin or a server failing to start: said, never a traceback
        raise SourceError(f"{path}: {type(exc).__name__}: {exc}") from None
    try:
        plugin = rt.host.plugin("search-ranking")
        if plugin is None:
            raise NothingIndexed(f"{path}: the search-ranking plugin is not enabled: no search would read indexes")
        run = rt.start_run(kind=RunKind.PREVIEW)
        try:
            await run.start()
            catalog = run.ctx.catalog()
        finally:
            await run.end(run.outcome_of("preview"))
        engine: RankingEngine = plugin.engine
        return engine, catalog
    finally:
        await rt.aclose()


def _of_catalog(path: Path) -> list[ToolDescriptor]:
    """The usable tools of a catalog file (a tool whose schema is invalid is in no run's catalog)."""
    try:
        return ToolSet(load_catalog(path)).descriptors()
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:  # unreadable, or not a catalog (CatalogError is a ValueError)
        raise SourceError(str(exc) if str(path) in str(exc) else f"{path}: {exc}") from None

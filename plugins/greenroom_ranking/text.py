"""Text for lexical rankers: identifier splitting, stop words, stemming, tool documents.

Tool names are identifiers (``getWaterQuality``, ``github__create_issue``,
``list-pull-requests``); a user's words are not. ``split_identifier`` turns a name into
the words a person would type, so BM25 can match ``water quality`` against
``getWaterQuality``. Stemming uses PyStemmer's Snowball English stemmer, stop words are
bm25s' English list.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from greenroom import ToolDescriptor
from greenroom.kit import peek_schema

# camelCase / PascalCase / acronym boundaries: "getHTTPResponse2" -> get HTTP Response 2
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# the same, but an acronym's plural stays one word: "NOTAMs" -> NOTAMs, not NOTA Ms
_CAMEL_PLURAL = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Words that carry no meaning in a request to find a tool. bm25s' English list plus a
# few conversational fillers ("please tell me ...") and pronouns.
_EXTRA_STOP = (
    "i",
    "me",
    "my",
    "we",
    "our",
    "you",
    "your",
    "he",
    "she",
    "him",
    "her",
    "its",
    "them",
    "us",
    "can",
    "could",
    "would",
    "should",
    "will",
    "shall",
    "may",
    "might",
    "must",
    "do",
    "does",
    "did",
    "please",
    "tell",
    "want",
    "need",
    "like",
    "help",
    "know",
    "let",
    "also",
    "some",
    "any",
    "all",
    "what",
    "which",
    "who",
    "whom",
    "how",
    "when",
    "where",
    "why",
    "am",
    "been",
    "being",
    "have",
    "has",
    "had",
    "from",
    "about",
    "so",
    "than",
    "too",
    "very",
    "just",
    "up",
    "out",
    "over",
    "under",
    "give",
    "show",
    "provide",
    "using",
    "use",
    "via",
    "etc",
    "eg",
    "e",
    "g",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
)


@functools.lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """English stop words (bm25s' list and conversational fillers)."""
    return frozenset(_bm25s_stop_words()) | frozenset(_EXTRA_STOP)


def _bm25s_stop_words() -> Iterable[str]:
    """bm25s' English list, read from its module file without importing the package: the
    package brings scipy (about 0.15 s), which a process that reads its indexes from disk
    and ranks with numpy never needs."""
    loaded = sys.modules.get("bm25s.stopwords")
    if loaded is None:
        try:
            package = importlib.util.find_spec("bm25s")
            origin = package.origin if package is not None else None
            spec = importlib.util.spec_from_file_location(
                "greenroom_ranking._bm25s_stopwords", Path(origin).with_name("stopwords.py") if origin else ""
            )
            if spec is None or spec.loader is None:
                raise ImportError("bm25s.stopwords not found")
            loaded = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded)
        except (ImportError, OSError):
            loaded = importlib.import_module("bm25s.stopwords")
    words: Iterable[str] = loaded.STOPWORDS_EN
    return words


@functools.lru_cache(maxsize=1)
def stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def split_identifier(name: str) -> list[str]:
    """Split a tool name into lowercase words: snake_case, kebab-case, ``__`` server
    prefixes, dots, camelCase, PascalCase, acronyms and digits."""
    out: list[str] = []
    for chunk in _WORD.findall(name):
        parts = _CAMEL.findall(chunk) or [chunk]
        out.extend(p.lower() for p in parts)
    return out


def words(text: str) -> list[str]:
    """Lowercase words of free text; identifiers inside it are split too."""
    return split_identifier(text)


def analyze(text: str, *, stem: bool = True, joined: bool = False) -> list[str]:
    """Words -> stop words removed -> stemmed: the analysis both the index and the query use.
    ``joined``: as ``analyze_documents(joined=True)``."""
    if joined:
        return analyze_documents([text], stem=stem, joined=True)[0]
    stop = stop_words()
    toks = [w for w in words(text) if w not in stop and len(w) > 1]
    if stem and toks:
        toks = list(stemmer().stemWords(toks))
    return toks


def analyze_documents(texts: Iterable[str], *, stem: bool = True, joined: bool = False) -> list[list[str]]:
    """``analyze`` of each text, each distinct word analysed once: a catalog's documents
    share most of their words, and stemming is per word.

    ``joined`` (the fielded documents'): a mixed-case word split into parts ("YouTube",
    "LinkedIn", "getWeather") is also kept whole, lowercased, so "youtube" finds
    "YouTube" (whose parts are "you", a stop word, and "tube"), and an acronym's plural
    ("APIs", "NOTAMs") stays one word."""
    memo: dict[str, list[str]] = {}
    out: list[list[str]] = []
    for text in texts:
        tokens: list[str] = []
        for chunk in _WORD.findall(text):
            got = memo.get(chunk)
            if got is None:
                got = memo[chunk] = analyze_chunks((chunk,), stem=stem, joined=joined)[0]
            tokens.extend(got)
        out.append(tokens)
    return out


def analyze_chunks(chunks: Iterable[str], *, stem: bool = True, joined: bool = False) -> list[list[str]]:
    """``analyze_documents`` of single words (runs of letters and digits): each one's tokens."""
    stop = stop_words()
    stem_words = stemmer().stemWords
    camel = _CAMEL_PLURAL if joined else _CAMEL
    out: list[list[str]] = []
    for chunk in chunks:
        parts = camel.findall(chunk) or [chunk]
        lowered = [p.lower() for p in parts]
        if joined and len(parts) > 1 and not chunk.isdigit():
            lowered.append(chunk.lower())
        kept = [w for w in lowered if w not in stop and len(w) > 1]
        out.append(list(stem_words(kept)) if stem and kept else kept)
    return out


def keywords_form(text: str, n: int = 4) -> str:
    """A keywords-only form of a request: its first ``n`` content words, the way a model
    writes a ToolSearch query ("Tell me the water quality of the lake." -> "water quality lake")."""
    stop = stop_words()
    out: list[str] = []
    for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", text):
        lw = w.lower()
        if lw in stop or lw in out:
            continue
        out.append(lw)
        if len(out) >= n:
            break
    return " ".join(out)


def _mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # schemas are dicts: the exact type test spares the abstract-class check, which costs
    # more than the rest of a catalog's document building
    return type(value) is dict or isinstance(value, Mapping)


def _param_text(parameters: Mapping[str, Any] | None, depth: int = 0) -> Iterable[str]:
    if not _mapping(parameters) or depth > 3:
        return
    props = parameters.get("properties")
    if _mapping(props):
        for pname, spec in props.items():
            yield " ".join(split_identifier(str(pname)))
            if _mapping(spec):
                desc = spec.get("description")
                if isinstance(desc, str):
                    yield desc
                yield from _param_text(spec, depth + 1)
                items = spec.get("items")
                if _mapping(items):
                    yield from _param_text(items, depth + 1)


def tool_document(tool: ToolDescriptor, *, name_weight: int = 2, params: bool = True) -> str:
    """The text BM25 indexes for one tool: the split name (repeated ``name_weight`` times,
    a cheap field boost), the description, and parameter names and descriptions."""
    name = " ".join(split_identifier(tool.name))
    parts = [name] * max(1, name_weight) + [tool.description]
    if params:
        parts.extend(_param_text(peek_schema(tool.parameters)))  # an index reads every tool once
    return "\n".join(parts)

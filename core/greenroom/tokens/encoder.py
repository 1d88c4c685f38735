"""The o200k encoder greenroom counts with: bpe_openai's compiled Rust core, loaded on its
own (about 0.05 s) rather than through the package, whose ``__init__`` reads and tables every
vocabulary it ships (about 0.5 s and 140 MB) for a tiktoken interface greenroom does not use.

``Encoder`` keeps the counting rules of that interface's ``encode_ordinary`` (its limits, its
repair of lone surrogates), so a count is the one bpe_openai's own API gives.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

WHOLE_CHARS = 1_000_000
"""The encoder refuses texts of this many characters or more."""

MAX_TOKENS = 200_000
"""The encoder refuses texts that yield more tokens than this."""

_BINDINGS = "bpe_openai._bindings"


@functools.lru_cache(maxsize=1)
def _bindings() -> Any:
    """bpe_openai's compiled module, loaded from its file without running the package's
    ``__init__`` (which builds every vocabulary's tables)."""
    if _BINDINGS in sys.modules:
        return sys.modules[_BINDINGS]
    folder = _package_dir()
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_bindings{suffix}"
        spec = importlib.util.spec_from_file_location(_BINDINGS, path) if path.is_file() else None
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            # registered under its own name, so a later ``import bpe_openai`` reuses it
            # instead of initialising the extension a second time
            sys.modules[_BINDINGS] = module
            return module
    return importlib.import_module(_BINDINGS)  # a layout not foreseen: the slow way still works


def _package_dir() -> Path:
    spec = importlib.util.find_spec("bpe_openai")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bpe_openai is not installed", name="bpe_openai")
    return Path(next(iter(spec.submodule_search_locations)))


def _repaired(text: str) -> str:
    """``text`` as bpe_openai gives it to its core: a high and a low surrogate joined into
    their character, a lone surrogate (not UTF-8) replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class Encoder:
    """One encoding's Rust core, refusing what bpe_openai's ``encode_ordinary`` refuses (a
    text of 1,000,000 characters or more, or of more than 200,000 tokens) with ValueError."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._core = _bindings().tokenizer_for_encoding(name)
        self._vocabulary: list[bytes] | None = None

    def _call(self, method: Callable[[str], Any], text: str) -> Any:
        if len(text) >= WHOLE_CHARS:
            text = _repaired(text)  # joining surrogate pairs may bring it under the limit
            if len(text) >= WHOLE_CHARS:
                raise ValueError(f"the encoder refuses texts of {WHOLE_CHARS:,} characters or more")
        try:
            return method(text)
        except UnicodeEncodeError:  # a surrogate: repair only then, sparing every text a scan
            return method(_repaired(text))

    def count(self, text: str) -> int:
        n = self._call(lambda t: self._core.count_till_limit(t, MAX_TOKENS), text)
        if n is None:
            raise ValueError(f"the encoder refuses texts of more than {MAX_TOKENS:,} tokens")
        return int(n)

    def encode(self, text: str) -> list[int]:
        tokens: list[int] = list(self._call(self._core.encode, text))
        if len(tokens) > MAX_TOKENS:
            raise ValueError(f"the encoder refuses texts of more than {MAX_TOKENS:,} tokens")
        return tokens

    def decoded_chars(self, tokens: list[int]) -> int:
        """Characters the tokens spell; one cut in two at either end is not counted."""
        try:
            return len(self._core.decode(tokens))
        except ValueError:  # a character split between tokens: the core decodes only whole ones
            spelt = b"".join(self._token_bytes(t) for t in tokens)
            return len(spelt.decode("utf-8", errors="ignore"))

    def _token_bytes(self, token: int) -> bytes:
        if self._vocabulary is None:
            self._vocabulary = _vocabulary(self.name)
        return self._vocabulary[token]


def _vocabulary(name: str) -> list[bytes]:
    """Each token's bytes by rank, from the vocabulary file bpe_openai ships (read only when
    a cut splits a character: about 0.1 s, once)."""
    import base64  # imported here: most runs never need the vocabulary
    import gzip

    lines = gzip.decompress((_package_dir() / "data" / f"{name}.tiktoken.gz").read_bytes()).split()
    ranks = [int(r) for r in lines[1::2]]
    table = [b""] * (max(ranks, default=-1) + 1)
    for token, rank in zip(lines[0::2], ranks, strict=True):
        table[rank] = base64.b64decode(token)
    return table

"""The simulated agent's own judgement of which tool fits a part of a task.

Deliberately simple and independent of greenroom's ranking (which it is used to judge):
words of the tool's name and the first sentence of its description, stemmed, against
the words of the task's part. A tool *clearly fits* when most of its name's content
words appear in the part, the way a reader recognises ``getWarehouseCapacity`` in
"the capacity of warehouse 44", or when half of its description's (two words at least)
do, the way a reader takes "ResearchHelper - Find academic papers" for "papers on
this topic in academic journals".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

MAX_PARTS = 6
"""Parts a task is split into at most (sentences beyond are folded into the last)."""

CLEAR_FIT = 0.6
"""Share of a tool name's content words that must appear in a part for a clear fit."""

CLEAR_DESCRIPTION = 0.5
"""Or: share of its description's first-sentence content words (and at least
``MIN_WORDS`` of them) that must appear in the part."""

_WORD = re.compile(r"[A-Za-z]+|\d+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")

# words that name no tool: function words, and the verbs every other tool name starts with
_STOP = frozenset(
    """a an the and or of to in on for with by at from as is are be this that these those
    it its i me my we our you your please can could would should will kindly also then
    finally additionally need want like know some any all about into after before
    get set retrieve fetch obtain find provide give show tell make do using use via""".split()
)


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer, a dependency of greenroom

    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


@functools.lru_cache(maxsize=1 << 17)
def content_words(text: str) -> frozenset[str]:
    """Stemmed content words of free text or of an identifier (camelCase, snake_case)."""
    out: set[str] = set()
    for chunk in _WORD.findall(text):
        for part in _CAMEL.findall(chunk) or [chunk]:
            word = part.lower()
            if len(word) > 1 and word not in _STOP:
                out.add(_stem(word))
    return frozenset(out)


MIN_WORDS = 2
"""Content words a sentence needs to be a part ("Thank you." asks for no tool)."""


def split_parts(task: str) -> list[str]:
    """The task's sentences, each a part the agent covers with one tool at most (a
    sentence of fewer than ``MIN_WORDS`` content words is no part, unless it is all)."""
    sentences = [s.strip() for s in _SENTENCE.split(task.strip()) if s.strip()]
    asking = [s for s in sentences if len(content_words(s)) >= MIN_WORDS]
    sentences = asking or sentences
    if len(sentences) > MAX_PARTS:
        sentences = [*sentences[: MAX_PARTS - 1], " ".join(sentences[MAX_PARTS - 1 :])]
    return sentences or [task.strip()]


@attrs.frozen
class Known:
    """A tool the agent has a schema for: name, description and parameters."""

    name: str
    description: str
    parameters: Any

    @functools.cached_property
    def name_words(self) -> frozenset[str]:
        return content_words(self.name)

    @functools.cached_property
    def description_words(self) -> frozenset[str]:
        return content_words(self.description.split(". ")[0][:400])

    @functools.cached_property
    def parameter_words(self) -> frozenset[str]:
        props = self.parameters.get("properties") if isinstance(self.parameters, dict) else None
        return content_words(" ".join(props)) if isinstance(props, dict) else frozenset()


@attrs.frozen
class Fit:
    tool: Known
    name_share: float
    description_share: float
    parameter_share: float = 0.0
    description_common: int = 0

    @property
    def score(self) -> float:
        return 2 * self.name_share + self.description_share + 0.5 * self.parameter_share

    @property
    def clear(self) -> bool:
        return self.name_share >= CLEAR_FIT or (
            self.description_share >= CLEAR_DESCRIPTION and self.description_common >= MIN_WORDS
        )


def fit(part_words: frozenset[str], tool: Known) -> Fit:
    name, desc, params = tool.name_words, tool.description_words, tool.parameter_words
    common = len(desc & part_words)
    return Fit(
        tool,
        len(name & part_words) / len(name) if name else 0.0,
        common / len(desc) if desc else 0.0,
        len(params & part_words) / len(params) if params else 0.0,
        common,
    )


def best(part: str, tools: Iterable[Known], *, clear_only: bool) -> Known | None:
    """The tool that fits ``part`` best (highest score, then name), or None when nothing
    fits (or, with ``clear_only``, nothing fits clearly)."""
    words = content_words(part)
    fits = (fit(words, tool) for tool in tools)
    eligible = (f for f in fits if f.score > 0 and (f.clear or not clear_only))
    top = min(eligible, key=lambda f: (-f.score, f.tool.name), default=None)
    return None if top is None else top.tool


def choose(part: str, hits: Sequence[Known]) -> Known | None:
    """From search hits in rank order, the one a reader would take: the best fit (a tie
    goes to the higher-ranked hit); None when there are no hits."""
    words = content_words(part)
    top: tuple[float, Known] | None = None
    for tool in hits:
        score = fit(words, tool).score
        if top is None or score > top[0]:
            top = (score, tool)
    return None if top is None else top[1]

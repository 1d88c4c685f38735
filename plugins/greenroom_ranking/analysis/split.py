"""Long requests that ask for several tools: split into their parts, rank each, merge.

"Retrieve the properties of Aspirin. Then check the quality of vehicle JC12. Finally
create a video ad." names three tasks; ranked as one bag of words, the task with the
rarest words takes the top places and the others fall below the cut. A request is split
at sentence ends and at the words that start a next step ("then", "finally",
"additionally", ...); a part with fewer than ``min_words`` content words (a "Thanks!",
"Can you help me with that?") is dropped, and a request with fewer than two parts left
is ranked whole, as before: a keywords query costs one regular expression more.

Merge (score-normalised union): each part's fused scores and the whole request's are
scaled to 0..1 by their best; a tool's merged score is its best part score plus
``whole_weight`` times its whole-request score, so a tool that one part ranks first is
near the top whatever the other parts ask, and the whole request breaks ties between parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from greenroom_ranking.text import stop_words

_BOUNDARY = re.compile(
    r"(?<=[.!?;])\s+"  # a sentence end
    r"|[,;]?\s*\b(?:then|finally|additionally|lastly|afterwards|after that|next|also|furthermore|moreover)\b[,:]?\s*",
    re.IGNORECASE,
)
_CONTENT = re.compile(r"[^\W\d_][\w-]*")


def content_words(text: str) -> int:
    """Words of ``text`` that are not stop words."""
    stop = stop_words()
    return sum(1 for w in _CONTENT.findall(text) if w.lower() not in stop)


def split_request(text: str, min_words: int = 4, max_parts: int = 8) -> list[str]:
    """The parts of a request that asks for several things (each with at least
    ``min_words`` content words), or ``[]`` when it asks for one: then it is ranked whole.

    Short queries return at once: fewer than ``2 * min_words`` words cannot hold two parts.
    """
    if len(text.split()) < 2 * min_words:
        return []
    parts = [p.strip() for p in _BOUNDARY.split(text) if p and p.strip()]
    parts = [p for p in parts if content_words(p) >= min_words]
    if len(parts) < 2:
        return []
    return parts[:max_parts]


def merge(
    whole: tuple[np.ndarray, np.ndarray],
    parts: Sequence[tuple[np.ndarray, np.ndarray]],
    size: int,
    ranks: np.ndarray,
    whole_weight: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Score-normalised union of rankings given as (positions, scores) over a corpus of
    ``size`` tools: per tool, the best part's scaled score plus ``whole_weight`` times the
    whole request's. Best first, ties by name (``ranks``)."""
    best = np.zeros(size, dtype=np.float64)
    for positions, scores in parts:
        if scores.size and scores[0] > 0:
            np.maximum.at(best, positions, scores.astype(np.float64) / float(scores.max()))
    positions, scores = whole
    if whole_weight > 0 and scores.size and scores.max() > 0:
        best[positions] += whole_weight * scores.astype(np.float64) / float(scores.max())
    found = np.flatnonzero(best > 0)
    order = np.lexsort((ranks[found], -best[found]))
    return found[order], best[found][order]

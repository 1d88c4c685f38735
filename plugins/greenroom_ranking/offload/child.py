"""The child process of a side build: reads a task and its inputs on stdin, writes the
part's arrays on stdout (both pickled; its parent is the only other end of the pipes).

It imports numpy and the substring index, nothing of greenroom's core or plugins: it is
started while its parent builds another part, and starts in about 0.2 s.

    python -m greenroom_ranking.offload.child < task > arrays
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from greenroom_ranking.substrings import SubstringIndex


def text_indexes(names: Sequence[str], descriptions: Sequence[str]) -> tuple[SubstringIndex, SubstringIndex]:
    """The text part's two indexes: of the lowercase names and of the lowercase
    descriptions (``corpus.CorpusText``), built here or in a side build alike."""
    # one text at a time: the lowercase descriptions of 100,000 tools are never all held
    return (
        SubstringIndex.build(n.lower() for n in names),
        SubstringIndex.build(d.lower() for d in descriptions),
    )


def text_arrays(names: Sequence[str], descriptions: Sequence[str]) -> dict[str, np.ndarray]:
    """``text_indexes`` as the arrays ``CorpusText.to_arrays`` gives."""
    name_index, description_index = text_indexes(names, descriptions)
    return {**name_index.to_arrays("name"), **description_index.to_arrays("description")}


TASKS: dict[str, Callable[..., dict[str, np.ndarray]]] = {"text": text_arrays}
"""What a side build can make, by part name, from the inputs its parent sends."""


def main() -> int:
    task, inputs = pickle.load(sys.stdin.buffer)
    arrays: Any = TASKS[task](*inputs)
    sys.stdout.buffer.write(pickle.dumps(arrays, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

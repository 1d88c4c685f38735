"""The child process of a side build: reads a task, its inputs and where to store its
arrays on stdin, writes the arrays (and whether it stored them) on stdout, all pickled:
its parent is the only other end of the pipes.

It imports numpy and the substring index (and the index store, to write them): it is
started while its parent builds another part, and starts in about 0.2 s.

    python -m greenroom_ranking.offload.child < task > arrays
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
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
    task, inputs, store = pickle.load(sys.stdin.buffer)
    arrays: Any = TASKS[task](*inputs)
    stored = False
    if store is not None:  # written before the answer: the parent's build lock covers the write
        from greenroom_ranking.store import IndexStore

        folder, key = store
        stored = IndexStore(Path(folder)).save(key, arrays)
    pickle.dump((arrays, stored), sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

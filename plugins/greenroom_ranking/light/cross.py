"""A BERT cross-encoder in numpy: one relevance score per (query, text) pair.

A cross-encoder reads the query and a tool's text together, ``[CLS] query [SEP] text
[SEP]`` with token type 0 then 1, so every query word attends to every text word. Its
score is Hugging Face's ``BertForSequenceClassification`` head over the encoder: the
pooler (a dense layer and tanh over the [CLS] state), then a linear classifier. Models of
the MS MARCO MiniLM family have one output, a relevance logit; the order of the logits
is the ranking. Pairs are cut to ``max_length`` tokens, the longer side first, as the
tokenizer's ``longest_first`` strategy does for sentence-transformers' ``CrossEncoder``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from greenroom_ranking.light.bert import BertModel, linear


class CrossEncoderError(ValueError):
    """A model folder the torch-free cross-encoder cannot run, and why."""


def check_model_dir(model_dir: Path) -> None:
    """Raise ``CrossEncoderError`` naming what is missing or unsupported in ``model_dir``."""
    if not model_dir.is_dir():
        raise CrossEncoderError(f"{model_dir} is not a folder")
    missing = [n for n in ("config.json", "tokenizer.json", "model.safetensors") if not (model_dir / n).is_file()]
    if missing:
        raise CrossEncoderError(f"{model_dir} has no {', '.join(missing)} (a Hugging Face model folder has them)")
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CrossEncoderError(f"{model_dir / 'config.json'} is not readable JSON: {exc}") from exc
    kind = config.get("model_type") if isinstance(config, dict) else None
    if kind != "bert":
        raise CrossEncoderError(
            f"{model_dir} holds a {kind!r} model; the torch-free cross-encoder runs BERT models "
            "(such as cross-encoder/ms-marco-MiniLM-L6-v2)"
        )


class BertCrossEncoder(BertModel):
    """Relevance scores of (query, text) pairs from a BERT sequence-classification checkpoint."""

    def __init__(self, model_dir: Path, *, max_length: int | None = None) -> None:
        check_model_dir(model_dir)
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        limit = int(config["max_position_embeddings"])
        super().__init__(model_dir, max_seq_length=min(max_length or limit, limit))
        self.tokenizer.enable_truncation(max_length=self.max_seq_length, strategy="longest_first")
        w = self.weights
        missing = [k for k in ("pooler.dense.weight", "classifier.weight") if k not in w]
        if missing:
            raise CrossEncoderError(
                f"{model_dir / 'model.safetensors'} has no {', '.join(missing)}: "
                "it is not a sequence-classification (cross-encoder) checkpoint"
            )
        self.pooler = (w["pooler.dense.weight"], w["pooler.dense.bias"])
        self.classifier = (w["classifier.weight"], w["classifier.bias"])

    def score(self, query: str, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """One logit per text (the first output of the classifier), in the order given."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        encoded = self.tokenizer.encode_batch([(query, t) for t in texts])
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i].ids))
        out = np.empty(len(encoded), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            states, _mask = self.hidden_states([encoded[i].ids for i in chunk], [encoded[i].type_ids for i in chunk])
            pooled = np.tanh(linear(states[:, 0, :], *self.pooler))
            out[chunk] = linear(pooled, *self.classifier)[:, 0]
        return out

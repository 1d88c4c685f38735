"""Torch-free BERT models: the bundled all-MiniLM-L6-v2 sentence encoder (the ``embeddings``
extra) and cross-encoders for the rerank stage (the ``rerank`` extra).

``bert`` runs the model's six-layer BERT encoder as a numpy forward pass over its
safetensors weights, with the Hugging Face ``tokenizers`` package reading the model's own
``tokenizer.json``; mean pooling and L2 normalisation follow, as sentence-transformers
does for this model. The vectors match sentence-transformers' to a cosine of 0.9999 or
better (tests/plugins/ranking/test_light_encoder.py, docs/ranking.md). ``cross`` puts
Hugging Face's sequence-classification head (pooler, classifier) on the same encoder
for (query, text) pairs; its scores match sentence-transformers' ``CrossEncoder``
(tests/plugins/ranking/test_rerank.py). ``threads`` holds numpy's BLAS to one thread while
a query is encoded or scored.
"""

from greenroom_ranking.light.bert import BertEncoder, load_bundled

__all__ = ["BertEncoder", "load_bundled"]

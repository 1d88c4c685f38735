"""A torch-free sentence encoder for the bundled all-MiniLM-L6-v2 (the ``embeddings`` extra).

``bert`` runs the model's six-layer BERT encoder as a numpy forward pass over its
safetensors weights, with the Hugging Face ``tokenizers`` package reading the model's own
``tokenizer.json``; mean pooling and L2 normalisation follow, as sentence-transformers
does for this model. The vectors match sentence-transformers' to a cosine of 0.9999 or
better (tests/plugins/ranking/test_light_encoder.py, docs/ranking.md).
"""

from greenroom_ranking.light.bert import BertEncoder, load_bundled

__all__ = ["BertEncoder", "load_bundled"]

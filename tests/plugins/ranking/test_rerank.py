"""The torch-free cross-encoder and the rerank stage (``greenroom_ranking.light.cross``,
``greenroom_ranking.rerank``).

No trained cross-encoder can be fetched here, so the model is a small BERT
sequence-classification checkpoint with seeded random weights, written as a Hugging Face
folder would hold it (the bundled MiniLM's tokenizer, ``config.json``,
``model.safetensors``). Its scores are checked against sentence-transformers'
``CrossEncoder`` where torch is installed (skipped elsewhere); the rest checks what a
user relies on: padding and pairing do not change a pair's score, long texts are cut,
the head is reordered by the model and the tail dropped, and bad folders are named.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.rerank_testutil import write_model

from greenroom import ScoredTool, SearchQuery, ToolDescriptor
from greenroom_ranking.extra import missing_extra

pytestmark = pytest.mark.skipif(
    missing_extra() is not None or importlib.util.find_spec("safetensors") is None,
    reason="needs the embeddings extra (tokenizers, the bundled tokenizer) and safetensors (dev extra)",
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model(tmp_path_factory.mktemp("cross") / "model")


QUERY = "send an email to my manager about tomorrow's meeting"
TEXTS = [
    "send email: Send an email message to a recipient",
    "search email: Find emails in a mailbox by sender or subject",
    "get weather: The weather forecast for a city",
    "create calendar event: Add a meeting to the calendar",
    "x",
]


def test_a_pairs_score_does_not_depend_on_its_batch(model_dir: Path) -> None:
    from greenroom_ranking.light.cross import BertCrossEncoder

    model = BertCrossEncoder(model_dir)
    together = model.score(QUERY, TEXTS)
    alone = np.array([model.score(QUERY, [t])[0] for t in TEXTS])
    np.testing.assert_allclose(together, alone, rtol=1e-5, atol=1e-6)
    assert len(set(np.round(together, 6))) == len(TEXTS)  # the texts are told apart


def test_query_and_text_are_read_as_a_pair(model_dir: Path) -> None:
    from greenroom_ranking.light.cross import BertCrossEncoder

    model = BertCrossEncoder(model_dir)
    encoded = model.tokenizer.encode(QUERY, TEXTS[0])
    assert encoded.type_ids[0] == 0 and encoded.type_ids[-1] == 1  # text segment has type 1
    swapped = model.score(TEXTS[0], [QUERY])[0]
    assert not np.isclose(model.score(QUERY, [TEXTS[0]])[0], swapped)


def test_a_megabyte_text_is_cut_to_max_length(model_dir: Path) -> None:
    from greenroom_ranking.light.cross import BertCrossEncoder

    model = BertCrossEncoder(model_dir, max_length=64)
    huge = "weather forecast " * 60_000  # about a megabyte
    assert len(model.tokenizer.encode(QUERY, huge).ids) == 64
    assert np.isfinite(model.score(QUERY, [huge, TEXTS[0]])).all()


def test_rerank_orders_the_head_by_the_model_and_drops_the_tail(model_dir: Path) -> None:
    from greenroom_ranking.rerank import Reranker

    reranker = Reranker(model_dir)
    texts = {f"tool_{i}": t for i, t in enumerate(TEXTS)}
    fused = [ScoredTool(name, 10.0 - i) for i, name in enumerate(texts)]
    got = reranker.rerank(QUERY, fused, texts.__getitem__, depth=4)
    relevance = reranker.scores(QUERY, TEXTS[:4])
    want = sorted(zip(list(texts)[:4], relevance, strict=True), key=lambda p: -p[1])
    assert [s.name for s in got] == [name for name, _ in want]
    assert [s.score for s in got] == pytest.approx([float(r) for _, r in want])
    assert all(0.0 < s.score < 1.0 for s in got)
    assert "tool_4" not in {s.name for s in got}  # below the depth
    assert reranker.pairs_scored == 8  # 4 for the rerank, 4 for the check; never the tail
    assert reranker.rerank(QUERY, [], texts.__getitem__, depth=4) == []


def test_folders_it_cannot_run_are_named(tmp_path: Path) -> None:
    from greenroom_ranking.light.cross import BertCrossEncoder, CrossEncoderError

    with pytest.raises(CrossEncoderError, match="is not a folder"):
        BertCrossEncoder(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CrossEncoderError, match=r"has no config\.json, tokenizer\.json, model\.safetensors"):
        BertCrossEncoder(tmp_path / "empty")
    with pytest.raises(CrossEncoderError, match="holds a 'xlm-roberta' model"):
        BertCrossEncoder(write_model(tmp_path / "xlmr", model_type="xlm-roberta"))
    with pytest.raises(CrossEncoderError, match="not a sequence-classification"):
        BertCrossEncoder(write_model(tmp_path / "encoder-only", head=False))


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None, reason="sentence-transformers absent")
def test_scores_match_sentence_transformers_cross_encoder(model_dir: Path) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    from greenroom_ranking.light.cross import BertCrossEncoder

    reference = CrossEncoder(str(model_dir), device="cpu", local_files_only=True, max_length=256)
    want = reference.predict([(QUERY, t) for t in TEXTS], activation_fn=torch.nn.Identity())
    got = BertCrossEncoder(model_dir, max_length=256).score(QUERY, TEXTS)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


CATALOG = [
    ToolDescriptor("send_email", "Send an email message to a recipient."),
    ToolDescriptor("search_email", "Find emails in a mailbox by sender or subject."),
    ToolDescriptor("draft_email", "Save an email as a draft without sending it."),
    ToolDescriptor("email_rules", "Manage the rules that file incoming email."),
    ToolDescriptor("get_weather", "The weather forecast for a city."),
    ToolDescriptor("create_event", "Add a meeting to the calendar."),
]


def test_a_rerank_model_that_cannot_run_is_a_config_error_at_its_key(tmp_path: Path) -> None:
    from greenroom_ranking import RankingConfig

    with pytest.raises(ValueError, match=r"plugins\.search-ranking\.rerank_model: .*absent is not a folder"):
        RankingConfig(rerank_model=str(tmp_path / "absent"))
    with pytest.raises(ValueError, match=r"rerank_model: .*holds a 'xlm-roberta' model"):
        RankingConfig(rerank_model=str(write_model(tmp_path / "xlmr", model_type="xlm-roberta")))


def test_a_search_returns_the_head_of_the_fusion_in_the_models_order(model_dir: Path) -> None:
    from greenroom_ranking import RankingConfig, RankingEngine
    from greenroom_ranking.embeddings import embedding_text
    from greenroom_ranking.rerank import Reranker

    query = SearchQuery.parse("email", max_results=2)
    plain = RankingEngine(RankingConfig(index_cache=False), shared=False)
    head = plain.search(SearchQuery.parse("email", max_results=4), CATALOG)
    assert len(head) == 4  # the fusion has more than the search returns
    reranking = RankingEngine(
        RankingConfig(index_cache=False, rerank_model=str(model_dir), rerank_depth=4), shared=False
    )
    got = reranking.search(query, CATALOG)
    texts = {t.name: embedding_text(t) for t in CATALOG}
    want = Reranker(model_dir).rerank("email", head, texts.__getitem__, 4)[:2]
    assert [(s.name, round(s.score, 6)) for s in got] == [(s.name, round(s.score, 6)) for s in want]
    # max_results larger than the depth: the depth grows to it, nothing below is lost
    wide = reranking.search(SearchQuery.parse("email", max_results=6), CATALOG)
    assert {s.name for s in wide} == {s.name for s in plain.search(SearchQuery.parse("email", max_results=6), CATALOG)}


def test_a_reranking_plugin_runs_its_fusion_hook_off_the_event_loop(model_dir: Path) -> None:
    from greenroom_ranking import RankingConfig, SearchRankingPlugin

    assert SearchRankingPlugin(RankingConfig()).nonblocking  # the default fuses on the loop: it only computes
    assert not SearchRankingPlugin(RankingConfig(rerank_model=str(model_dir))).nonblocking


def test_the_default_search_never_loads_the_cross_encoder() -> None:
    code = (
        "import sys\n"
        "from greenroom import SearchQuery, ToolDescriptor\n"
        "from greenroom_ranking import RankingConfig, RankingEngine\n"
        "tools = [ToolDescriptor('send_email', 'Send an email.'), ToolDescriptor('get_weather', 'Weather.')]\n"
        "found = RankingEngine(RankingConfig(index_cache=False)).search(SearchQuery.parse('email'), tools)\n"
        "assert [s.name for s in found] == ['send_email'], found\n"
        "model = ('greenroom_ranking.light', 'greenroom_ranking.rerank')\n"
        "print(sorted(m for m in sys.modules if m.startswith(model)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

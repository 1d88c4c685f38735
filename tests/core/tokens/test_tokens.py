"""Token counts of any size: exact where the encoder could count the text whole, never an
error, and bounded work where a bound is all a caller needs."""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from greenroom._support import compact
from greenroom.tokens import counting as tokens
from greenroom.tokens.counting import (
    PIECE_CHARS,
    compact_json,
    count_tokens,
    count_tokens_upto,
    prefix_within,
    suffix_within,
    surely_within,
)


@functools.lru_cache(maxsize=1)
def reference() -> Any:
    """bpe_openai's own tiktoken-style API: slow to load, but none of greenroom's encoder."""
    import bpe_openai

    return bpe_openai.get_encoding(tokens.ENCODING)


def whole(text: str) -> int:
    """The encoder's own count of the whole text, with nothing of greenroom in between."""
    return len(reference().encode_ordinary(text))


def log_text(chars: int, seed: int = 7) -> str:
    """Log lines as a tool prints them: timestamps, levels, paths, numbers, JSON, unicode."""
    rng = random.Random(seed)
    words = [
        "2024-05-01T12:00:00.123Z", "INFO", "WARN", "ERROR", "GET", "/api/v1/items?page=2", "status=200",
        "latency_ms=12.5", "user_id=12345", '{"ok":true}', "connection", "reset", "by", "peer", "it's",
        "naïve", "café", "你好\uff0c世界。", "🙂", "\t", "  ", "Traceback", "x/y/z.py:42", "don't", "1,234.5",
    ]  # fmt: skip
    out: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(2, 14)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:chars]


# the characters the o200k pre-tokenizer treats differently: letters of each case, marks,
# digits, CJK, emoji, apostrophes, "/", every kind of blank and line break, a lone surrogate
TRICKY = st.sampled_from(
    ["a", "B", "é", "ß", "中", "文", "🙂", "'", "\u2019", "/", "=", "-", "_", ".", "\u0301", "\ud800", "\r", "\n",
     "\x1c", " ", "  ", "\t", "\u00a0", "1", "23", "'s", "'LL", "。", "\uff0c"]
)  # fmt: skip


def cuts(text: str, size: int) -> Iterator[tuple[str, bool]]:
    yield from tokens._pieces(text, size)


# ----------------------------------------------------------------------- exact counts


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(TRICKY, min_size=1, max_size=800), size=st.integers(8, 300))
@example(parts=["a"] * 5 + ["\u00a0", " ", "\u00a0", "a"], size=8)  # a cut in a run of blanks: 2 off
def test_pieces_cut_at_safe_places_add_up_to_the_whole_count(parts: list[str], size: int) -> None:
    text = "".join(parts)
    pieces = list(cuts(text, size))
    assert "".join(p for p, _ in pieces) == text
    total = sum(whole(p) for p, _ in pieces)
    unsafe = sum(1 for _, safe in pieces if not safe)
    if unsafe == 0:
        assert total == whole(text)
    else:  # a cut with no safe place near it: documented as a token or two off per cut
        # ("aaaaa\xa0 \xa0" + "a" counts 3 + 1, the whole 6: the blanks split apart)
        assert abs(total - whole(text)) <= 2 * unsafe


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(TRICKY, min_size=1, max_size=800), size=st.integers(8, 300))
def test_pieces_taken_from_the_end_cut_at_safe_places_too(parts: list[str], size: int) -> None:
    text = "".join(parts)
    end = len(text)
    total = 0
    exact = True
    while end > 0:
        start, safe = tokens._piece_start(text, end, size)
        assert start < end
        total += whole(text[start:end])
        exact = exact and safe
        end = start
    if exact:
        assert total == whole(text)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_log_text_just_under_the_encoders_limits_counts_exactly(seed: int) -> None:
    """Texts the encoder can still count whole (under 1,000,000 characters and 200,000
    tokens) get exactly its count, though greenroom counts them in pieces."""
    text = log_text(400_000, seed)
    assert len(text) > PIECE_CHARS and all(safe for _, safe in cuts(text, PIECE_CHARS))
    assert count_tokens(text) == whole(text)


def test_prose_of_almost_a_million_characters_counts_exactly() -> None:
    rng = random.Random(3)
    words = ["internationalization", "responsibilities", "characteristically", "telecommunications"]
    text = " ".join(rng.choice(words) for _ in range(60_000))[:999_999]
    n = whole(text)  # under both encoder limits, so the encoder itself can say
    assert n < 200_000 and len(text) == 999_999
    assert count_tokens(text) == n


def test_normal_texts_count_as_before() -> None:
    for text in ["", "hello world", "x" * PIECE_CHARS, log_text(PIECE_CHARS), json.dumps({"a": [1, 2, "é"]})]:
        assert count_tokens(text) == whole(text)


def test_a_text_with_no_safe_place_to_cut_still_counts_exactly_under_the_limits() -> None:
    text = "a" * 777_777  # one pre-token: every cut is unsafe, so it is counted whole
    assert count_tokens(text) == whole(text)


@pytest.mark.parametrize("chars", [1_000_000, 2_000_000, 5_000_000])
def test_texts_the_encoder_refuses_are_counted_never_raised(chars: int) -> None:
    text = log_text(chars)
    with pytest.raises(ValueError):
        whole(text)  # what used to end a run
    n = count_tokens(text)
    # the pieces are cut at safe places, so the sum of their encoder counts is the count
    assert n == sum(whole(p) for p, _ in cuts(text, PIECE_CHARS))
    assert n > 200_000


def test_a_huge_text_of_one_character_is_counted() -> None:
    assert count_tokens("=" * 1_100_000) > 0
    assert count_tokens("\n" * 1_500_000) > 0


# ----------------------------------------------------------------------- bounded counts


class Spy:
    """Characters given to the encoder, to show the work a call does."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        count, encode = tokens._count_piece, tokens._encode

        def counting(piece: str, encoding: str) -> int:
            self.chars += len(piece)
            return count(piece, encoding)

        def encoding(piece: str, encoding: str) -> list[int]:
            self.chars += len(piece)
            return encode(piece, encoding)

        monkeypatch.setattr(tokens, "_count_piece", counting)
        monkeypatch.setattr(tokens, "_encode", encoding)


def test_count_upto_is_exact_within_the_limit_and_none_beyond() -> None:
    text = log_text(30_000)
    n = whole(text)
    assert count_tokens_upto(text, n) == n
    assert count_tokens_upto(text, n + 1000) == n
    assert count_tokens_upto(text, n - 1) is None
    assert count_tokens_upto("", 0) == 0


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(TRICKY, max_size=400), limit=st.integers(0, 600))
def test_count_upto_agrees_with_the_count(parts: list[str], limit: int) -> None:
    text = "".join(parts)
    n = count_tokens(text)
    assert count_tokens_upto(text, limit) == (n if n <= limit else None)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(TRICKY, max_size=300), limit=st.integers(0, 1200))
def test_a_text_surely_within_a_limit_counts_within_it(parts: list[str], limit: int) -> None:
    text = "".join(parts)
    if surely_within(text, limit):
        assert count_tokens(text) <= limit
    # a text of at most ``limit`` UTF-8 bytes is settled without counting
    assert surely_within(text, limit) == (len(text.encode("utf-8", "surrogatepass")) <= limit)


@pytest.mark.parametrize("limit", [100, 25_000, 200_000])
def test_count_upto_reads_only_as_far_as_the_limit(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    text = log_text(5_000_000)
    spy = Spy(monkeypatch)
    assert count_tokens_upto(text, limit) is None
    # about the limit's worth of text and one piece: never the 5 MB
    assert spy.chars <= 8 * limit + PIECE_CHARS + 1024


# ----------------------------------------------------------------------- prefixes and suffixes


@pytest.mark.parametrize("budget", [0, 1, 57, 5_000, 60_000])
def test_prefix_and_suffix_fit_the_budget_and_come_close_to_it(budget: int) -> None:
    text = log_text(1_200_000)
    end, n = prefix_within(text, budget)
    assert n == count_tokens(text[:end]) and n <= budget
    assert n >= budget - 8  # only the partial pre-token at the cut is given up
    start, m = suffix_within(text, budget)
    assert m == count_tokens(text[start:]) and m <= budget
    assert m >= budget - 8


def test_prefix_and_suffix_of_a_short_text_are_all_of_it() -> None:
    assert prefix_within("hello world", 100) == (11, 2)
    assert suffix_within("hello world", 100) == (0, 2)


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(TRICKY, max_size=600), budget=st.integers(0, 300))
def test_prefix_and_suffix_never_pass_the_budget(parts: list[str], budget: int) -> None:
    text = "".join(parts)
    end, n = prefix_within(text, budget)
    assert n == count_tokens(text[:end]) <= budget
    start, m = suffix_within(text, budget)
    assert m == count_tokens(text[start:]) <= budget


def test_a_prefix_reads_only_as_far_as_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    text = log_text(5_000_000)
    spy = Spy(monkeypatch)
    prefix_within(text, 20_000)
    suffix_within(text, 20_000)
    assert spy.chars < 2 * (8 * 20_000 + PIECE_CHARS) * 3  # the recounts of the kept part included


# ----------------------------------------------------------------------- the encoder

# characters the vocabulary spells with tokens that hold part of a character
SPLIT = st.sampled_from(["\U0001d518", "𓀀", "ꙮ", "🫠", "👨\u200d👩\u200d👧", "龘", "\u0301", " ", "a", "中", "é", "\n"])


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(SPLIT | TRICKY, min_size=1, max_size=120), data=st.data())
def test_the_characters_a_run_of_tokens_spells_are_those_of_the_full_api(parts: list[str], data: st.DataObject) -> None:
    ids = reference().encode_ordinary("".join(parts))
    lo = data.draw(st.integers(0, len(ids)))
    hi = data.draw(st.integers(lo, len(ids)))
    spelt = reference().decode_bytes(ids[lo:hi]).decode("utf-8", errors="ignore")
    assert tokens._decoded_chars(ids[lo:hi], tokens.ENCODING) == len(spelt)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(SPLIT | TRICKY, max_size=300))
def test_counts_and_tokens_are_those_of_the_full_api(parts: list[str]) -> None:
    text = "".join(parts)
    assert tokens._encode(text, tokens.ENCODING) == reference().encode_ordinary(text)
    assert count_tokens(text) == whole(text)


def test_the_encoders_own_limits_are_kept() -> None:
    encoder = tokens._encoding(tokens.ENCODING)
    with pytest.raises(ValueError):
        encoder.count("a1" * 150_000)  # 300,000 tokens in 300,000 characters
    with pytest.raises(ValueError):
        encoder.count("x " * 500_000)
    # a surrogate pair is one character to the encoder: this text is then under the limit
    text = "\ud83d\ude00" * 1_000 + " " + "x" * 998_998
    assert len(text) > 1_000_000 and encoder.count(text) == whole(text)


def test_counting_loads_only_the_compiled_core() -> None:
    """bpe_openai's Python layer (its tables of every vocabulary) is never imported."""
    script = (
        "import sys\n"
        "from greenroom import count_tokens\n"
        "assert count_tokens('hello world') == 2\n"
        "print(sorted(m for m in sys.modules if m.startswith('bpe_openai')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["['bpe_openai._bindings']"]


def test_the_full_api_still_works_after_the_core_was_loaded_alone() -> None:
    script = (
        "from greenroom import count_tokens\n"
        "assert count_tokens('hello world') == 2\n"
        "import bpe_openai\n"
        "print(len(bpe_openai.get_encoding('o200k_base').encode_ordinary('hello world')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "2"


# ----------------------------------------------------------------------- JSON


def nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"leaf": [1, 2.5, None, True, "é"]}
    for i in range(depth):
        value = {"k": value, "n": i}
    return value


def test_compact_json_of_values_nested_past_the_json_modules_recursion() -> None:
    assert compact_json(nested(50)) == json.dumps(nested(50), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = compact_json(nested(5_000))  # json.dumps raises RecursionError here
    leaf = '{"leaf":[1,2.5,null,true,"é"]}'
    assert text == '{"k":' * 5_000 + leaf + "".join(f',"n":{i}}}' for i in range(5_000))
    assert count_tokens(text) > 5_000


@settings(max_examples=100, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=20,
    )
)
def test_the_loop_writes_the_same_json_as_the_json_module(value: object) -> None:
    assert compact._deep_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

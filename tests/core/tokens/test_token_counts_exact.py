"""Token counts held against exact figures made once with bpe_openai's own Python API.

greenroom counts with bpe_openai's Rust core loaded on its own (fast to load); these figures
were made with the package's full tiktoken-style API (slow to load), which greenroom used
before. Any change in the counting path that moves a count, a bounded count or a
token-bounded prefix or suffix fails here.

The texts are not stored: each is rebuilt from a recipe (a kind, a seed, a size), or read
from ``../shared/datasets`` at run time, and checked against a digest before it is counted.
To add a recipe, add it to ``RECIPES`` and regenerate the figures (only with bpe_openai's
full API, which the script uses):

    PYTHONPATH=tests .venv/bin/python tests/core/tokens/test_token_counts_exact.py
"""

# ruff: noqa: RUF001 (texts in many scripts are the point here)

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.gr_testutil import DATASETS

from greenroom.tokens import counting as tokens
from greenroom.tokens.counting import count_tokens, count_tokens_upto, prefix_within, suffix_within

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "token_counts.json"
BUDGETS = (0, 1, 37, 4_000)


def _words(rng: random.Random, pool: list[str], chars: int, sep: Callable[[random.Random], str]) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(pool) + sep(rng)
        out.append(word)
        size += len(word)
    return "".join(out)[:chars]


def prose(seed: int, chars: int) -> str:
    pool = [
        "the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "tool", "returns", "repository",
        "internationalization", "pull", "request's", "don't", "they'll", "Search", "GitHub", "issues",
        "résumé", "naïve", "coöperate", "1999", "3.14159", "e.g.", "(optional)", "URL", "JSON-RPC",
    ]  # fmt: skip
    marks = [" ", " ", " ", " ", ", ", ". ", "; ", ": ", "! ", "? ", ".\n\n", " -- ", "\n"]
    return _words(random.Random(seed), pool, chars, lambda r: r.choice(marks))


def code(seed: int, chars: int) -> str:
    rng = random.Random(seed)
    names = ["items", "count", "self", "_cache", "parseHTTPResponse", "max_retries", "x1", "i", "dataFrame"]
    lines = [
        "def {a}({b}, {c}=None):", "    return {a}[{n}] + {b}", "if {a} is not None and {b} >= {n}:",
        "        {a}.append({{'{b}': {n}, \"{c}\": [{n}, {n}]}})", "for {a} in range({n}):",
        "    # {b}: why {c} matters", "\t{a} = {b} // {n}  # tab-indented", "class {a}({b}):",
        "    raise ValueError(f\"{{{a}!r}} is not {b}\")", "{a} = lambda {b}: {b} ** {n}", "",
        "const {a} = async ({b}) => {{ await {c}?.({n}); }};", "    SELECT {a}, {b} FROM {c} WHERE id = {n};",
    ]  # fmt: skip
    out: list[str] = []
    size = 0
    while size < chars:
        picks = {k: rng.choice(names) for k in "abc"}
        line = rng.choice(lines).format(n=rng.randint(0, 100_000), **picks)
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:chars]


def cjk(seed: int, chars: int) -> str:
    rng = random.Random(seed)
    common = list("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学")
    rare = [chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(400)]  # many of these are byte-split tokens
    other = ["。", "，", "、", "「", "」", " ", "\n", "カタカナ", "ひらがな", "한국어", "테스트", "ｆｕｌｌ", "123"]
    pool = common * 3 + rare + other
    return _words(rng, pool, chars, lambda r: "")


def emoji(seed: int, chars: int) -> str:
    pool = [
        "🙂", "😀", "👍", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇫🇷", "🇯🇵", "🫠", "🫡", "🧑\u200d💻",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𓀀", "𓀁", "ꙮ", "e\u0301", "n\u0303", "\u200b", "\u00a0", " ", "ok", "\n", "☕", "✔️", "™",
    ]  # fmt: skip
    return _words(random.Random(seed), pool, chars, lambda r: r.choice(["", "", " "]))


def mixed(seed: int, chars: int) -> str:
    """What the encoder's pre-tokenizer treats differently, lone and paired surrogates included."""
    pool = [
        "a", "B", "é", "ß", "中", "🙂", "'", "\u2019", "/", "=", "-", "_", ".", "\u0301", "\ud800", "\udfff",
        "\ud83d\ude00", "\r", "\n", "\r\n", "\x1c", " ", "  ", "\t", "\u00a0", "1", "23", "4567", "'s", "'LL",
        "。", "\uff0c", "ABC", "abc", "Déjà", "//", "\\n", "{\"k\":", "}",
    ]  # fmt: skip
    return _words(random.Random(seed), pool, chars, lambda r: "")


def log(seed: int, chars: int) -> str:
    pool = [
        "2024-05-01T12:00:00.123Z", "INFO", "WARN", "ERROR", "GET", "/api/v1/items?page=2", "status=200",
        "latency_ms=12.5", "user_id=12345", '{"ok":true}', "connection", "reset", "by", "peer", "it's",
        "naïve", "你好，世界。", "🙂", "\t", "Traceback", "x/y/z.py:42", "1,234.5",
    ]  # fmt: skip
    return _words(random.Random(seed), pool, chars, lambda r: r.choice([" ", " ", "\n"]))


def letters_and_digits(seed: int, chars: int) -> str:
    """A token every character or two: over the encoder's 200,000 tokens well under its
    1,000,000 characters."""
    rng = random.Random(seed)
    return "".join(rng.choice("abcxyz") + rng.choice("0123456789") for _ in range(chars // 2 + 1))[:chars]


RECIPES: dict[str, Callable[[int, int], str]] = {
    "prose": prose,
    "code": code,
    "cjk": cjk,
    "emoji": emoji,
    "mixed": mixed,
    "log": log,
    "letters_and_digits": letters_and_digits,
}

# (kind, seed, characters): short texts, texts over one piece (50,000 characters), texts
# over 200,000 tokens, and texts over 1,000,000 characters (only ever counted in pieces)
SIZES: list[tuple[str, int, int]] = [
    ("prose", 1, 40), ("prose", 2, 5_000), ("prose", 3, 120_000), ("prose", 4, 1_300_000),
    ("code", 1, 300), ("code", 2, 20_000), ("code", 3, 250_000),
    ("cjk", 1, 60), ("cjk", 2, 8_000), ("cjk", 3, 70_000), ("cjk", 4, 400_000),
    ("emoji", 1, 50), ("emoji", 2, 6_000), ("emoji", 3, 90_000), ("emoji", 4, 350_000),
    ("mixed", 1, 200), ("mixed", 2, 9_000), ("mixed", 3, 60_000),
    ("log", 1, 2_000), ("log", 2, 999_999), ("log", 3, 2_500_000),
    ("letters_and_digits", 1, 600_000),
]  # fmt: skip

DATASET_NAMES = ("github_mcp", "metatool", "seal_tools")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def schemas(name: str) -> list[str]:
    """Each tool of a real catalog as the compact JSON a tools array carries."""
    lines = (DATASETS / name / "tools.jsonl").read_text(encoding="utf-8").splitlines()
    tools = [json.loads(line) for line in lines if line.strip()]
    return [json.dumps(t, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for t in tools]


def texts() -> Iterator[tuple[str, Callable[[], str | list[str]]]]:
    """Every case's key and how to build its text (a list: many texts, counted one by one)."""
    for kind, seed, chars in SIZES:
        yield f"{kind}/{seed}/{chars}", lambda k=kind, s=seed, c=chars: RECIPES[k](s, c)
    for name in DATASET_NAMES:
        yield f"dataset/{name}/schemas", lambda n=name: schemas(n)
        yield f"dataset/{name}/file", lambda n=name: (DATASETS / n / "tools.jsonl").read_text(encoding="utf-8")


def figures(built: str | list[str]) -> dict[str, Any]:
    """What is held for a text: its count, and its best prefix and suffix at a few budgets;
    for many texts, their total and a digest of the list of their counts."""
    if isinstance(built, list):
        counts = [count_tokens(t) for t in built]
        return {"digest": digest("\n".join(built)), "total": sum(counts), "counts": digest(json.dumps(counts))}
    held: dict[str, Any] = {"digest": digest(built), "count": count_tokens(built)}
    held["prefix"] = {str(b): list(prefix_within(built, b)) for b in BUDGETS}
    held["suffix"] = {str(b): list(suffix_within(built, b)) for b in BUDGETS}
    return held


FIGURES: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}


def build(key: str) -> str | list[str]:
    recipe = dict(texts())[key]
    if key.startswith("dataset/") and not (DATASETS / key.split("/")[1]).exists():
        pytest.skip(f"{DATASETS} not present")
    built = recipe()
    held = FIGURES[key]["digest"]
    got = digest("\n".join(built) if isinstance(built, list) else built)
    assert got == held, f"the text of {key} is not the one counted (a recipe or a dataset changed): regenerate"
    return built


def test_every_case_has_figures() -> None:
    assert sorted(FIGURES) == sorted(key for key, _ in texts())


@pytest.mark.parametrize("key", [key for key, _ in texts()])
def test_counts_prefixes_and_suffixes_are_the_stored_exact_figures(key: str) -> None:
    built = build(key)
    assert figures(built) == FIGURES[key]


@pytest.mark.parametrize("key", [f"{k}/{s}/{c}" for k, s, c in SIZES if c <= 400_000])
def test_bounded_counts_agree_with_the_stored_counts(key: str) -> None:
    built = build(key)
    assert isinstance(built, str)
    n = FIGURES[key]["count"]
    assert count_tokens_upto(built, n) == n
    assert count_tokens_upto(built, n - 1) is None


class _FullApi:
    """bpe_openai's full Python API in the place of greenroom's encoder: the path the
    figures were made with (and the one greenroom used before)."""

    def __init__(self) -> None:
        import bpe_openai

        self.encoding = bpe_openai.get_encoding(tokens.ENCODING)

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return list(self.encoding.encode_ordinary(text))

    def decoded_chars(self, ids: list[int]) -> int:
        return len(self.encoding.decode_bytes(ids).decode("utf-8", errors="ignore"))


def regenerate() -> None:
    full = _FullApi()
    tokens._encoding = lambda name: full  # type: ignore[assignment,misc,return-value]
    out: dict[str, dict[str, Any]] = {}
    for key, recipe in texts():
        built = recipe()
        out[key] = figures(built)
        if isinstance(built, str) and len(built) < 1_000_000 and out[key]["count"] <= 200_000:
            assert out[key]["count"] == full.count(built)  # counted whole by the encoder itself
        print(key, {k: v for k, v in out[key].items() if k in ("count", "total")}, file=sys.stderr)
    rows = [f"{json.dumps(key)}: {json.dumps(out[key], sort_keys=True)}" for key in sorted(out)]
    FIXTURE.write_text("{\n" + ",\n".join(rows) + "\n}\n")


if __name__ == "__main__":
    regenerate()

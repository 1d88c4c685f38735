"""Token counts: exact o200k BPE counts (offline), and the chars/4 heuristic where a
published formula asks for it."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from greenroom.tools import ToolDescriptor

ENCODING = "o200k_base"


@functools.lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(name)


def count_tokens(text: str, encoding: str = ENCODING) -> int:
    """Exact token count of ``text`` under an OpenAI encoding."""
    if not text:
        return 0
    return len(_encoding(encoding).encode_ordinary(text))


def compact_json(value: Any) -> str:
    """The byte-stable JSON form used for hashing and counting."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_json(tool: ToolDescriptor) -> str:
    return compact_json(tool.to_json())


@functools.lru_cache(maxsize=65536)
def _tool_tokens(text: str) -> int:
    return count_tokens(text)


def tool_tokens(tool: ToolDescriptor) -> int:
    """Tokens of one tool definition as sent in a tools array (cached per definition)."""
    return _tool_tokens(tool_json(tool))


def tools_tokens(tools: Iterable[ToolDescriptor]) -> int:
    return sum(tool_tokens(t) for t in tools)


def chars4(text: str) -> int:
    """The character heuristic: len/4, used where a reference formula is defined by it."""
    return len(text) // 4


def parameters_json(parameters: Mapping[str, Any]) -> str:
    return json.dumps(parameters, separators=(",", ":"), ensure_ascii=False)

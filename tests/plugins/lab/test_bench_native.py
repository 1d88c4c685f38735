"""``greenroom bench sessions`` prices the native strategy as OpenAI's tool search runs it
(``native-openai``): from the OpenAI provider's own request bodies, at OpenAI's prices
only, with one prefix over the session and a smaller first prefix than dispatch's on a
catalog of one server."""

from __future__ import annotations

from typing import Any

import pytest
from support.gr_testutil import DATASETS

from greenroom_lab.bench.replay import NATIVE, compare, load_tools

CATALOG = DATASETS / "github_mcp" / "tools.jsonl"

pytestmark = pytest.mark.skipif(not CATALOG.exists(), reason="../shared/datasets not present")


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return compare(load_tools(CATALOG), steps=8, discoveries=3)


def test_native_openai_is_billed_at_openai_prices_with_one_prefix(results: dict[str, Any]) -> None:
    native, dispatch = results[NATIVE], results["dispatch"]
    assert list(native["prices"]) == ["openai:gpt-5"]
    assert native["steps"] == dispatch["steps"] and native["prefixes"] == 1
    # the deferred tools are one namespace the model reads by name: less than dispatch's listing
    assert native["input_tokens"] < dispatch["input_tokens"]
    assert native["prices"]["openai:gpt-5"]["cost"] < dispatch["prices"]["openai:gpt-5"]["cost"]

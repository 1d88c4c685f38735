"""A query word is lowercased and stripped of punctuation at both ends; most words have
none to strip and skip the regular expression, with the same result."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from greenroom.search import normalize_term

_STRIP = re.compile(r"^[^\w]+|[^\w]+$")


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(list("aZé_-.?!中𝄞İ1'\"ß\u0301 ")) | st.characters(), max_size=12))
def test_a_term_is_normalised_as_the_pattern_says(word: str) -> None:
    assert normalize_term(word) == _STRIP.sub("", word.lower())


def test_punctuation_at_the_ends_goes_and_inside_stays() -> None:
    assert [normalize_term(w) for w in ["issue?", "(GitHub)", "e-mail", "_private_", "...", "Ünï"]] == [
        "issue",
        "github",
        "e-mail",
        "_private_",
        "",
        "ünï",
    ]

"""Every ranking test starts with no shared corpora and an empty index store of its own,
so what one test built is never what another reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def fresh_index_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    from greenroom_ranking.cache import forget

    home = tmp_path_factory.mktemp("greenroom-home")
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    forget()
    yield home
    forget()

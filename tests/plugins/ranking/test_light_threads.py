"""The embedder's and the reranker's one-BLAS-thread limit: held inside, restored after."""

from __future__ import annotations

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from greenroom_ranking.light.threads import OneBlasThread  # noqa: E402


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_count_restored_after() -> None:
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy's BLAS is loaded
    before = _blas_threads()
    if not before:
        pytest.skip("numpy is built without a BLAS threadpool threadpoolctl knows")
    with OneBlasThread().held():
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before

"""``OneBlasThread``: numpy's BLAS held to one thread while a query is encoded or scored.

A query's matrix products are small: on a busy 2-core machine, BLAS threads cost more in
synchronisation than they save (the embedder's p95 was 10-30x worse with two). The limit
is taken per call and restored at once, so catalog batches and the host keep their
threads. Without ``threadpoolctl`` (an extra's dependency) nothing is limited.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class OneBlasThread:
    """A context manager factory: ``with limit.held(): ...`` runs on one BLAS thread."""

    def __init__(self) -> None:
        self._controller: Any = None
        with contextlib.suppress(ImportError):
            from threadpoolctl import ThreadpoolController

            self._controller = ThreadpoolController()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if self._controller is None:
            yield
            return
        with self._controller.limit(limits=1, user_api="blas"):
            yield

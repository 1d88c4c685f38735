"""The cyclic garbage collector paused while a large catalog or listing is read."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector paused (for the whole process) for the duration:
    reading 100,000 tools makes millions of objects, none of them garbage, and the
    collections they trigger scan them all again and again (more than half the time of
    a read). What is freed meanwhile goes by reference counting, as ever; the collector
    runs again afterwards, unless it was off already."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

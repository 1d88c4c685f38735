"""matplotlib for the lab's ``--plot`` options: optional (the ``bench`` extra), asked for
before any work, and loaded headless only when a plot is drawn."""

from __future__ import annotations

import importlib.util
from typing import Any

PLOT_NEEDS = "--plot needs matplotlib, which is not installed: pip install 'greenroom[bench]'"


def plot_unavailable() -> str | None:
    """Why ``--plot`` cannot work here, or None; asked before any work, without importing matplotlib."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else PLOT_NEEDS


def pyplot() -> Any:
    """``matplotlib.pyplot`` drawing to files only (no display needed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # asked before the work ran; kept for a broken install
        raise RuntimeError(PLOT_NEEDS) from exc
    return plt
